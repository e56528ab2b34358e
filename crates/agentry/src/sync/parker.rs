//! Sleep/wake protocol between one consumer thread and any number of producers.
//!
//! # Ground rules
//!
//! - The consumer registers itself once ([`Parker::register_consumer`]) before it ever sleeps.
//! - To sleep, the consumer stores `sleeping = true` (`SeqCst`), re-checks its queues with a
//!   `SeqCst` read, and parks only if they are still empty ([`Parker::park`]).
//! - A producer first publishes its work with a `SeqCst` read-modify-write (the queue's `swap`),
//!   then reads `sleeping` (`SeqCst`). In the single total order of `SeqCst` operations either
//!   the consumer's re-check sees the work, or the producer sees `sleeping == true`: a wake-up
//!   is never lost.
//! - Only the producer that swaps `sleeping` from `true` to `false` unparks, so a batch of
//!   sends costs at most one wake-up, and a running consumer costs producers one plain load.
//! - `std::thread::park` keeps a token: an unpark that lands before the park is not lost.

use super::UnsafeCell;
#[cfg(not(loom))]
use super::UnsafeCellExt as _;
use super::atomic::{AtomicBool, Ordering};
use super::thread::{self, Thread};

/// One consumer's sleeping flag and thread handle.
pub(crate) struct Parker {
    sleeping: AtomicBool,
    /// Written once by the consumer before its first sleep; read by producers only after they
    /// observed `sleeping == true`, which the consumer stored after writing this.
    consumer: UnsafeCell<Option<Thread>>,
}

// SAFETY: `consumer` is written once before any reader can observe `sleeping == true`
// (see the ground rules); afterwards it is only read. `Thread` is Send + Sync.
unsafe impl Sync for Parker {}
// SAFETY: all fields are owned values that may move between threads.
unsafe impl Send for Parker {}

impl Parker {
    /// A parker with no consumer registered yet.
    pub(crate) fn new() -> Self {
        Parker {
            sleeping: AtomicBool::new(false),
            consumer: UnsafeCell::new(None),
        }
    }

    /// Records the calling thread as the consumer.
    ///
    /// # Safety
    ///
    /// Must be called exactly once, by the consumer thread, before its first [`park`](Self::park).
    pub(crate) unsafe fn register_consumer(&self) {
        // SAFETY: no producer reads `consumer` before the consumer's first `sleeping = true`.
        self.consumer
            .with_mut(|c| unsafe { *c = Some(thread::current()) });
    }

    /// Parks the consumer unless `still_empty` (which must read the queues with `SeqCst`)
    /// finds work after the sleeping flag is raised. Returns after a wake-up (possibly
    /// spurious); the caller re-checks its queues.
    pub(crate) fn park(&self, still_empty: impl FnOnce() -> bool) {
        self.sleeping.store(true, Ordering::SeqCst);
        if still_empty() {
            thread::park();
        }
        self.sleeping.store(false, Ordering::Relaxed);
    }

    /// Wakes the consumer if it is (about to be) asleep. Call after publishing work with a
    /// `SeqCst` read-modify-write.
    #[inline]
    pub(crate) fn unpark(&self) {
        if self.sleeping.load(Ordering::SeqCst) && self.sleeping.swap(false, Ordering::AcqRel) {
            self.consumer.with(|c| {
                // SAFETY: `sleeping` was true, so the consumer registered itself before; the
                // AcqRel swap synchronises with its SeqCst store, making the write visible.
                if let Some(t) = unsafe { &*c } {
                    t.unpark();
                }
            });
        }
    }
}
