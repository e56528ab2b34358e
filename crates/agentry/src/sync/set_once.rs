//! `SetOnce<T>`: a value set at most once, by any thread, then read by any thread.
//!
//! What an agent's binding needs from `OnceLock` without what it pays for: `OnceLock::set`
//! goes through `Once`'s general machinery (an initialising closure, waiters parked while it
//! runs, a second read-modify-write to wake them): callgrind counts about 100 instructions
//! more per registered agent than this type makes. A binding is set once by the registering thread and only *read* meanwhile:
//! nobody needs to wait for it.
//!
//! # Ground rules
//!
//! - States: `EMPTY`, `WRITING` (a setter owns the value's storage), `SET`.
//! - A setter moves `EMPTY → WRITING` with a compare-and-swap (a second setter fails and gets
//!   its value back), writes the value, then stores `SET` with `Release`.
//! - A reader loads the state with `Acquire` and reads the value only if it is `SET`: the value
//!   was written before, and is never written again. A reader that comes while the setter
//!   writes sees nothing (`None`), as before the set.
//! - Dropping drops the value if it is set (`&mut self`: no setter or reader is left).

use super::UnsafeCell;
#[cfg(not(loom))]
use super::UnsafeCellExt;
use super::atomic::{AtomicU8, Ordering};
use std::fmt;
use std::mem::MaybeUninit;

const EMPTY: u8 = 0;
const WRITING: u8 = 1;
const SET: u8 = 2;

/// See the module docs.
pub(crate) struct SetOnce<T> {
    state: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written by one thread (the setter that won `EMPTY → WRITING`) before
// it is published with `Release`, and only read after (ground rules): sharing a `SetOnce`
// shares `&T` (so `T: Sync`) and lets another thread move a `T` in (so `T: Send`).
unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}

impl<T> SetOnce<T> {
    pub(crate) fn new() -> Self {
        SetOnce {
            state: AtomicU8::new(EMPTY),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Sets the value; gives it back if it was set (or is being set) already.
    pub(crate) fn set(&self, value: T) -> Result<(), T> {
        if self
            .state
            .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(value);
        }
        // SAFETY: `WRITING` makes this thread the only one to touch the value: readers read it
        // only once it is `SET`, other setters fail above (ground rules).
        self.value.with_mut(|p| unsafe { (*p).write(value) });
        self.state.store(SET, Ordering::Release);
        Ok(())
    }

    /// The value, if it is set.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        if self.state.load(Ordering::Acquire) != SET {
            return None;
        }
        // SAFETY: `SET`, read with `Acquire`, pairs with the setter's `Release`: the value is
        // written, and never written again while `self` lives (ground rules).
        Some(self.value.with(|p| unsafe { (*p).assume_init_ref() }))
    }
}

impl<T> Default for SetOnce<T> {
    fn default() -> Self {
        SetOnce::new()
    }
}

impl<T> Drop for SetOnce<T> {
    fn drop(&mut self) {
        if self.state.load(Ordering::Relaxed) == SET {
            // SAFETY: `&mut self`: nobody else holds it; `SET` says the value is written, and it
            // is dropped once, here.
            self.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for SetOnce<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SetOnce").field(&self.get()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SetOnce;
    use std::sync::Arc;

    #[test]
    fn set_once_then_refused_and_read_by_any_thread() {
        let cell = Arc::new(SetOnce::new());
        assert_eq!(cell.get(), None);
        assert_eq!(cell.set(String::from("first")), Ok(()));
        assert_eq!(
            cell.set(String::from("second")),
            Err(String::from("second"))
        );
        let reader = {
            let cell = Arc::clone(&cell);
            std::thread::spawn(move || cell.get().cloned())
        };
        assert_eq!(reader.join().expect("reader"), Some(String::from("first")));
    }

    #[test]
    fn dropping_drops_a_set_value_once_and_an_empty_one_not_at_all() {
        let marker = Arc::new(());
        let set = SetOnce::new();
        assert!(set.set(Arc::clone(&marker)).is_ok());
        let empty: SetOnce<Arc<()>> = SetOnce::new();
        assert_eq!(Arc::strong_count(&marker), 2);
        drop(set);
        drop(empty);
        assert_eq!(Arc::strong_count(&marker), 1);
    }
}
