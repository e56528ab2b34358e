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
//! - When idle, the worker spins briefly (crossbeam `Backoff`), then parks.
//! - Closing (when the last handle and bound agent are gone, or at environment shutdown)
//!   makes pushes fail; the worker finishes what is queued and exits. Demands pushed in the
//!   race with closing are discarded and counted when the queue is dropped.

use super::local_queue::LocalQueue;
use super::worker::execute;
use super::{
    BindScope, Binder, BinderKind, DispatcherCore, DispatcherStats, EventQueue, Lease,
    PreparedBinding,
};
use crate::demand::{Demand, Kind};
use crate::env::EnvHandle;
use crate::env::{Closable, EnvInner};
use crate::error::{BindError, BuildError};
use crate::message::Undelivered;
use crate::slab::AgentSlab;
use crate::stats::EnvCounters;
use crate::sync::mpsc::MpscQueue;
use crate::sync::parker::Parker;
use crossbeam_utils::Backoff;
use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// Demands taken per queue before looking at the other one (fairness between local and
/// cross-thread senders).
const BATCH: usize = 256;

thread_local! {
    /// Address of the queue this thread serves (0 if none).
    static SERVED_QUEUE: Cell<usize> = const { Cell::new(0) };
}

/// The queue of one `one_thread` dispatcher.
pub(crate) struct Queue {
    name: String,
    /// Address of the environment whose agents (and slab) this queue serves.
    env: usize,
    /// Demands the worker sent to agents of its own dispatcher (worker thread only).
    local: UnsafeCell<LocalQueue>,
    /// `local`'s length, published by the worker after each batch (for statistics).
    local_len: AtomicUsize,
    remote: MpscQueue<Demand>,
    parker: Parker,
    closed: AtomicBool,
    counters: Arc<EnvCounters>,
    /// Written only by the worker.
    handled: AtomicU64,
}

// SAFETY: `local` is accessed only by the worker thread (module ground rules); everything
// else is `Sync` on its own.
unsafe impl Sync for Queue {}

impl Queue {
    fn address(&self) -> usize {
        self as *const Queue as usize
    }

    #[inline(always)]
    pub(crate) fn push(&self, demand: Demand) -> Result<(), Demand> {
        if self.closed.load(Ordering::Acquire) {
            return Err(demand);
        }
        if SERVED_QUEUE.get() == self.address() {
            // SAFETY: the calling thread is the worker (ground rules); no other borrow of
            // `local` is alive while a handler runs.
            unsafe { (*self.local.get()).push(demand) };
        } else {
            self.remote.push(demand);
            self.parker.unpark();
        }
        Ok(())
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
        while let Some(d) = self.local.get_mut().pop() {
            d.discard(Undelivered::Shutdown, &self.counters);
        }
        // SAFETY: `&mut self`: no producer and no worker is left, we are the only consumer.
        while let Some(d) = unsafe { self.remote.pop() } {
            d.discard(Undelivered::Shutdown, &self.counters);
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
    let mut handled = 0u64;
    loop {
        let mut worked = false;
        for _ in 0..BATCH {
            // SAFETY: this is the worker thread; the borrow ends before the demand runs.
            let Some(mut demand) = (unsafe { (*queue.local.get()).pop() }) else {
                break;
            };
            worked = true;
            if demand.kind == Kind::FINISH {
                // Finish barrier (ground rules): behind whatever other threads queued.
                demand.kind = Kind::FINISH_NOW;
                queue.remote.push(demand);
                continue;
            }
            // SAFETY: this thread serves the queue the demand was sent to.
            unsafe { execute(demand, &slab, &queue.counters) };
            handled += 1;
        }
        for _ in 0..BATCH {
            // SAFETY: single consumer (this thread).
            let Some(mut demand) = (unsafe { queue.remote.pop() }) else {
                break;
            };
            worked = true;
            if demand.kind == Kind::FINISH {
                // Finish barrier (ground rules): behind what this thread queued.
                demand.kind = Kind::FINISH_NOW;
                // SAFETY: this is the worker thread; no other borrow of `local`.
                unsafe { (*queue.local.get()).push(demand) };
                continue;
            }
            // SAFETY: this thread serves the queue the demand was sent to.
            unsafe { execute(demand, &slab, &queue.counters) };
            handled += 1;
        }
        if worked {
            queue.handled.store(handled, Ordering::Relaxed);
            // SAFETY: this is the worker thread; no other borrow of `local` is alive.
            let local_len = unsafe { (*queue.local.get()).len() };
            queue.local_len.store(local_len, Ordering::Relaxed);
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
        queue.parker.park(|| {
            // SAFETY: this is the worker thread; no other borrow of `local` is alive.
            let local_empty = unsafe { (*queue.local.get()).is_empty() };
            // SAFETY: single consumer (this thread).
            let remote_empty = unsafe { queue.remote.is_empty() };
            local_empty && remote_empty && !queue.closed.load(Ordering::Relaxed)
        });
        backoff.reset();
    }
    SERVED_QUEUE.set(0);
    queue.handled.store(handled, Ordering::Relaxed);
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
            queued: self.queue.local_len.load(Ordering::Relaxed) + self.queue.remote.len(),
        }
    }
}

/// Handle of a `one_thread` dispatcher: one worker thread for all its agents.
///
/// The dispatcher lives while a handle or a bound agent exists; its thread is joined when the
/// environment shuts down.
///
/// ```
/// use agentry::{Agent, Ctx, Env, disp::one_thread::OneThreadDispatcher};
///
/// struct Worker;
/// impl Agent for Worker {
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) { ctx.stop_env(); }
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
        Self::spawn(env.inner(), name.into(), "one_thread")
    }

    /// Starts a one-thread dispatcher of the given kind (`active_obj` and `active_group`
    /// dispatchers are made of these).
    pub(crate) fn spawn(
        inner: &Arc<EnvInner>,
        name: String,
        kind: &'static str,
    ) -> Result<Self, BuildError> {
        let queue = Arc::new(Queue {
            name: name.clone(),
            env: inner.address(),
            local: UnsafeCell::new(LocalQueue::new()),
            local_len: AtomicUsize::new(0),
            remote: MpscQueue::new(),
            parker: Parker::new(),
            closed: AtomicBool::new(false),
            counters: Arc::clone(&inner.counters),
            handled: AtomicU64::new(0),
        });
        let slab = Arc::clone(&inner.slab);
        let worker_queue = Arc::clone(&queue);
        let env_address = inner.address();
        inner.spawn_worker(
            &format!("agentry-{name}"),
            Arc::clone(&queue) as Arc<dyn Closable>,
            move || run(worker_queue, slab, env_address),
        )?;
        let core = Arc::new(Core {
            queue,
            kind,
            bound: AtomicUsize::new(0),
        });
        inner.register_dispatcher(Arc::downgrade(&core) as Weak<dyn DispatcherCore>);
        Ok(OneThreadDispatcher(core))
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

    pub(crate) fn prepare(&self, scope: &mut BindScope<'_>) -> Result<PreparedBinding, BindError> {
        if self.0.queue.env != scope.env.address() {
            return Err(BindError::OtherEnv(self.0.queue.name.clone()));
        }
        if self.0.queue.closed.load(Ordering::Acquire) {
            return Err(BindError::DispatcherShutDown(self.0.queue.name.clone()));
        }
        Ok(PreparedBinding {
            queue: EventQueue::OneThread(Arc::clone(&self.0.queue)),
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
