//! The queue of one agent (or one coop, with FIFO per coop) served by a thread pool.
//!
//! Senders push into a lock-free MPSC queue and count the demands with a raised event
//! priority they push (`raised_queued`). While that count is 0 and nothing waits in `sorted`,
//! the pool thread that runs the queue pops the MPSC queue directly. Otherwise it first moves
//! what is waiting into `sorted` (`disp/event_lanes.rs`), so the highest event priority runs
//! first, and pops from there until `sorted` is empty again. A finish demand is `P0`: it runs
//! after every raised demand pushed before it, which the move has already taken in.

use super::pool::Pool;
use crate::demand::Demand;
use crate::disp::event_lanes::EventLanes;
use crate::slab::AgentSlab;
use crate::sync::mpsc::{MpscQueue, SMALL_BLOCK_CAP};
use crate::sync::run_state::RunState;
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Demands moved from the MPSC queue into `sorted` per pop, at most.
const SORT_BATCH: usize = 256;

/// Demands of one agent (or coop) plus its run state (`sync/run_state.rs`): a pool thread
/// runs it only while it holds it, so its agents never run on two threads at once.
pub(crate) struct AgentQueue {
    /// Small blocks: a pool holds one queue per agent (or coop), mostly short.
    demands: MpscQueue<Demand, SMALL_BLOCK_CAP>,
    /// Demands with a raised event priority pushed into `demands` and not taken out yet
    /// (counted before the push, so never below the true number).
    raised_queued: AtomicUsize,
    /// Demands taken out of `demands`, by event priority (only the thread that holds the run
    /// state touches it; allocated when the first raised demand is seen).
    sorted: UnsafeCell<Option<Box<EventLanes>>>,
    pub(super) state: RunState,
    pub(super) pool: Arc<Pool>,
}

// SAFETY: `sorted` is touched only by the pool thread that holds the run state (`pop`'s
// contract) or through `&mut self`; the run state's transitions order one holder's accesses
// before the next one's. Everything else is `Sync` on its own.
unsafe impl Sync for AgentQueue {}

impl AgentQueue {
    pub(super) fn new(pool: Arc<Pool>) -> Self {
        AgentQueue {
            demands: MpscQueue::new(),
            raised_queued: AtomicUsize::new(0),
            sorted: UnsafeCell::new(None),
            state: RunState::new(),
            pool,
        }
    }

    /// Queues a demand and schedules the queue if it was idle; gives the demand back if the
    /// pool is shut down.
    #[inline]
    pub(crate) fn push(self: &Arc<Self>, demand: Demand) -> Result<(), Demand> {
        if self.pool.is_closed() {
            return Err(demand);
        }
        if demand.priority != 0 {
            self.raised_queued.fetch_add(1, Ordering::Relaxed);
        }
        self.demands.push(demand);
        if self.state.notify() {
            self.pool.schedule(Arc::clone(self));
            self.pool.drained_if_abandoned();
        }
        Ok(())
    }

    /// Takes every demand of a queue scheduled on a pool whose workers have left, counting
    /// each message as its agent's (`pool.rs` ground rules). The caller took the queue from a
    /// ready queue and holds the pool's `left` lock.
    pub(super) fn drain_closed(&self, slab: Option<&AgentSlab>) {
        loop {
            self.state.start();
            // SAFETY: started above by the only thread taking queues from the closed pool.
            while let Some(d) = unsafe { self.pop() } {
                match slab {
                    Some(slab) => d.discard_closed(slab, &self.pool.counters),
                    None => d.discard(&self.pool.counters),
                }
            }
            if !self.state.stop() {
                break;
            }
        }
    }

    /// The next demand.
    ///
    /// # Safety
    ///
    /// Only the pool thread that started this queue (`state.start()`) may call it, until it
    /// stops or pauses it.
    pub(super) unsafe fn pop(&self) -> Option<Demand> {
        // SAFETY: the run state gives the calling thread `sorted` (ground rules).
        let sorted = unsafe { &mut *self.sorted.get() };
        let sorting = sorted.as_ref().is_some_and(|s| !s.is_empty())
            // Relaxed: the count only picks the path; the demands synchronise through `demands`.
            || self.raised_queued.load(Ordering::Relaxed) != 0;
        if !sorting {
            // SAFETY: the run state makes the calling thread the queue's only consumer.
            return unsafe { self.take() };
        }
        let sorted = sorted.get_or_insert_with(Box::default);
        for _ in 0..SORT_BATCH {
            // SAFETY: as above.
            match unsafe { self.take() } {
                Some(demand) => sorted.push(demand),
                None => break,
            }
        }
        sorted.pop()
    }

    /// The next demand of the MPSC queue, counted out of `raised_queued` if raised.
    ///
    /// # Safety
    ///
    /// As [`pop`](Self::pop).
    #[inline(always)]
    unsafe fn take(&self) -> Option<Demand> {
        // SAFETY: the caller is the queue's only consumer (`pop`'s contract).
        let next = unsafe { self.demands.pop() };
        // Looked at in place: unwrapping and re-wrapping the `Option` would copy the demand
        // through the stack in odd-sized pieces.
        if next.as_ref().is_some_and(|d| d.priority != 0) {
            self.raised_queued.fetch_sub(1, Ordering::Relaxed);
        }
        next
    }

    /// True if a blocking wait on the calling thread for this queue's agents would never end.
    pub(crate) fn is_served_by_current_thread(&self) -> bool {
        self.pool.is_served_by_current_thread(self)
    }
}

impl Drop for AgentQueue {
    fn drop(&mut self) {
        if let Some(sorted) = self.sorted.get_mut() {
            while let Some(d) = sorted.pop() {
                d.discard(&self.pool.counters);
            }
        }
        // SAFETY: `&mut self`: no thread runs the queue any more.
        while let Some(d) = unsafe { self.demands.pop() } {
            d.discard(&self.pool.counters);
        }
    }
}
