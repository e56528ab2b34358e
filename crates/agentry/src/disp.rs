//! Dispatchers: which threads run which agents.
//!
//! # Building a dispatcher
//!
//! Every dispatcher is made the same way (the guide's chapter 5 compares them):
//!
//! - `X::builder(name)` returns its builder, `XBuilder` (here, beside the handle); its option
//!   methods take and return `&mut Self`, like [`EnvBuilder`](crate::EnvBuilder)'s, so they
//!   chain;
//! - `builder.build(&env)` checks the settings and starts the dispatcher:
//!   `Result<X, BuildError>`; `env` is an `&EnvHandle` or an `&Env` (a [`DispatcherEnv`]: what
//!   the dispatcher needs of its env is a trait of this layer, `host.rs`, that the env
//!   implements);
//! - `X::new(&env, name)` is `X::builder(name).build(&env)`, for the default settings.
//!
//! | handle | builder | options |
//! |---|---|---|
//! | [`OneThreadDispatcher`] | [`OneThreadBuilder`] | none; [`build_driven`](OneThreadBuilder::build_driven) for a dispatcher run by the caller's event loop ([`Driver`]) |
//! | [`ActiveObjDispatcher`] | [`ActiveObjBuilder`] | none |
//! | [`ActiveGroupDispatcher`] | [`ActiveGroupBuilder`] | none |
//! | [`ThreadPoolDispatcher`] | [`ThreadPoolBuilder`] | `threads`, `fifo` ([`Fifo`]), `affinity`, `max_demands_at_once` |
//! | [`PrioOneThreadDispatcher`] | [`PrioOneThreadBuilder`] | `strictly_ordered` (default), `quoted_round_robin` |
//!
//! (`agentry-net`'s `IoDispatcher` has the same shape.) Building fails with a typed
//! [`BuildError`]: [`InvalidName`](BuildError::InvalidName) for a name that is empty or holds
//! a NUL byte (see [`check_name`]), [`InvalidSetting`](BuildError::InvalidSetting) for an
//! option out of range (no threads, a round-robin quote of 0), and the failures of starting
//! threads. A dispatcher that starts no thread when built (`active_obj`, `active_group`: their
//! threads start as agents are bound) returns a `Result` too, so that the shape is one.
//!
//! ```
//! use agentry::disp::{Fifo, OneThreadDispatcher, PrioOneThreadDispatcher, ThreadPoolDispatcher};
//! use agentry::{BuildError, Env};
//!
//! let env = Env::new().expect("env");
//! let io = OneThreadDispatcher::new(&env, "io")?; // on the `Env` itself, or on a handle:
//! let h = env.handle();
//! let pool = ThreadPoolDispatcher::builder("crunch").threads(2).fifo(Fifo::Coop).build(h)?;
//! let prio = PrioOneThreadDispatcher::builder("control")
//!     .quoted_round_robin([1, 1, 1, 1, 1, 1, 2, 4])
//!     .build(h)?;
//! assert!(matches!(
//!     ThreadPoolDispatcher::builder("none").threads(0).build(h),
//!     Err(BuildError::InvalidSetting(_))
//! ));
//! # drop((io, pool, prio));
//! # Ok::<(), BuildError>(())
//! ```
//!
//! # The seam
//!
//! An agent meets its dispatcher in exactly two places:
//!
//! - its `EventQueue`: where senders push its demands. A dispatcher that runs the queue's
//!   demands on its thread(s) is the only code that touches the agent (see `slab.rs`);
//! - its [`Binder`]: chosen per agent or per coop, it binds in two phases so that coop
//!   registration stays transactional — `prepare` may fail and reserves what the binding
//!   needs, the bind itself (publishing the queue) cannot fail, and dropping a prepared
//!   binding rolls it back.
//!
//! Adding a dispatcher means adding one `EventQueue` variant (static dispatch on the send
//! path), one `Binder` flavour, and a `DispatcherCore` for its lifetime and statistics.
//!
//! # Lifetime
//!
//! A dispatcher lives while its handle or any agent bound to it exists: every bound agent
//! holds a `Lease` on the dispatcher's core (taken in `prepare`, released when the agent's
//! body is dropped or the prepared binding is rolled back). Its threads are joined when the
//! environment shuts down.

mod active_group;
mod active_obj;
mod batch_end;
mod engine;
mod event_lanes;
#[allow(unsafe_code)]
pub(crate) mod execute;
mod host;
mod local_queue;
pub(crate) mod one_thread;
mod prio_one_thread;
pub(crate) mod thread_pool;
mod worker_of;

pub use active_group::{ActiveGroupBuilder, ActiveGroupDispatcher};
pub use active_obj::{ActiveObjBuilder, ActiveObjDispatcher};
pub(crate) use batch_end::batch;
pub use batch_end::{BatchEnd, at_batch_end, run_batch_end_hooks};
pub use engine::Driver;
pub(crate) use engine::serves_a_queue;
pub use host::DispatcherEnv;
pub(crate) use host::DispatcherHost;
pub(crate) use host::sealed::{Host, HostOf};
pub use one_thread::{OneThreadBuilder, OneThreadDispatcher};
pub use prio_one_thread::{PrioOneThreadBuilder, PrioOneThreadDispatcher};

/// Called by agentry's own blocking waits (a request, a chain receive) before the calling
/// thread blocks: a dispatcher thread runs the end-of-batch hooks registered so far
/// (`batch_end.rs`) and hands over what it holds (the pool's affinity).
pub(crate) fn before_blocking() {
    batch_end::run_batch_end_hooks();
    thread_pool::before_blocking();
}
pub use thread_pool::{Fifo, ThreadPoolBuilder, ThreadPoolDispatcher};
pub(crate) use worker_of::{is_worker_of, mark_worker_of, on_a_dispatcher_thread};

use crate::demand::Demand;
use crate::error::{BindError, BuildError};
use crate::priority::Priority;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// Something the environment closes at shutdown so that its threads exit (an engine queue, a
/// thread pool): each dispatcher registers its closer with its env as it is built.
pub(crate) trait Closable: Send + Sync {
    /// Closes it: its threads finish what is queued and exit.
    fn close(&self);
}

/// Where an agent's demands go.
#[derive(Clone)]
pub(crate) enum EventQueue {
    /// A one-thread queue and the agent's lane in it (its priority on a priority dispatcher).
    OneThread(Arc<engine::Queue>, u8),
    Pool(thread_pool::PoolQueue),
}

impl EventQueue {
    /// Queues a demand; gives it back if the dispatcher is shut down.
    #[inline(always)]
    pub(crate) fn push(&self, demand: Demand) -> Result<(), Demand> {
        match self {
            EventQueue::OneThread(q, lane) => q.push(demand, *lane),
            EventQueue::Pool(q) => thread_pool::AgentQueue::push(q, demand),
        }
    }

    /// True if the calling thread is the one that runs this queue's demands (a blocking wait
    /// for one of its agents would never end).
    pub(crate) fn is_served_by_current_thread(&self) -> bool {
        match self {
            EventQueue::OneThread(q, _) => q.is_served_by_current_thread(),
            EventQueue::Pool(q) => q.is_served_by_current_thread(),
        }
    }
}

/// What every dispatcher's core provides: a count of bound agents and its statistics.
pub(crate) trait DispatcherCore: Send + Sync {
    /// Agents currently bound (maintained by [`Lease`]).
    fn bound_agents(&self) -> &AtomicUsize;
    /// A snapshot of the dispatcher's counters.
    fn stats(&self) -> DispatcherStats;
}

/// Keeps a dispatcher alive, and counted as serving one more agent, while an agent is bound.
/// One pointer (every agent's cell keeps one): to its dispatcher's [`LeaseSource`], not to the
/// core itself, which is a `dyn` (two words).
pub(crate) struct Lease(Arc<Arc<dyn DispatcherCore>>);

/// Where a dispatcher's leases come from: its core behind one more pointer, so that a lease is
/// thin. A dispatcher's handles share one (clones of the handle, clones of this).
#[derive(Clone)]
pub(crate) struct LeaseSource(Arc<Arc<dyn DispatcherCore>>);

impl LeaseSource {
    pub(crate) fn new(core: Arc<dyn DispatcherCore>) -> Self {
        LeaseSource(Arc::new(core))
    }

    /// A lease for one more agent.
    pub(crate) fn lease(&self) -> Lease {
        self.0.bound_agents().fetch_add(1, Ordering::Relaxed);
        Lease(Arc::clone(&self.0))
    }

    /// The source, without keeping the dispatcher alive (see [`WeakLeaseSource::upgrade`]).
    pub(crate) fn downgrade(&self) -> WeakLeaseSource {
        WeakLeaseSource(Arc::downgrade(&self.0))
    }
}

/// A [`LeaseSource`] that does not keep its dispatcher alive.
pub(crate) struct WeakLeaseSource(Weak<Arc<dyn DispatcherCore>>);

impl WeakLeaseSource {
    /// True while a handle or a lease keeps the source (and so its dispatcher).
    pub(crate) fn is_live(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// The source, while a handle or a lease keeps it.
    pub(crate) fn upgrade(&self) -> Option<LeaseSource> {
        self.0.upgrade().map(LeaseSource)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.0.bound_agents().fetch_sub(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Lease")
    }
}

/// The first phase of a binding; dropping it rolls the binding back.
pub(crate) struct PreparedBinding {
    pub(crate) queue: EventQueue,
    pub(crate) lease: Lease,
}

/// What the bindings of one coop registration share.
pub(crate) struct BindScope<'a> {
    pub(crate) env: &'a dyn DispatcherHost,
    /// Queues shared by the coop's agents, by dispatcher (FIFO per coop).
    shared: Vec<(usize, EventQueue)>,
}

impl<'a> BindScope<'a> {
    pub(crate) fn new(env: &'a dyn DispatcherHost) -> Self {
        BindScope {
            env,
            shared: Vec::new(),
        }
    }

    /// The queue the coop's agents share on the dispatcher `key`, made on first use.
    pub(crate) fn shared_queue(
        &mut self,
        key: usize,
        make: impl FnOnce() -> EventQueue,
    ) -> EventQueue {
        if let Some((_, q)) = self.shared.iter().find(|(k, _)| *k == key) {
            return q.clone();
        }
        let q = make();
        self.shared.push((key, q.clone()));
        q
    }
}

/// Checks a dispatcher name: non-empty, and without a NUL byte (it names the dispatcher's
/// threads, and a thread name cannot hold one). Every builder checks its name with it, and so
/// does a dispatcher built on agentry outside this crate (`agentry-net`'s io dispatcher).
///
/// ```
/// use agentry::{BuildError, disp::check_name};
///
/// assert!(check_name("io").is_ok());
/// assert!(matches!(check_name(""), Err(BuildError::InvalidName(_))));
/// assert!(matches!(check_name("a\0b"), Err(BuildError::InvalidName(_))));
/// ```
pub fn check_name(name: &str) -> Result<(), BuildError> {
    if name.is_empty() || name.contains('\0') {
        return Err(BuildError::InvalidName(name.to_owned()));
    }
    Ok(())
}

/// The dispatcher of an environment's agents that were given none
/// ([`EnvBuilder::default_dispatcher`](crate::EnvBuilder::default_dispatcher)). It is started
/// when the first agent needs it, so an environment whose agents all run elsewhere starts no
/// thread for it.
///
/// ```
/// use agentry::disp::DefaultDispatcher;
/// use agentry::{Agent, Ctx, Env, UserError};
///
/// struct Hello;
/// impl Agent for Hello {
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
///         ctx.stop_env();
///         Ok(())
///     }
/// }
///
/// let env = Env::builder()
///     .default_dispatcher(DefaultDispatcher::ThreadPool { threads: 2 })
///     .build()
///     .expect("env");
/// assert!(env.handle().dispatcher_stats().is_empty(), "nothing started yet");
/// env.handle().register_agent(Hello).expect("registered");
/// assert_eq!(env.handle().dispatcher_stats()[0].kind, "thread_pool");
/// env.run();
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefaultDispatcher {
    /// One thread for all of them (the default).
    #[default]
    OneThread,
    /// A thread pool of `threads` workers, FIFO per agent.
    ThreadPool {
        /// Worker threads (at least 1: [`EnvBuilder::build`](crate::EnvBuilder::build) refuses
        /// 0).
        threads: usize,
    },
}

impl DefaultDispatcher {
    /// The name of the default dispatcher.
    const NAME: &str = "default";

    /// The builder of the default pool.
    fn pool(threads: usize) -> ThreadPoolBuilder {
        let mut pool = ThreadPoolDispatcher::builder(Self::NAME);
        pool.threads(threads);
        pool
    }

    /// Checks the settings ([`EnvBuilder::build`](crate::EnvBuilder::build)), so that a bad
    /// one fails there rather than at the first registration.
    pub(crate) fn validate(self) -> Result<(), BuildError> {
        match self {
            DefaultDispatcher::OneThread => Ok(()),
            DefaultDispatcher::ThreadPool { threads } => Self::pool(threads).validate(),
        }
    }

    /// Starts the dispatcher; returns its binder.
    pub(crate) fn start(self, host: &dyn DispatcherHost) -> Result<Binder, BuildError> {
        match self {
            DefaultDispatcher::OneThread => OneThreadDispatcher::builder(Self::NAME)
                .build_on(host)
                .map(|d| d.binder()),
            DefaultDispatcher::ThreadPool { threads } => {
                Self::pool(threads).build_on(host).map(|d| d.binder())
            }
        }
    }
}

/// A snapshot of one dispatcher's counters ([`EnvHandle::dispatcher_stats`](crate::EnvHandle::dispatcher_stats)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatcherStats {
    /// The dispatcher's name.
    pub name: String,
    /// Its kind (`"one_thread"`, `"thread_pool"`, …).
    pub kind: &'static str,
    /// Worker threads.
    pub threads: usize,
    /// Agents bound to it.
    pub agents: usize,
    /// Demands its threads have handled.
    pub handled: u64,
    /// Demands waiting in its queues (approximate while senders are active).
    pub queued: usize,
}

/// Binds agents to a dispatcher. Obtained from a dispatcher handle, e.g.
/// [`OneThreadDispatcher::binder`]; pass it to
/// [`Coop::add_with`](crate::Coop::add_with) or [`Coop::set_binder`](crate::Coop::set_binder).
///
/// One pointer: each agent keeps the binder it was bound with (its child coops' default), and a
/// clone shares the binder's kind (one reference count, as cloning a dispatcher handle does).
#[derive(Clone, Debug)]
pub struct Binder(Arc<BinderKind>);

const _: () = assert!(std::mem::size_of::<Binder>() == 8);

#[derive(Debug)]
enum BinderKind {
    /// The default dispatcher of the environment at this address, whatever it is (made on
    /// first use, see [`DefaultDispatcher`]).
    EnvDefault(usize),
    OneThread(one_thread::OneThreadDispatcher),
    ActiveObj(ActiveObjDispatcher),
    /// The dispatcher and the group.
    ActiveGroup(ActiveGroupDispatcher, Arc<str>),
    ThreadPool(thread_pool::ThreadPoolDispatcher),
    Prio(PrioOneThreadDispatcher),
}

impl Binder {
    fn of(kind: BinderKind) -> Self {
        Binder(Arc::new(kind))
    }

    /// The binder of the default dispatcher of the environment at `env` (made once per
    /// environment, `EnvInner::env_default_binder`).
    pub(crate) fn env_default(env: usize) -> Self {
        Binder::of(BinderKind::EnvDefault(env))
    }

    /// Prepares the binding of an agent of priority `priority` (used by priority
    /// dispatchers, ignored by the others).
    pub(crate) fn prepare(
        &self,
        scope: &mut BindScope<'_>,
        priority: Priority,
    ) -> Result<PreparedBinding, BindError> {
        match &*self.0 {
            BinderKind::EnvDefault(env) => {
                if *env != scope.env.address() {
                    return Err(BindError::OtherEnv("default".into()));
                }
                let env = scope.env;
                env.default_dispatcher()?.prepare(scope, priority)
            }
            BinderKind::OneThread(d) => d.prepare(scope, priority),
            BinderKind::ActiveObj(d) => d.prepare(scope),
            BinderKind::ActiveGroup(d, group) => d.prepare(scope, group),
            BinderKind::ThreadPool(d) => d.prepare(scope),
            BinderKind::Prio(d) => d.prepare(scope, priority),
        }
    }
}

#[cfg(test)]
mod tests;
