//! The `one_thread` dispatcher (the default): all its agents run on one worker thread.
//!
//! # Ground rules
//!
//! - The dispatcher owns one queue of demands for all its agents; the worker runs them one
//!   at a time, so an agent never runs two handlers at once.
//! - A send made *on the worker thread* (an agent sending to a sibling on the same
//!   dispatcher) goes to the queue's `local` part (`local_queue.rs`): no atomic operation at
//!   all. `local` is touched only by the thread recorded in the `SERVED_QUEUE` thread-local
//!   — the worker — and never while another borrow of it is alive (push and pop do not call
//!   out), which is what the `unsafe` blocks below rely on. A send from any other thread goes
//!   to the lock-free MPSC queue (`sync/mpsc.rs`) and wakes the worker only if it sleeps
//!   (`sync/parker.rs`): at most one wake-up per batch.
//! - Per-sender FIFO holds because a sender always uses the same path. Different senders'
//!   messages interleave in no promised order.
//! - Finish barrier: a finish demand runs only after it has passed through *both* queues
//!   (taken from one, it is re-queued at the back of the other as `FINISH_NOW`). Every
//!   message accepted before the deregistration sits ahead of it in one queue or the other,
//!   so it is handled first, whichever thread sent it (the policy in `coop.rs`).
//! - Priorities (`prio_one_thread.rs`): the queue has one *lane* per priority, each with its
//!   local and remote parts; a demand goes to its agent's lane. The plain dispatcher has one
//!   lane and the loop above. A prioritised worker first moves what other threads sent into
//!   the lanes' local parts (a finish demand found there has passed both parts), then serves
//!   the lanes strictly by priority or round-robin with per-priority quotas; choosing a lane
//!   looks at eight flags at most — constant work per demand, no queue scan.
//! - Event priorities (`event_lanes.rs`): a lane's local part is sorted by the priority of
//!   each demand's subscription. A plain dispatcher keeps the two-part loop above until the
//!   first raised demand is pushed (`raised`); from then on it serves like a strictly-ordered
//!   one with a single lane: what other threads sent is moved into the local part (at least
//!   every 32 demands served) and the highest event priority runs first. The finish barrier
//!   is unchanged (a finish demand is `P0`, behind every raised demand taken in before it).
//!   On the priority dispatchers the agent's priority picks the lane and the event priority
//!   orders the demands inside it.
//! - When idle, the worker spins briefly (crossbeam `Backoff`), then parks.
//! - Closing (when the last handle and bound agent are gone, or at environment shutdown)
//!   makes pushes fail; the worker finishes what is queued, then *leaves*: under the `left`
//!   lock it marks the queue abandoned and drains what raced in, counting each message as its
//!   agent's (`Demand::discard_closed`). A producer that passed the closed check just before
//!   the close checks `closed` again after its push (behind the `SeqCst` fence of
//!   `Parker::unpark`); the worker issues a `SeqCst` fence after it saw `closed` and before
//!   its last drain. Either the worker's drain sees the push, or the producer sees `closed` —
//!   and then, under the same lock, drains the abandoned queue itself if the worker has left.
//!   So a message accepted in the race with closing is counted before its `send` returns or
//!   by the worker as it leaves, never left uncounted in an abandoned queue.

use super::event_lanes::EventLanes;
use super::worker::{Observer, execute, execute_observed};
use super::{
    BindScope, Binder, BinderKind, DispatcherCore, DispatcherStats, EventQueue, Lease,
    PreparedBinding,
};
use crate::demand::{Demand, Kind};
use crate::env::EnvHandle;
use crate::env::{Closable, EnvInner};
use crate::error::{BindError, BuildError};
use crate::priority::Priority;
use crate::slab::AgentSlab;
use crate::stats::EnvCounters;
use crate::sync::mpsc::MpscQueue;
use crate::sync::parker::Parker;
use crossbeam_utils::Backoff;
use parking_lot::Mutex;
use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Weak};

/// Demands taken per queue before looking at the other one (fairness between local and
/// cross-thread senders).
const BATCH: usize = 256;
/// Demands a strictly-ordered worker serves between two looks at what other threads sent
/// (bounds how long a new high-priority demand from another thread waits).
const PRIO_BATCH: usize = 32;

thread_local! {
    /// Address of the queue this thread serves (0 if none).
    static SERVED_QUEUE: Cell<usize> = const { Cell::new(0) };
}

/// True if the calling thread serves a one-thread queue (a worker, or a driven dispatcher's
/// thread).
pub(crate) fn serves_a_queue() -> bool {
    SERVED_QUEUE.get() != 0
}

/// How a worker chooses among its queue's lanes.
#[derive(Clone, Debug)]
pub(crate) enum Policy {
    /// One lane (the plain dispatcher).
    Fifo,
    /// Eight lanes; always the highest non-empty one.
    Strict,
    /// Eight lanes; up to `quotes[p]` demands of lane `p`, highest first, then round again.
    RoundRobin([usize; 8]),
}

/// The queues of one priority.
struct Lane {
    /// Demands the worker sent to agents of its own dispatcher, and those it moved here from
    /// `remote`, by event priority (worker thread only).
    local: UnsafeCell<EventLanes>,
    remote: MpscQueue<Demand>,
}

impl Lane {
    fn new() -> Self {
        Lane {
            local: UnsafeCell::new(EventLanes::new()),
            remote: MpscQueue::new(),
        }
    }
}

/// The queue of one `one_thread` dispatcher.
pub(crate) struct Queue {
    name: String,
    /// Address of the environment whose agents (and slab) this queue serves.
    env: usize,
    lanes: Box<[Lane]>,
    policy: Policy,
    /// The lanes' local lengths, published by the worker after each batch (for statistics).
    local_len: AtomicUsize,
    parker: Parker,
    closed: AtomicBool,
    /// Set (once) by the first push of a demand with a raised event priority: a plain
    /// dispatcher then sorts what other threads send by priority (ground rules).
    raised: AtomicBool,
    counters: Arc<EnvCounters>,
    /// Written only by the worker.
    handled: AtomicU64,
    /// The environment's agents (to count what is drained after closing).
    slab: Weak<AgentSlab>,
    /// Whether the consumer has left the closed queue (ground rules); whoever drains it after
    /// closing holds this lock.
    left: Mutex<bool>,
}

// SAFETY: `local` is accessed only by the worker thread (module ground rules); everything
// else is `Sync` on its own.
unsafe impl Sync for Queue {}

impl Queue {
    fn new(inner: &Arc<EnvInner>, name: String, policy: Policy, parker: Parker) -> Self {
        let lanes = if matches!(policy, Policy::Fifo) {
            1
        } else {
            Priority::ALL.len()
        };
        Queue {
            name,
            env: inner.address(),
            lanes: (0..lanes).map(|_| Lane::new()).collect(),
            policy,
            local_len: AtomicUsize::new(0),
            parker,
            closed: AtomicBool::new(false),
            raised: AtomicBool::new(false),
            counters: Arc::clone(&inner.counters),
            handled: AtomicU64::new(0),
            slab: Arc::downgrade(&inner.slab),
            left: Mutex::new(false),
        }
    }

    fn address(&self) -> usize {
        self as *const Queue as usize
    }

    /// Queues a demand in lane `lane` (0 on a plain dispatcher).
    #[inline(always)]
    pub(crate) fn push(&self, demand: Demand, lane: u8) -> Result<(), Demand> {
        if self.closed.load(Ordering::Acquire) {
            return Err(demand);
        }
        if demand.priority != 0 {
            self.note_raised();
        }
        let lane = &self.lanes[usize::from(lane)];
        if SERVED_QUEUE.get() == self.address() {
            // SAFETY: the calling thread is the worker (ground rules); no other borrow of
            // `local` is alive while a handler runs.
            unsafe { (*lane.local.get()).push(demand) };
        } else {
            lane.remote.push(demand);
            self.parker.unpark();
            // After `unpark`'s `SeqCst` fence (ground rules).
            if self.closed.load(Ordering::Relaxed) {
                self.drain_if_abandoned();
            }
        }
        Ok(())
    }

    /// A demand was pushed as the queue closed: if its consumer has left already, nobody else
    /// will take it (ground rules).
    #[cold]
    #[inline(never)]
    fn drain_if_abandoned(&self) {
        let left = self.left.lock();
        if *left {
            for lane in self.lanes.iter() {
                // SAFETY: the consumer has left (under this lock, held): we are the only one
                // popping.
                while let Some(d) = unsafe { lane.remote.pop() } {
                    self.discard_closed(d);
                }
            }
        }
    }

    /// The consumer leaves the closed queue: it drains what is left, then marks it abandoned
    /// (ground rules). Only the serving thread may call it, once, after it saw `closed`.
    fn leave(&self) {
        fence(Ordering::SeqCst);
        let mut left = self.left.lock();
        for lane in self.lanes.iter() {
            // SAFETY: the serving thread; no other borrow of `local` is alive.
            while let Some(d) = unsafe { (*lane.local.get()).pop() } {
                self.discard_closed(d);
            }
            // SAFETY: single consumer (the serving thread).
            while let Some(d) = unsafe { lane.remote.pop() } {
                self.discard_closed(d);
            }
        }
        *left = true;
    }

    fn discard_closed(&self, demand: Demand) {
        match self.slab.upgrade() {
            Some(slab) => demand.discard_closed(&slab, &self.counters),
            None => demand.discard(&self.counters),
        }
    }

    /// Remembers that raised event priorities are in use (written once, read per demand).
    #[cold]
    #[inline(never)]
    fn note_raised(&self) {
        if !self.raised.load(Ordering::Relaxed) {
            self.raised.store(true, Ordering::Relaxed);
        }
    }

    /// True once a demand with a raised event priority was pushed. Relaxed: the flag only
    /// picks the serving policy (the demands travel through the queues, which synchronise),
    /// and an acquire load per demand would keep the compiler from holding the worker's
    /// state in registers across it.
    #[inline(always)]
    fn raised(&self) -> bool {
        self.raised.load(Ordering::Relaxed)
    }

    /// The lane of an agent of priority `priority`.
    pub(crate) fn lane_of(&self, priority: Priority) -> u8 {
        if self.lanes.len() == 1 {
            0
        } else {
            priority as u8
        }
    }

    /// True if no demand is waiting in any lane. Only the serving thread may call it.
    pub(super) fn nothing_queued(&self) -> bool {
        let empty = self.lanes.iter().all(|lane| {
            // SAFETY: called by the serving thread only; no other borrow of `local` is alive.
            let local_empty = unsafe { (*lane.local.get()).is_empty() };
            // SAFETY: single consumer (the serving thread).
            local_empty && unsafe { lane.remote.is_empty() }
        });
        empty && !self.closed.load(Ordering::Relaxed)
    }

    /// Demands waiting in the lanes (approximate while senders are active).
    fn queued(&self) -> usize {
        self.local_len.load(Ordering::Relaxed)
            + self.lanes.iter().map(|l| l.remote.len()).sum::<usize>()
    }

    pub(crate) fn is_served_by_current_thread(&self) -> bool {
        SERVED_QUEUE.get() == self.address()
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.parker.unpark();
    }

    /// Number of demands handled so far.
    pub(crate) fn handled(&self) -> u64 {
        self.handled.load(Ordering::Relaxed)
    }
}

impl Closable for Queue {
    fn close(&self) {
        Queue::close(self);
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Demands pushed in the race with `close`, or left by a worker that exited: never
        // run, counted.
        for lane in self.lanes.iter_mut() {
            while let Some(d) = lane.local.get_mut().pop() {
                d.discard(&self.counters);
            }
            // SAFETY: `&mut self`: no producer and no worker is left, we are the only consumer.
            while let Some(d) = unsafe { lane.remote.pop() } {
                d.discard(&self.counters);
            }
        }
    }
}

/// The worker thread's loop.
fn run(queue: Arc<Queue>, slab: Arc<AgentSlab>, env_address: usize) {
    // SAFETY: this thread is the queue's single consumer, registered before its first park.
    unsafe { queue.parker.register_consumer() };
    SERVED_QUEUE.set(queue.address());
    crate::env::mark_worker_of(env_address);
    let backoff = Backoff::new();
    let mut worker = Worker {
        queue: &queue,
        slab: &slab,
        handled: 0,
    };
    loop {
        if worker.serve() {
            worker.publish();
            backoff.reset();
            continue;
        }
        if queue.closed.load(Ordering::Acquire) {
            break;
        }
        if !backoff.is_completed() {
            backoff.snooze();
            continue;
        }
        queue.parker.park(|| queue.nothing_queued());
        backoff.reset();
    }
    SERVED_QUEUE.set(0);
    worker.publish();
    queue.leave();
}

/// The worker's view of its queue (all methods run on the worker thread, or on the thread
/// that drives a driven dispatcher).
pub(super) struct Worker<'a> {
    pub(super) queue: &'a Queue,
    pub(super) slab: &'a AgentSlab,
    pub(super) handled: u64,
}

impl Worker<'_> {
    /// One round of the queue's policy; false if nothing was queued.
    pub(super) fn serve(&mut self) -> bool {
        match &self.queue.policy {
            Policy::Fifo if !self.queue.raised() => self.serve_fifo(),
            Policy::Fifo | Policy::Strict => self.pull_remote() | self.serve_strict(),
            Policy::RoundRobin(quotes) => self.pull_remote() | self.serve_round_robin(quotes),
        }
    }

    fn run_demand(&mut self, demand: Demand) {
        // SAFETY: this thread serves the queue the demand was sent to.
        unsafe { execute(demand, self.slab, &self.queue.counters) };
        self.handled += 1;
    }

    pub(super) fn publish(&self) {
        self.queue.handled.store(self.handled, Ordering::Relaxed);
        let local_len = self
            .queue
            .lanes
            .iter()
            // SAFETY: this is the worker thread; no other borrow of `local` is alive.
            .map(|lane| unsafe { (*lane.local.get()).len() })
            .sum();
        self.queue.local_len.store(local_len, Ordering::Relaxed);
    }

    /// One lane: a batch from the local part, then a batch from the remote part, with the
    /// finish barrier between the two. Stops at the first raised demand pushed meanwhile
    /// (the next round sorts by event priority).
    fn serve_fifo(&mut self) -> bool {
        let lane = &self.queue.lanes[0];
        let mut worked = false;
        for _ in 0..BATCH {
            if self.queue.raised() {
                return worked;
            }
            // SAFETY: this is the worker thread; the borrow ends before the demand runs.
            let Some(mut demand) = (unsafe { (*lane.local.get()).pop() }) else {
                break;
            };
            worked = true;
            if demand.kind == Kind::FINISH {
                // Finish barrier (ground rules): behind whatever other threads queued.
                demand.kind = Kind::FINISH_NOW;
                lane.remote.push(demand);
                continue;
            }
            self.run_demand(demand);
        }
        for _ in 0..BATCH {
            if self.queue.raised() {
                return worked;
            }
            // SAFETY: single consumer (this thread).
            let Some(mut demand) = (unsafe { lane.remote.pop() }) else {
                break;
            };
            worked = true;
            if demand.kind == Kind::FINISH {
                // Finish barrier (ground rules): behind what this thread queued.
                demand.kind = Kind::FINISH_NOW;
                // SAFETY: this is the worker thread; no other borrow of `local`.
                unsafe { (*lane.local.get()).push(demand) };
                continue;
            }
            self.run_demand(demand);
        }
        worked
    }

    /// Moves what other threads sent into each lane's local part. A finish demand found here
    /// has passed the remote part: it may run when its turn comes in the local part.
    fn pull_remote(&mut self) -> bool {
        let mut worked = false;
        for lane in self.queue.lanes.iter() {
            for _ in 0..BATCH {
                // SAFETY: single consumer (this thread).
                let Some(mut demand) = (unsafe { lane.remote.pop() }) else {
                    break;
                };
                worked = true;
                if demand.kind == Kind::FINISH {
                    demand.kind = Kind::FINISH_NOW;
                }
                // SAFETY: this is the worker thread; no other borrow of `local`.
                unsafe { (*lane.local.get()).push(demand) };
            }
        }
        worked
    }

    /// Takes the next demand of `lane`'s local part and runs it; a finish demand sent by this
    /// thread goes through the remote part first (finish barrier). False if the lane is empty.
    fn serve_one(&mut self, lane: usize) -> bool {
        let lane = &self.queue.lanes[lane];
        // SAFETY: this is the worker thread; the borrow ends before the demand runs.
        let Some(mut demand) = (unsafe { (*lane.local.get()).pop() }) else {
            return false;
        };
        if demand.kind == Kind::FINISH {
            demand.kind = Kind::FINISH_NOW;
            lane.remote.push(demand);
        } else {
            self.run_demand(demand);
        }
        true
    }

    /// The highest lane with local demands.
    fn highest_ready(&self) -> Option<usize> {
        // SAFETY: this is the worker thread; no other borrow of `local` is alive.
        (0..self.queue.lanes.len())
            .rev()
            .find(|&p| !unsafe { (*self.queue.lanes[p].local.get()).is_empty() })
    }

    fn serve_strict(&mut self) -> bool {
        let mut worked = false;
        for _ in 0..PRIO_BATCH {
            let Some(lane) = self.highest_ready() else {
                break;
            };
            worked |= self.serve_one(lane);
        }
        worked
    }

    fn serve_round_robin(&mut self, quotes: &[usize; 8]) -> bool {
        let mut worked = false;
        for lane in (0..self.queue.lanes.len()).rev() {
            for _ in 0..quotes[lane].max(1) {
                if !self.serve_one(lane) {
                    break;
                }
                worked = true;
            }
        }
        worked
    }
}

/// The dispatcher itself: its queue, and the count of agents bound to it.
pub(crate) struct Core {
    queue: Arc<Queue>,
    kind: &'static str,
    bound: AtomicUsize,
}

impl Drop for Core {
    fn drop(&mut self) {
        self.queue.close();
    }
}

impl DispatcherCore for Core {
    fn bound_agents(&self) -> &AtomicUsize {
        &self.bound
    }

    fn stats(&self) -> DispatcherStats {
        DispatcherStats {
            name: self.queue.name.clone(),
            kind: self.kind,
            threads: 1,
            agents: self.bound.load(Ordering::Relaxed),
            handled: self.queue.handled(),
            queued: self.queue.queued(),
        }
    }
}

/// Handle of a `one_thread` dispatcher: one worker thread for all its agents.
///
/// The dispatcher lives while a handle or a bound agent exists; its thread is joined when the
/// environment shuts down.
///
/// ```
/// use agentry::{UserError, Agent, Ctx, Env, disp::one_thread::OneThreadDispatcher};
///
/// struct Worker;
/// impl Agent for Worker {
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> { ctx.stop_env(); Ok(()) }
/// }
///
/// let env = Env::new().expect("env");
/// let disp = OneThreadDispatcher::new(env.handle(), "io").expect("dispatcher");
/// let mut coop = env.handle().new_coop();
/// coop.add_with(Worker, &disp.binder());
/// env.handle().register_coop(coop).expect("registered");
/// env.run();
/// ```
#[derive(Clone)]
pub struct OneThreadDispatcher(Arc<Core>);

impl OneThreadDispatcher {
    /// Starts a dispatcher thread named `agentry-<name>`.
    pub fn new(env: &EnvHandle, name: impl Into<String>) -> Result<Self, BuildError> {
        Self::spawn(env.inner(), name.into(), "one_thread", Policy::Fifo)
    }

    /// Starts a one-thread dispatcher of the given kind (`active_obj`, `active_group` and the
    /// priority dispatchers are made of these).
    pub(crate) fn spawn(
        inner: &Arc<EnvInner>,
        name: String,
        kind: &'static str,
        policy: Policy,
    ) -> Result<Self, BuildError> {
        let queue = Arc::new(Queue::new(inner, name.clone(), policy, Parker::new()));
        let slab = Arc::clone(&inner.slab);
        let worker_queue = Arc::clone(&queue);
        let env_address = inner.address();
        inner.spawn_worker(
            &format!("agentry-{name}"),
            Arc::clone(&queue) as Arc<dyn Closable>,
            move || run(worker_queue, slab, env_address),
        )?;
        Ok(Self::with_queue(inner, queue, kind))
    }

    fn with_queue(inner: &Arc<EnvInner>, queue: Arc<Queue>, kind: &'static str) -> Self {
        let core = Arc::new(Core {
            queue,
            kind,
            bound: AtomicUsize::new(0),
        });
        inner.register_dispatcher(Arc::downgrade(&core) as Weak<dyn DispatcherCore>);
        OneThreadDispatcher(core)
    }

    /// A dispatcher whose thread is the caller's: an event loop on the calling thread serves
    /// its agents through the returned [`Driver`], and `wake` (which must make the loop's
    /// blocking call return — e.g. `mio::Waker::wake`) is called when demands arrive while the
    /// loop blocks. Fails with [`BuildError::ThreadBusy`] if the calling thread already serves
    /// a dispatcher.
    pub fn driven(
        env: &EnvHandle,
        name: impl Into<String>,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Result<(Self, Driver), BuildError> {
        if SERVED_QUEUE.get() != 0 {
            return Err(BuildError::ThreadBusy);
        }
        let inner = env.inner();
        let parker = Parker::with_callback(Box::new(wake));
        let queue = Arc::new(Queue::new(inner, name.into(), Policy::Fifo, parker));
        inner.register_closer(Arc::clone(&queue) as Arc<dyn Closable>);
        SERVED_QUEUE.set(queue.address());
        let driver = Driver {
            queue: Arc::clone(&queue),
            slab: Arc::clone(&inner.slab),
            handled: 0,
            cursor: Cursor {
                remote: false,
                left: BATCH,
            },
            _not_send: PhantomData,
        };
        Ok((Self::with_queue(inner, queue, "driven"), driver))
    }

    pub(crate) fn from_core(core: Arc<Core>) -> Self {
        OneThreadDispatcher(core)
    }

    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.0
    }

    /// A binder for agents that should run on this dispatcher.
    pub fn binder(&self) -> Binder {
        Binder(BinderKind::OneThread(self.clone()))
    }

    /// The dispatcher's name.
    pub fn name(&self) -> &str {
        &self.0.queue.name
    }

    /// The dispatcher's counters.
    pub fn stats(&self) -> DispatcherStats {
        self.0.stats()
    }

    pub(crate) fn prepare(
        &self,
        scope: &mut BindScope<'_>,
        priority: Priority,
    ) -> Result<PreparedBinding, BindError> {
        if self.0.queue.env != scope.env.address() {
            return Err(BindError::OtherEnv(self.0.queue.name.clone()));
        }
        if self.0.queue.closed.load(Ordering::Acquire) {
            return Err(BindError::DispatcherShutDown(self.0.queue.name.clone()));
        }
        Ok(PreparedBinding {
            queue: EventQueue::OneThread(Arc::clone(&self.0.queue), self.0.queue.lane_of(priority)),
            lease: Lease::new(Arc::clone(&self.0) as Arc<dyn DispatcherCore>),
        })
    }
}

impl fmt::Debug for OneThreadDispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OneThreadDispatcher")
            .field("name", &self.0.queue.name)
            .finish()
    }
}

/// The serving side of a driven dispatcher ([`OneThreadDispatcher::driven`]): the event loop
/// of the thread that created it runs the dispatcher's agents through it.
///
/// A loop iteration: [`run`](Self::run) until it returns 0; then [`prepare_to_block`](Self::prepare_to_block)
/// — if it returns true, block (e.g. `Poll::poll`), then call [`woke_up`](Self::woke_up);
/// stop when [`is_closed`](Self::is_closed). The driver stays on the thread that created it
/// (it is not `Send`); sends made on that thread to agents of this dispatcher take the
/// lock-free local path.
pub struct Driver {
    queue: Arc<Queue>,
    slab: Arc<AgentSlab>,
    handled: u64,
    /// Where [`step_observed`](Self::step_observed) takes its next demand from.
    cursor: Cursor,
    _not_send: PhantomData<*const ()>,
}

/// The position of a driver that runs one demand at a time in the FIFO policy of
/// `serve_fifo`: which part of the queue it takes from, and how many more demands it takes
/// there before it turns to the other part.
#[derive(Debug)]
struct Cursor {
    remote: bool,
    left: usize,
}

impl Cursor {
    fn turn(&mut self) {
        self.remote = !self.remote;
        self.left = BATCH;
    }
}

impl Driver {
    /// Runs one round of queued demands (up to a batch from each part of the queue); returns
    /// how many ran.
    pub fn run(&mut self) -> usize {
        let mut worker = Worker {
            queue: &self.queue,
            slab: &self.slab,
            handled: self.handled,
        };
        worker.serve();
        worker.publish();
        let ran = worker.handled - self.handled;
        self.handled = worker.handled;
        usize::try_from(ran).unwrap_or(usize::MAX)
    }

    /// Runs the next demand and reports it to `observer` (the testing kit). Demands are taken
    /// in the order of the FIFO policy — up to a batch from the local part, then up to a batch
    /// from the remote part — with the finish barrier; once raised event priorities are in
    /// use, in the order of `serve`'s prioritised policy. False if nothing was queued.
    pub(crate) fn step_observed<O: Observer>(&mut self, observer: &mut O) -> bool {
        let next = if self.queue.raised() {
            self.next_prioritized()
        } else {
            self.next_fifo()
        };
        let Some(demand) = next else {
            return false;
        };
        // SAFETY: this thread serves the queue the demand was taken from.
        unsafe { execute_observed(demand, &self.slab, &self.queue.counters, observer) };
        self.handled += 1;
        Worker {
            queue: &self.queue,
            slab: &self.slab,
            handled: self.handled,
        }
        .publish();
        true
    }

    /// The next demand `serve_fifo` would run, one at a time (the cursor keeps its place).
    fn next_fifo(&mut self) -> Option<Demand> {
        let lane = &self.queue.lanes[0];
        let mut empty_parts = 0;
        loop {
            let next = if self.cursor.remote {
                // SAFETY: single consumer: the driver stays on the thread that serves the
                // queue (it is not `Send`).
                unsafe { lane.remote.pop() }
            } else {
                // SAFETY: this is the serving thread; the borrow ends before the demand runs.
                unsafe { (*lane.local.get()).pop() }
            };
            let Some(mut demand) = next else {
                empty_parts += 1;
                if empty_parts == 2 {
                    return None;
                }
                self.cursor.turn();
                continue;
            };
            empty_parts = 0;
            let from_remote = self.cursor.remote;
            self.cursor.left -= 1;
            if self.cursor.left == 0 {
                self.cursor.turn();
            }
            if demand.kind == Kind::FINISH {
                // Finish barrier (ground rules): behind what the other part holds.
                demand.kind = Kind::FINISH_NOW;
                if from_remote {
                    // SAFETY: this is the serving thread; no other borrow of `local`.
                    unsafe { (*lane.local.get()).push(demand) };
                } else {
                    lane.remote.push(demand);
                }
                continue;
            }
            return Some(demand);
        }
    }

    /// The next demand of the prioritised policy: what other threads sent joins the local
    /// part, whose highest event priority goes first; a finish demand taken from the local
    /// part passes the remote part first (finish barrier).
    fn next_prioritized(&mut self) -> Option<Demand> {
        let queue = Arc::clone(&self.queue);
        let lane = &queue.lanes[0];
        loop {
            self.absorb_remote();
            // SAFETY: this is the serving thread; the borrow ends before the demand runs.
            let mut demand = unsafe { (*lane.local.get()).pop() }?;
            if demand.kind == Kind::FINISH {
                demand.kind = Kind::FINISH_NOW;
                lane.remote.push(demand);
                continue;
            }
            return Some(demand);
        }
    }

    /// Moves every demand other threads have queued into the local part, behind what is there
    /// (the testing kit, after its clock moved: the timer thread's messages then run before
    /// anything the test sends next). A finish demand moved this way has passed both parts.
    pub(crate) fn absorb_remote(&mut self) {
        let mut worker = Worker {
            queue: &self.queue,
            slab: &self.slab,
            handled: self.handled,
        };
        while worker.pull_remote() {}
        worker.publish();
    }

    /// Call before blocking: true if the loop may block now (senders will call the wake
    /// callback); false if demands are waiting (run them first, do not block).
    pub fn prepare_to_block(&mut self) -> bool {
        self.queue
            .parker
            .announce_sleep(|| self.queue.nothing_queued())
    }

    /// Call after the loop's blocking call returned (whatever woke it).
    pub fn woke_up(&mut self) {
        self.queue.parker.end_sleep();
    }

    /// True once the dispatcher was closed (environment shutdown, or no handle and no agent
    /// left): the loop should run what is left and return.
    pub fn is_closed(&self) -> bool {
        self.queue.closed.load(Ordering::Acquire)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        SERVED_QUEUE.set(0);
        self.queue.close();
        self.queue.leave();
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("dispatcher", &self.queue.name)
            .field("handled", &self.handled)
            .finish()
    }
}

#[cfg(test)]
mod tests;
