//! [`Server`]: the serving thread of one queue, as a type.
//!
//! A queue has at most one server in its life ([`Server::claim`] fails for a second one, and
//! on a thread that serves another queue already). The server is not `Send`: it stays on the
//! thread that claimed it, and while it lives `SERVED_QUEUE` names its queue on that thread,
//! so senders there take the local path. That makes the server the only code that touches its
//! queue's local parts and the only consumer of its cross-thread parts — so popping, local
//! pushes, running a demand (`disp/execute.rs`, which reaches into the agent's body) and
//! leaving the closed queue are safe methods here; the `unsafe` of the one-thread
//! dispatchers is in this file and `queue.rs`.
//!
//! Running a demand needs `&mut self`: a handler cannot reach the server that runs it, so an
//! agent's handlers never run re-entrantly.

use super::queue::{Queue, SERVED_QUEUE};
use crate::demand::Demand;
use crate::disp::execute::{Observer, execute, execute_observed};
use crate::slab::AgentSlab;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};

/// The serving side of one queue (see the module docs).
pub(crate) struct Server {
    queue: Arc<Queue>,
    slab: Arc<AgentSlab>,
    /// Demands run so far (published to the queue by [`publish`](Self::publish)).
    handled: u64,
    _not_send: PhantomData<*const ()>,
}

impl Server {
    /// Makes the calling thread `queue`'s server. `None` if this thread serves a queue already,
    /// `queue` has had a server, or its environment is gone.
    pub(crate) fn claim(queue: Arc<Queue>) -> Option<Server> {
        if SERVED_QUEUE.get() != 0 {
            return None;
        }
        let slab = queue.slab.upgrade()?;
        if queue.claimed.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the claim above succeeds once per queue, on the thread that will consume
        // (and park) — this one, before it parks.
        unsafe { queue.parker.register_consumer() };
        SERVED_QUEUE.set(queue.address());
        Some(Server {
            queue,
            slab,
            handled: 0,
            _not_send: PhantomData,
        })
    }

    pub(crate) fn queue(&self) -> &Queue {
        &self.queue
    }

    pub(crate) fn handled(&self) -> u64 {
        self.handled
    }

    /// Number of lanes of the queue.
    pub(super) fn lanes(&self) -> usize {
        self.queue.lanes.len()
    }

    /// The next demand of `lane`'s local part.
    #[inline(always)]
    pub(super) fn pop_local(&mut self, lane: usize) -> Option<Demand> {
        // SAFETY: this is the serving thread (module docs); the borrow ends here.
        unsafe { (*self.queue.lanes[lane].local.get()).pop() }
    }

    /// Queues `demand` at the back of `lane`'s local part.
    #[inline(always)]
    pub(super) fn push_local(&mut self, lane: usize, demand: Demand) {
        // SAFETY: as for `pop_local`.
        unsafe { (*self.queue.lanes[lane].local.get()).push(demand) }
    }

    /// The next demand another thread queued in `lane`.
    #[inline(always)]
    pub(super) fn pop_remote(&mut self, lane: usize) -> Option<Demand> {
        // SAFETY: the server is the queue's only consumer (module docs).
        unsafe { self.queue.lanes[lane].remote.pop() }
    }

    /// Demands other threads queued in `lane` (those whose push is still in progress
    /// included).
    pub(super) fn remote_len(&self, lane: usize) -> usize {
        self.queue.lanes[lane].remote.len()
    }

    /// Queues `demand` at the back of `lane`'s cross-thread part.
    #[inline(always)]
    pub(super) fn push_remote(&mut self, lane: usize, demand: Demand) {
        self.queue.lanes[lane].remote.push(demand);
    }

    pub(super) fn local_is_empty(&self, lane: usize) -> bool {
        // SAFETY: as for `pop_local`.
        unsafe { (*self.queue.lanes[lane].local.get()).is_empty() }
    }

    /// Runs one demand taken from this queue.
    #[inline(always)]
    pub(super) fn run(&mut self, demand: Demand) {
        // SAFETY: the demand came from this queue, which holds only demands of agents bound to
        // it (a binding pushes to its dispatcher's queue), and this thread is the queue's only
        // server; `&mut self` keeps the call from being re-entered (module docs).
        unsafe { execute(demand, &self.slab, &self.queue.counters) };
        self.handled += 1;
    }

    /// Runs one demand taken from this queue and reports it to `observer` (the testing kit).
    pub(super) fn run_observed<O: Observer>(&mut self, demand: Demand, observer: &mut O) {
        // SAFETY: as for `run`.
        unsafe { execute_observed(demand, &self.slab, &self.queue.counters, observer) };
        self.handled += 1;
    }

    /// Publishes the statistics (demands handled, local lengths) after a batch.
    pub(crate) fn publish(&self) {
        self.queue.handled.store(self.handled, Ordering::Relaxed);
        let local_len = self
            .queue
            .lanes
            .iter()
            // SAFETY: as for `pop_local`.
            .map(|lane| unsafe { (*lane.local.get()).len() })
            .sum();
        self.queue.local_len.store(local_len, Ordering::Relaxed);
    }

    /// True if no demand is waiting in any lane and the queue is open.
    pub(crate) fn nothing_queued(&self) -> bool {
        let empty = (0..self.lanes()).all(|lane| {
            // SAFETY: the server is the queue's only consumer (module docs).
            self.local_is_empty(lane) && unsafe { self.queue.lanes[lane].remote.is_empty() }
        });
        empty && !self.queue.closed.load(Ordering::Relaxed)
    }

    /// Parks the thread until a sender wakes it (a worker thread's parker), unless something
    /// is queued.
    pub(super) fn park(&self) {
        self.queue.parker.park(|| self.nothing_queued());
    }

    /// Before an event loop blocks: true if it may block (see `Driver::prepare_to_block`).
    pub(super) fn announce_sleep(&self) -> bool {
        self.queue.parker.announce_sleep(|| self.nothing_queued())
    }

    pub(super) fn end_sleep(&self) {
        self.queue.parker.end_sleep();
    }

    /// Closes the queue and leaves it: what is still queued is counted as its agents'
    /// (`Demand::discard_closed`), and the queue is marked abandoned so that a producer that
    /// raced the close drains what it pushed (engine ground rules). The server's last act
    /// (its owner drops it right after).
    pub(crate) fn leave(&mut self) {
        self.publish();
        // From here on, sends made on this thread take the cross-thread path.
        SERVED_QUEUE.set(0);
        self.queue.close();
        fence(Ordering::SeqCst);
        let mut left = self.queue.left.lock();
        for lane in self.queue.lanes.iter() {
            // SAFETY: this is still the queue's only consumer (it has not left yet: `left` is
            // false and we hold its lock).
            while let Some(d) = unsafe { (*lane.local.get()).pop() } {
                self.queue.discard_closed(d);
            }
            // SAFETY: as above.
            while let Some(d) = unsafe { lane.remote.pop() } {
                self.queue.discard_closed(d);
            }
        }
        *left = true;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A server dropped without `leave` (a unit test) leaves its demands to the queue's
        // drop, which counts them.
        SERVED_QUEUE.set(0);
    }
}
