//! The `thread_pool` dispatcher: N worker threads with work stealing; an agent never runs on
//! two workers at once.
//!
//! Each agent (or, with [`Fifo::Coop`], each coop) has its own queue of demands with a run
//! state (`sync/run_state.rs`); a queue that receives a demand while idle is made ready on the
//! pool, and a worker runs up to `max_demands_at_once` of its demands before taking the next
//! queue — the knob between fairness (small) and batching (large).
//!
//! How work moves between workers (`thread_pool/pool.rs` has the ground rules): a queue made
//! ready by a handler goes to its worker's `next` slot, which that worker runs next and no
//! other can steal (affinity: agents that talk to each other stay on one worker); the queue
//! it displaces goes to the worker's stealable deque, and only then is an idle worker woken.
//! Queues made ready from outside the pool go to the shared injector. An idle worker steals
//! from the injector, then from the others' deques; a busy one never steals.

#[allow(unsafe_code)]
mod agent_queue;
#[allow(unsafe_code)]
mod pool;
mod worker;

pub(crate) use agent_queue::{AgentQueue, PoolQueue};
pub(crate) use pool::before_blocking;

use super::{
    BindScope, Binder, BinderKind, Closable, DispatcherCore, DispatcherEnv, DispatcherHost,
    DispatcherStats, EventQueue, LeaseSource, PreparedBinding, check_name,
};
use crate::error::{BindError, BuildError};
use crossbeam_deque::Worker;
use pool::Pool;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// Which demands keep their order relative to each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fifo {
    /// Each agent has its own queue: agents run in parallel; each agent's demands in order.
    #[default]
    Agent,
    /// The agents of a coop share one queue: the coop's agents never run in parallel with
    /// each other and see one FIFO order across the coop.
    Coop,
}

struct Core {
    pool: Arc<Pool>,
    fifo: Fifo,
    bound: AtomicUsize,
}

impl Drop for Core {
    fn drop(&mut self) {
        self.pool.close();
    }
}

impl DispatcherCore for Core {
    fn bound_agents(&self) -> &AtomicUsize {
        &self.bound
    }

    fn stats(&self) -> DispatcherStats {
        DispatcherStats {
            name: self.pool.name.clone(),
            kind: "thread_pool",
            threads: self.pool.threads,
            agents: self.bound.load(Ordering::Relaxed),
            handled: self.pool.handled(),
            queued: self.pool.ready_queues(),
        }
    }
}

impl Closable for Pool {
    fn close(&self) {
        Pool::close(self);
    }
}

/// Settings of a thread pool ([`ThreadPoolDispatcher::builder`]).
///
/// ```
/// use agentry::{BuildError, Env, disp::{Fifo, ThreadPoolDispatcher}};
///
/// let env = Env::new().expect("env");
/// let pool = ThreadPoolDispatcher::builder("crunch")
///     .threads(2)
///     .fifo(Fifo::Coop)
///     .affinity(false)
///     .max_demands_at_once(8)
///     .build(env.handle())
///     .expect("pool");
/// assert_eq!(pool.stats().threads, 2);
/// assert!(matches!(
///     ThreadPoolDispatcher::builder("none").threads(0).build(env.handle()),
///     Err(BuildError::InvalidSetting(_))
/// ));
/// ```
#[derive(Clone, Debug)]
pub struct ThreadPoolBuilder {
    name: String,
    threads: usize,
    fifo: Fifo,
    max_demands_at_once: usize,
    affinity: bool,
}

impl ThreadPoolBuilder {
    /// Worker threads (default: the machine's available parallelism; [`build`](Self::build)
    /// refuses 0).
    pub fn threads(&mut self, threads: usize) -> &mut Self {
        self.threads = threads;
        self
    }

    /// FIFO per agent (default) or per coop.
    pub fn fifo(&mut self, fifo: Fifo) -> &mut Self {
        self.fifo = fifo;
        self
    }

    /// Whether agents that message each other stay on one worker (default: on). On, the
    /// agent a handler makes ready runs next on the same worker, out of reach of the other
    /// workers (tokio's LIFO slot) — a ping-pong, a ring or a request chain runs on one
    /// thread, with no wake-up between threads per message — and the worker wakes another
    /// only once it has more ready than it takes next, or before it blocks in agentry's own
    /// waits (a request, a chain receive). The price: an agent made ready by a handler that then blocks in anything
    /// *else* (a `std` channel, a socket, a sleep) waits for that handler to return. Turn it
    /// off for pools whose handlers block that way: every ready agent then wakes an idle
    /// worker at once.
    pub fn affinity(&mut self, on: bool) -> &mut Self {
        self.affinity = on;
        self
    }

    /// Demands a worker takes from one queue before moving to the next (default 32;
    /// [`build`](Self::build) refuses 0).
    pub fn max_demands_at_once(&mut self, n: usize) -> &mut Self {
        self.max_demands_at_once = n;
        self
    }

    /// Checks the settings: a valid name, at least one thread, at least one demand at once.
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        check_name(&self.name)?;
        if self.threads == 0 {
            return Err(BuildError::InvalidSetting(
                "thread_pool: threads must be at least 1",
            ));
        }
        if self.max_demands_at_once == 0 {
            return Err(BuildError::InvalidSetting(
                "thread_pool: max_demands_at_once must be at least 1",
            ));
        }
        Ok(())
    }

    /// Starts the pool's threads (named `agentry-<name>-<i>`).
    pub fn build(&self, env: &impl DispatcherEnv) -> Result<ThreadPoolDispatcher, BuildError> {
        self.build_on(env.host().0)
    }

    /// [`build`](Self::build) on the env's side as the dispatchers see it.
    pub(crate) fn build_on(
        &self,
        host: &dyn DispatcherHost,
    ) -> Result<ThreadPoolDispatcher, BuildError> {
        self.validate()?;
        let pool = Arc::new(Pool::new(
            self.name.clone(),
            host.address(),
            self.threads,
            self.max_demands_at_once,
            self.affinity,
            Arc::clone(host.counters()),
            Arc::downgrade(host.slab()),
        ));
        let deques: Vec<Worker<PoolQueue>> =
            (0..self.threads).map(|_| Worker::new_fifo()).collect();
        pool.set_stealers(deques.iter().map(Worker::stealer).collect());
        for (index, deque) in deques.into_iter().enumerate() {
            let (worker_pool, slab) = (Arc::clone(&pool), Arc::clone(host.slab()));
            let env_address = host.address();
            host.spawn_worker(
                &format!("agentry-{}-{index}", self.name),
                Arc::clone(&pool) as Arc<dyn Closable>,
                Box::new(move || worker::run(worker_pool, index, deque, slab, env_address)),
            )?;
        }
        let core = Arc::new(Core {
            pool,
            fifo: self.fifo,
            bound: AtomicUsize::new(0),
        });
        host.register_dispatcher(Arc::downgrade(&core) as Weak<dyn DispatcherCore>);
        let leases = LeaseSource::new(Arc::clone(&core) as Arc<dyn DispatcherCore>);
        Ok(ThreadPoolDispatcher(core, leases))
    }
}

/// Handle of a `thread_pool` dispatcher.
///
/// ```
/// use agentry::{UserError, Agent, Ctx, Env, disp::ThreadPoolDispatcher};
///
/// struct Worker;
/// impl Agent for Worker {
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> { ctx.stop_env(); Ok(()) }
/// }
///
/// let env = Env::new().expect("env");
/// let pool = ThreadPoolDispatcher::builder("pool").threads(2).build(env.handle()).expect("pool");
/// let mut coop = env.handle().new_coop();
/// coop.add_with(Worker, &pool.binder());
/// env.handle().register_coop(coop).expect("registered");
/// env.run();
/// ```
#[derive(Clone)]
pub struct ThreadPoolDispatcher(Arc<Core>, LeaseSource);

impl ThreadPoolDispatcher {
    /// Settings for a new pool named `name`.
    pub fn builder(name: impl Into<String>) -> ThreadPoolBuilder {
        ThreadPoolBuilder {
            name: name.into(),
            threads: std::thread::available_parallelism().map_or(1, usize::from),
            fifo: Fifo::Agent,
            max_demands_at_once: 32,
            affinity: true,
        }
    }

    /// `builder(name).build(env)`: a pool with the default settings (a thread per available
    /// core, FIFO per agent, affinity on).
    pub fn new(env: &impl DispatcherEnv, name: impl Into<String>) -> Result<Self, BuildError> {
        Self::builder(name).build(env)
    }

    /// A binder for agents that should run on this pool.
    pub fn binder(&self) -> Binder {
        Binder::of(BinderKind::ThreadPool(self.clone()))
    }

    /// The pool's counters.
    pub fn stats(&self) -> DispatcherStats {
        self.0.stats()
    }

    fn address(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    pub(crate) fn prepare(&self, scope: &mut BindScope<'_>) -> Result<PreparedBinding, BindError> {
        let pool = &self.0.pool;
        if pool.env != scope.env.address() {
            return Err(BindError::OtherEnv(pool.name.clone()));
        }
        if pool.is_closed() {
            return Err(BindError::DispatcherShutDown(pool.name.clone()));
        }
        let make = || EventQueue::Pool(PoolQueue::new(AgentQueue::new(Arc::clone(pool))));
        let queue = match self.0.fifo {
            Fifo::Agent => make(),
            Fifo::Coop => scope.shared_queue(self.address(), make),
        };
        Ok(PreparedBinding {
            queue,
            lease: self.1.lease(),
        })
    }
}

impl fmt::Debug for ThreadPoolDispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolDispatcher")
            .field("name", &self.0.pool.name)
            .field("threads", &self.0.pool.threads)
            .field("fifo", &self.0.fifo)
            .finish()
    }
}

#[cfg(test)]
mod tests;
