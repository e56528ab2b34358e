//! The queue of one agent (or one coop, with FIFO per coop) served by a thread pool.
//!
//! Senders push into a lock-free MPSC queue and count the demands with a raised event
//! priority they push (`raised_queued`). While that count is 0 and nothing waits in `sorted`,
//! the pool thread that runs the queue pops the MPSC queue directly. Otherwise it first moves
//! what is waiting into `sorted` (`disp/event_lanes.rs`), so the highest event priority runs
//! first, and pops from there until `sorted` is empty again. A finish demand is `P0`: it runs
//! after every raised demand pushed before it, which the move has already taken in.
//!
//! [`Running`] is the pool thread that holds a queue's run state, as a type: only
//! [`AgentQueue::start`] (on a scheduled queue) and [`Claimed::run`] (on a queue the worker
//! claimed as it made it ready) make one, it is not `Send`, and it ends by stopping or
//! pausing the queue. Popping and running demands are its safe methods;
//! the `unsafe` of the pool is in this file.

use super::pool::Pool;
use crate::demand::Demand;
use crate::disp::event_lanes::EventLanes;
use crate::disp::execute::execute;
use crate::slab::AgentSlab;
use crate::sync::blocks::BlockArc;
use crate::sync::mpsc::{Apart, MpscQueue, SMALL_BLOCK_CAP};
use crate::sync::run_state::RunState;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Demands of one agent (or coop) plus its run state (`sync/run_state.rs`): a pool thread
/// runs it only while it holds it, so its agents never run on two threads at once.
///
/// Laid out in this order (`repr(C)`, no alignment asked): the fields producers write (the
/// run state, the raised count) and those the running thread reads with them, then the
/// queue — its producers' part and its consumer's part, each followed by a 64-byte gap
/// (`mpsc::Apart`) —, so that the consumer's line is never one a producer writes, of this
/// queue or of whatever malloc puts next to it.
#[repr(C)]
pub(crate) struct AgentQueue {
    state: RunState,
    /// Demands with a raised event priority pushed into `demands` and not taken out yet
    /// (counted before the push, so never below the true number).
    raised_queued: AtomicUsize,
    pub(super) pool: Arc<Pool>,
    /// Demands taken out of `demands`, by event priority (only the thread that holds the run
    /// state touches it; allocated when the first raised demand is seen).
    sorted: UnsafeCell<Option<Box<EventLanes>>>,
    /// Small blocks: a pool holds one queue per agent (or coop), mostly short, and every line
    /// a message touches is likely a cache miss when the agents are many. Its first block is
    /// its own, at its end: the queue and that block are one allocation.
    demands: MpscQueue<Demand, SMALL_BLOCK_CAP, Apart, 1>,
}

/// A pool agent's queue as its binding, the ready queues and the worker that runs it share it:
/// one block of the cells' store (`sync/blocks.rs`) with its count.
pub(crate) type PoolQueue = BlockArc<AgentQueue>;

// A pool agent's own block, its queue's first block included (with the count, a 416-byte
// block: a first block of 3 demands; with 7 it was a 672-byte block, a 688-byte chunk of
// glibc's malloc before the store, and before that a 240-byte and a 464-byte one).
const _: () = assert!(std::mem::size_of::<AgentQueue>() <= 408);
const _: () = assert!(std::mem::align_of::<AgentQueue>() <= 16);

// SAFETY: `sorted` is touched only by the pool thread that holds the run state (through its
// `Running`) or through `&mut self`; the run state's transitions order one holder's accesses
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

    /// Queues a demand in `this` and schedules it if it was idle; gives the demand back if the
    /// pool is shut down.
    #[inline]
    pub(crate) fn push(this: &PoolQueue, demand: Demand) -> Result<(), Demand> {
        if this.pool.is_closed() {
            return Err(demand);
        }
        if demand.priority() != 0 {
            this.raised_queued.fetch_add(1, Ordering::Relaxed);
        }
        this.demands.push(demand);
        this.pool.notify(this);
        Ok(())
    }

    /// After a push: schedules `this` if it was idle (`RunState::notify`).
    pub(super) fn notify(this: &PoolQueue) -> Option<PoolQueue> {
        this.state.notify().then(|| this.clone())
    }

    /// After a push by a worker that will run `this` itself next: holds it if it was idle
    /// (`RunState::claim`).
    pub(super) fn claim(this: &PoolQueue) -> Option<Claimed> {
        this.state.claim().then(|| Claimed(this.clone()))
    }

    /// Takes the run state of a queue taken from a ready queue; `None` if it is not
    /// scheduled (then nothing may be taken from it).
    pub(super) fn start(&self) -> Option<Running<'_>> {
        self.state.start().then_some(Running {
            queue: self,
            _not_send: PhantomData,
        })
    }

    /// Takes every demand of a queue scheduled on a pool whose workers have left, counting
    /// each message as its agent's (`pool.rs` ground rules). The caller took the queue from a
    /// ready queue and holds the pool's `left` lock.
    pub(super) fn drain_closed(&self, slab: Option<&AgentSlab>) {
        while let Some(mut running) = self.start() {
            while let Some(d) = running.pop() {
                match slab {
                    Some(slab) => d.discard_closed(slab, &self.pool.counters),
                    None => d.discard(&self.pool.counters),
                }
            }
            if !running.stop() {
                break;
            }
        }
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

/// A queue whose run state a worker took with [`AgentQueue::claim`]: it runs it
/// ([`run`](Self::run)) or hands it to a ready queue ([`release`](Self::release)).
pub(super) struct Claimed(PoolQueue);

impl Claimed {
    /// Runs the claimed queue through `f`, which must end the [`Running`] it is given (stop or
    /// pause); returns the queue and what `f` returned.
    pub(super) fn run<R>(self, f: impl FnOnce(Running<'_>) -> R) -> (PoolQueue, R) {
        let r = f(Running {
            queue: &self.0,
            _not_send: PhantomData,
        });
        (self.0, r)
    }

    /// Hands the queue to other workers: scheduled (`RunState::pause`), for a ready queue.
    pub(super) fn release(self) -> PoolQueue {
        self.0.state.pause();
        self.0
    }
}

/// The pool thread that holds a queue's run state (module docs).
pub(super) struct Running<'q> {
    queue: &'q AgentQueue,
    _not_send: PhantomData<*const ()>,
}

impl Running<'_> {
    /// The queue this thread runs.
    pub(super) fn queue(&self) -> &AgentQueue {
        self.queue
    }

    /// The next demand. Inlined into the run loop: a demand returned through a call is
    /// copied through the stack once more (the sorting path stays out of line).
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<Demand> {
        let queue = self.queue;
        // SAFETY: the run state gives this thread `sorted` (the `Sync` impl above); the borrow
        // ends before this returns.
        let sorted = unsafe { &*queue.sorted.get() };
        let sorting = sorted.as_ref().is_some_and(|s| !s.is_empty())
            // Relaxed: the count only picks the path; the demands synchronise through `demands`.
            || queue.raised_queued.load(Ordering::Relaxed) != 0;
        if sorting {
            return self.pop_sorted();
        }
        self.take()
    }

    /// [`pop`](Self::pop) once a raised demand was queued: everything waiting is sorted by
    /// event priority first.
    #[cold]
    #[inline(never)]
    fn pop_sorted(&mut self) -> Option<Demand> {
        let queue = self.queue;
        // SAFETY: the run state gives this thread `sorted` (the `Sync` impl above); the borrow
        // ends before this returns, and `take` does not touch it.
        let sorted = unsafe { &mut *queue.sorted.get() };
        let sorted = sorted.get_or_insert_with(Box::default);
        // Everything queued when this pop began joins `sorted` first, however long the
        // backlog: a raised demand is taken before every lower one queued before it. The
        // count read first bounds the move, so producers pushing meanwhile cannot keep it
        // going; each demand is moved once.
        for _ in 0..queue.demands.len() {
            match self.take() {
                Some(demand) => sorted.push(demand),
                None => break,
            }
        }
        sorted.pop()
    }

    /// The next demand of the MPSC queue, counted out of `raised_queued` if raised.
    #[inline(always)]
    fn take(&mut self) -> Option<Demand> {
        // SAFETY: the run state makes this thread the queue's only consumer.
        let next = unsafe { self.queue.demands.pop() };
        // Looked at in place: unwrapping and re-wrapping the `Option` would copy the demand
        // through the stack in odd-sized pieces.
        if next.as_ref().is_some_and(|d| d.priority() != 0) {
            self.queue.raised_queued.fetch_sub(1, Ordering::Relaxed);
        }
        next
    }

    /// Runs up to `budget` demands; returns how many ran. `slab` must be the slab of the
    /// pool's environment (checked).
    pub(super) fn run(&mut self, slab: &AgentSlab, budget: usize) -> usize {
        assert!(
            self.queue.pool.runs_agents_of(slab),
            "invariant: a pool runs the agents of its own environment"
        );
        let mut ran = 0;
        while ran < budget {
            let Some(demand) = self.pop() else {
                break;
            };
            // SAFETY: the demand came from this queue, which holds only demands of the agents
            // bound to it (through their binding to this pool), whose slab was checked above;
            // the run state keeps every other thread away from these agents, and a handler
            // cannot reach this token, so the call is not re-entered.
            unsafe { execute(demand, slab, &self.queue.pool.counters) };
            ran += 1;
        }
        ran
    }

    /// No more demands were found: lets the queue go. True if the caller must put it back
    /// into a ready queue (a demand was pushed meanwhile).
    pub(super) fn stop(self) -> bool {
        self.queue.state.stop()
    }

    /// The budget is used up with demands left: the caller puts the queue back.
    pub(super) fn pause(self) {
        self.queue.state.pause();
    }
}
