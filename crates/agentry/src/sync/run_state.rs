//! The scheduling state of one queue served by a pool of threads: it guarantees that the
//! queue is run by at most one thread at a time and that no pushed item is left unscheduled.
//!
//! # Ground rules
//!
//! States: `IDLE` (not queued, not running), `SCHEDULED` (in a ready queue, not running),
//! `RUNNING` (a thread is taking items), `NOTIFIED` (running, and an item was pushed since).
//!
//! - A producer pushes its item first, then calls [`RunState::notify`]: `IDLE → SCHEDULED`
//!   (and the producer must put the queue into a ready queue), `RUNNING → NOTIFIED`, anything
//!   else unchanged. At most one producer wins `IDLE → SCHEDULED`, so a queue is never in two
//!   ready queues at once.
//! - `notify` is a read-modify-write even when it changes nothing (it writes the state it
//!   read). Otherwise a producer that finds `SCHEDULED` would not synchronise with the thread
//!   that later starts the queue, which could miss the item, stop, and strand it (loom found
//!   this; on x86 the producer's link store may still sit in its store buffer).
//! - A producer that will run the queue itself next (a pool worker that keeps the queue in its
//!   own `next` slot, `disp/thread_pool/pool.rs`) calls [`RunState::claim`] instead of
//!   `notify`: `IDLE → RUNNING` (it holds the queue from then on, no ready queue involved),
//!   `RUNNING → NOTIFIED`, anything else unchanged — the same read-modify-write, so it
//!   synchronises with every other producer as `notify` does. If it later hands the queue
//!   to others instead of running it, it calls [`RunState::pause`] and puts it into a ready
//!   queue, as a running thread whose budget is used up does.
//! - The thread that takes the queue from a ready queue calls [`RunState::start`]
//!   (`SCHEDULED → RUNNING`, a compare-and-swap: it fails on a queue that is not scheduled);
//!   it alone pops items while the queue is running.
//! - When it finds no more items it calls [`RunState::stop`]: `RUNNING → IDLE` unless a push
//!   happened meanwhile (`NOTIFIED → SCHEDULED`, and it must put the queue back into a ready
//!   queue). An item whose push completed after the thread's last look is therefore either
//!   seen by a `notify` that finds `IDLE` (and schedules) or turns `RUNNING` into `NOTIFIED`
//!   (and the thread reschedules).
//! - When it stops with items left (its budget used up) it calls [`RunState::pause`]
//!   (`→ SCHEDULED`) and puts the queue back.
//! - Every transition the holder makes is a read-modify-write (`pause` and the `NOTIFIED →
//!   SCHEDULED` of `stop` are swaps, not stores), so all of them and the producers' `notify`
//!   and `claim` form one chain: a producer's `RUNNING → NOTIFIED` can never land after the
//!   holder's `→ SCHEDULED` and leave a queue in a ready queue that `start` refuses (loom found
//!   that with plain stores, in the model of a claimed queue handed to a ready queue).

use super::atomic::{AtomicU8, Ordering};

const IDLE: u8 = 0;
const SCHEDULED: u8 = 1;
const RUNNING: u8 = 2;
const NOTIFIED: u8 = 3;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct RunState(AtomicU8);

impl RunState {
    pub(crate) fn new() -> Self {
        RunState(AtomicU8::new(IDLE))
    }

    /// After a push. True if the caller must put the queue into a ready queue.
    #[inline]
    pub(crate) fn notify(&self) -> bool {
        self.after_push(SCHEDULED)
    }

    /// After a push by a thread that will run the queue itself next. True if it holds the
    /// queue now (`IDLE → RUNNING`): it must run it, or [`pause`](Self::pause) it and put it
    /// into a ready queue.
    #[inline]
    pub(crate) fn claim(&self) -> bool {
        self.after_push(RUNNING)
    }

    /// After a push: an idle queue becomes `from_idle`, a running one `NOTIFIED`, any other
    /// state stays. True if the queue was idle.
    #[inline(always)]
    fn after_push(&self, from_idle: u8) -> bool {
        let next = |state| match state {
            IDLE => from_idle,
            RUNNING => NOTIFIED,
            same => same,
        };
        let previous = match self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| Some(next(s)))
        {
            Ok(previous) | Err(previous) => previous,
        };
        previous == IDLE
    }

    /// The queue was taken from a ready queue: `SCHEDULED → RUNNING`. False (and nothing
    /// changed) if it was not scheduled — the caller must not take items then.
    pub(crate) fn start(&self) -> bool {
        self.0
            .compare_exchange(SCHEDULED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// No more items were found. True if the caller must put the queue back into a ready
    /// queue (an item was pushed meanwhile).
    pub(crate) fn stop(&self) -> bool {
        match self
            .0
            .compare_exchange(RUNNING, IDLE, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => false,
            Err(actual) => {
                debug_assert_eq!(actual, NOTIFIED, "invariant: only the running thread stops");
                // A swap, not a store (ground rules).
                self.0.swap(SCHEDULED, Ordering::AcqRel);
                true
            }
        }
    }

    /// Items are left but the thread's budget is used up, or a claimed queue is handed to
    /// other threads: the caller puts the queue into a ready queue.
    pub(crate) fn pause(&self) {
        // A swap, not a store (ground rules).
        self.0.swap(SCHEDULED, Ordering::AcqRel);
    }
}
