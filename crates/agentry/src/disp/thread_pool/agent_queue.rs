//! The queue of one agent (or one coop, with FIFO per coop) served by a thread pool.

use super::pool::Pool;
use crate::demand::Demand;
use crate::message::Undelivered;
use crate::sync::mpsc::MpscQueue;
use crate::sync::run_state::RunState;
use std::sync::Arc;

/// Demands of one agent (or coop) plus its run state (`sync/run_state.rs`): a pool thread
/// runs it only while it holds it, so its agents never run on two threads at once.
pub(crate) struct AgentQueue {
    demands: MpscQueue<Demand>,
    pub(super) state: RunState,
    pub(super) pool: Arc<Pool>,
}

impl AgentQueue {
    pub(super) fn new(pool: Arc<Pool>) -> Self {
        AgentQueue {
            demands: MpscQueue::new(),
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
        self.demands.push(demand);
        if self.state.notify() {
            self.pool.schedule(Arc::clone(self));
        }
        Ok(())
    }

    /// The next demand.
    ///
    /// # Safety
    ///
    /// Only the pool thread that started this queue (`state.start()`) may call it, until it
    /// stops or pauses it.
    pub(super) unsafe fn pop(&self) -> Option<Demand> {
        // SAFETY: the run state makes the calling thread the queue's only consumer.
        unsafe { self.demands.pop() }
    }

    /// True if a blocking wait on the calling thread for this queue's agents would never end.
    pub(crate) fn is_served_by_current_thread(&self) -> bool {
        self.pool.is_served_by_current_thread(self)
    }
}

impl Drop for AgentQueue {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no thread runs the queue any more.
        while let Some(d) = unsafe { self.demands.pop() } {
            d.discard(Undelivered::Shutdown, &self.pool.counters);
        }
    }
}
