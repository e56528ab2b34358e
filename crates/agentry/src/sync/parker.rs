//! Sleep/wake protocol between one consumer thread and any number of producers.
//!
//! # Ground rules
//!
//! - The consumer registers itself once ([`Parker::register_consumer`]) before it ever sleeps.
//! - To sleep, the consumer stores `sleeping = true`, issues a `SeqCst` fence, re-checks its
//!   queues, and parks only if they are still empty ([`Parker::park`]).
//! - A producer first publishes its work, then issues a `SeqCst` fence and reads `sleeping`
//!   ([`Parker::unpark`]). The two fences are ordered one way or the other in the single
//!   total order of `SeqCst` fences: either the consumer's re-check sees the work, or the
//!   producer sees `sleeping == true`. A wake-up is never lost. (Fences rather than `SeqCst`
//!   accesses: the fence form is what loom can model-check, see `loom_tests.rs`; it costs the
//!   producer one `mfence`, about 2.5 ns, measured.)
//! - Only the producer that swaps `sleeping` from `true` to `false` unparks, so a batch of
//!   sends costs at most one wake-up, and a running consumer costs producers one plain load.
//! - `std::thread::park` keeps a token: an unpark that lands before the park is not lost.
//! - A producer that has *chosen* a consumer to look for work (the thread pool removes it
//!   from its idle list and counts it as searching) wakes it with
//!   [`Parker::unpark_chosen`], which unparks the thread even if its sleeping flag is not up
//!   yet; the token then ends its next park. (With `unpark`, a choice made just before the
//!   consumer raised its flag was skipped; if the work went to another thread meanwhile, the
//!   consumer slept while counted as searching, and no later producer woke anyone — a lost
//!   wake-up found by a stress test and reproduced by loom.)
//! - A consumer that blocks somewhere else (an event loop in `epoll_wait`) uses a parker with
//!   a *wake callback* instead of a thread: it calls [`Parker::announce_sleep`] before
//!   blocking and [`Parker::end_sleep`] after, and producers run the callback (which must
//!   make the blocking call return, and keep that effect if it happens before the call —
//!   as an eventfd write does) instead of `unpark`.

use super::UnsafeCell;
#[cfg(not(loom))]
use super::UnsafeCellExt;
use super::atomic::{AtomicBool, Ordering, fence};
use super::thread::{self, Thread};

/// One consumer's sleeping flag and thread handle (or wake callback).
pub(crate) struct Parker {
    sleeping: AtomicBool,
    /// Written once by the consumer before its first sleep; read by producers only after they
    /// observed `sleeping == true`, which the consumer stored after writing this.
    consumer: UnsafeCell<Option<Thread>>,
    /// Set at construction for a consumer that blocks in an event loop.
    callback: Option<WakeFn>,
}

/// Makes an event loop's blocking call return (see the ground rules).
pub(crate) type WakeFn = Box<dyn Fn() + Send + Sync>;

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
            callback: None,
        }
    }

    /// A parker whose consumer blocks in an event loop that `wake` interrupts.
    pub(crate) fn with_callback(wake: WakeFn) -> Self {
        Parker {
            sleeping: AtomicBool::new(false),
            consumer: UnsafeCell::new(None),
            callback: Some(wake),
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

    /// Parks the consumer unless `still_empty` finds work after the sleeping flag is raised.
    /// Returns after a wake-up (possibly spurious); the caller re-checks its queues.
    pub(crate) fn park(&self, still_empty: impl FnOnce() -> bool) {
        if self.announce_sleep(still_empty) {
            thread::park();
            self.end_sleep();
        }
    }

    /// The consumer is about to block: raises the sleeping flag, then re-checks with
    /// `still_empty`. True if it may block (producers will wake it); false if work arrived
    /// (the flag is lowered again).
    pub(crate) fn announce_sleep(&self, still_empty: impl FnOnce() -> bool) -> bool {
        // Release: a producer that sees `true` (its swap acquires) also sees `consumer`. Both
        // writes are read-modify-writes so that every write to the flag sits in one total order
        // with the producers' swaps (it is also what loom can check).
        self.sleeping.swap(true, Ordering::AcqRel);
        fence(Ordering::SeqCst);
        if still_empty() {
            return true;
        }
        self.end_sleep();
        false
    }

    /// Wakes the consumer even if it has not announced its sleep yet: the thread's park token
    /// then makes its next park return at once. For a producer that has *chosen* this
    /// consumer and counts on it to look for work (the thread pool's idle list): with
    /// [`unpark`](Self::unpark), a wake-up that arrives before the consumer raised its
    /// sleeping flag is skipped, and if the work it was meant for is taken by another thread
    /// meanwhile, the consumer sleeps while still counted as searching — every later producer
    /// then trusts it and wakes nobody.
    pub(crate) fn unpark_chosen(&self) {
        // The producer chose the consumer from a list it entered under a lock, after it had
        // registered: that lock orders the registration before this read.
        self.wake();
    }

    /// The consumer woke up (or decided not to block).
    pub(crate) fn end_sleep(&self) {
        self.sleeping.swap(false, Ordering::AcqRel);
    }

    /// Wakes the consumer if it is (about to be) asleep. Call after publishing work.
    #[inline]
    pub(crate) fn unpark(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) && self.sleeping.swap(false, Ordering::AcqRel) {
            // `sleeping` was true, so the consumer registered itself before; the AcqRel swap
            // synchronises with its store, making the registration visible.
            self.wake();
        }
    }

    /// Runs the wake callback, or unparks the consumer thread. Callers make sure the
    /// consumer's registration happened before (see `unpark` and `unpark_chosen`).
    fn wake(&self) {
        if let Some(wake) = &self.callback {
            wake();
            return;
        }
        self.consumer.with(|c| {
            // SAFETY: `consumer` is written once, by `register_consumer`, before the consumer
            // can be seen sleeping or be chosen; both callers synchronise with that write
            // (contract above), and it is only read afterwards.
            if let Some(t) = unsafe { &*c } {
                t.unpark();
            }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
