//! Synchronisation building blocks: the only lock-free code of the crate.
//!
//! Every atomic here comes through [`atomic`] / [`thread`] so that the same code is
//! model-checked by `loom`: `RUSTFLAGS="--cfg loom" cargo test -p agentry --lib --release sync`
//! (under `cfg(loom)` the crate compiles only this module and its model tests).

pub(crate) mod blocks;
pub(crate) mod mpsc;
pub(crate) mod parker;
pub(crate) mod run_state;
pub(crate) mod set_once;

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(not(loom))]
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
    };
}
#[cfg(loom)]
pub(crate) mod atomic {
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
    };
}

#[cfg(not(loom))]
pub(crate) mod thread {
    pub(crate) use std::thread::{Thread, current, park, yield_now};
}
#[cfg(loom)]
pub(crate) mod thread {
    pub(crate) use loom::thread::{Thread, current, park, yield_now};
}

#[cfg(not(loom))]
pub(crate) use std::cell::UnsafeCell;

/// loom's `UnsafeCell` has a closure-based API; this shim gives std's the same shape.
#[cfg(not(loom))]
pub(crate) trait UnsafeCellExt<T> {
    fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R;
    fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R;
}
#[cfg(not(loom))]
impl<T> UnsafeCellExt<T> for UnsafeCell<T> {
    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.get())
    }
    #[inline(always)]
    fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.get())
    }
}
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
