//! The `one_thread` dispatcher (the default): all its agents run on one worker thread — an
//! engine queue (`disp/engine.rs`, which states the ground rules) and the thread that serves
//! it. `active_obj`, `active_group` and the priority dispatchers are made of these.

use super::engine::worker_thread;
use super::engine::{Driver, Policy, Queue};
use super::{
    BindScope, Binder, BinderKind, Closable, DispatcherCore, DispatcherEnv, DispatcherHost,
    DispatcherStats, EventQueue, LeaseSource, PreparedBinding, WeakLeaseSource, check_name,
};
use crate::error::{BindError, BuildError};
use crate::priority::Priority;
use crate::sync::parker::Parker;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

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
            name: self.queue.name().to_owned(),
            kind: self.kind,
            threads: 1,
            agents: self.bound.load(Ordering::Relaxed),
            handled: self.queue.handled(),
            queued: self.queue.queued(),
        }
    }
}

/// Settings of a `one_thread` dispatcher ([`OneThreadDispatcher::builder`]): only its name.
/// [`build`](Self::build) fails only if the name is invalid or the thread cannot start.
///
/// A driven dispatcher, served by the calling thread:
///
/// ```
/// use agentry::{Agent, Ctx, Define, DefineError, Env, disp::OneThreadDispatcher};
///
/// struct Ping;
/// struct Counter(u32);
/// impl Agent for Counter {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|c: &mut Counter, _: &mut Ctx<Counter>, _: Ping| c.0 += 1)?;
///         Ok(())
///     }
/// }
///
/// let env = Env::builder().autoshutdown(false).build().expect("env");
/// let (disp, mut driver) = OneThreadDispatcher::builder("loop")
///     .build_driven(env.handle(), || {})
///     .expect("driven dispatcher");
/// let mut coop = env.handle().new_coop();
/// let counter = coop.add_with(Counter(0), &disp.binder());
/// env.handle().register_coop(coop).expect("registered");
/// counter.send(Ping);
/// while driver.run() > 0 {}
/// assert_eq!(disp.stats().handled, 2, "the agent's start and its message, on this thread");
/// ```
#[derive(Clone, Debug)]
pub struct OneThreadBuilder {
    name: String,
}

impl OneThreadBuilder {
    /// Starts the dispatcher's thread (named `agentry-<name>`).
    pub fn build(&self, env: &impl DispatcherEnv) -> Result<OneThreadDispatcher, BuildError> {
        self.build_on(env.host().0)
    }

    /// [`build`](Self::build) on the env's side as the dispatchers see it.
    pub(crate) fn build_on(
        &self,
        host: &dyn DispatcherHost,
    ) -> Result<OneThreadDispatcher, BuildError> {
        check_name(&self.name)?;
        OneThreadDispatcher::spawn(host, self.name.clone(), "one_thread", Policy::Fifo)
    }

    /// Builds a dispatcher whose thread is the caller's: an event loop on the calling thread
    /// serves its agents through the returned [`Driver`], and `wake` (which must make the
    /// loop's blocking call return — e.g. `mio::Waker::wake`) is called when demands arrive
    /// while the loop blocks. Fails with [`BuildError::ThreadBusy`] if the calling thread
    /// already serves a dispatcher.
    pub fn build_driven(
        &self,
        env: &impl DispatcherEnv,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Result<(OneThreadDispatcher, Driver), BuildError> {
        check_name(&self.name)?;
        let host = env.host().0;
        let parker = Parker::with_callback(Box::new(wake));
        let queue = Arc::new(Queue::new(
            host.address(),
            host.counters(),
            host.slab(),
            self.name.clone(),
            Policy::Fifo,
            parker,
        ));
        let driver = Driver::claim(Arc::clone(&queue))?;
        host.register_closer(Arc::clone(&queue) as Arc<dyn Closable>);
        Ok((
            OneThreadDispatcher::with_queue(host, queue, "driven"),
            driver,
        ))
    }
}

/// Handle of a `one_thread` dispatcher: one worker thread for all its agents.
///
/// The dispatcher lives while a handle or a bound agent exists; its thread is joined when the
/// environment shuts down.
///
/// ```
/// use agentry::{UserError, Agent, Ctx, Env, disp::OneThreadDispatcher};
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
pub struct OneThreadDispatcher(Arc<Core>, LeaseSource);

impl OneThreadDispatcher {
    /// Settings for a new dispatcher named `name` (it has none but its name; see
    /// [`OneThreadBuilder::build_driven`] for a dispatcher run by the caller's event loop).
    pub fn builder(name: impl Into<String>) -> OneThreadBuilder {
        OneThreadBuilder { name: name.into() }
    }

    /// `builder(name).build(env)`: starts a dispatcher thread named `agentry-<name>`.
    pub fn new(env: &impl DispatcherEnv, name: impl Into<String>) -> Result<Self, BuildError> {
        Self::builder(name).build(env)
    }

    /// Starts a one-thread dispatcher of the given kind (`active_obj`, `active_group` and the
    /// priority dispatchers are made of these).
    pub(crate) fn spawn(
        host: &dyn DispatcherHost,
        name: String,
        kind: &'static str,
        policy: Policy,
    ) -> Result<Self, BuildError> {
        let queue = Arc::new(Queue::new(
            host.address(),
            host.counters(),
            host.slab(),
            name.clone(),
            policy,
            Parker::new(),
        ));
        let worker_queue = Arc::clone(&queue);
        let env_address = host.address();
        host.spawn_worker(
            &format!("agentry-{name}"),
            Arc::clone(&queue) as Arc<dyn Closable>,
            Box::new(move || worker_thread::run(worker_queue, env_address)),
        )?;
        Ok(Self::with_queue(host, queue, kind))
    }

    fn with_queue(host: &dyn DispatcherHost, queue: Arc<Queue>, kind: &'static str) -> Self {
        let core = Arc::new(Core {
            queue,
            kind,
            bound: AtomicUsize::new(0),
        });
        host.register_dispatcher(Arc::downgrade(&core) as Weak<dyn DispatcherCore>);
        let leases = LeaseSource::new(Arc::clone(&core) as Arc<dyn DispatcherCore>);
        OneThreadDispatcher(core, leases)
    }

    /// The dispatcher, without keeping it alive: a group of `active_group` is kept by its
    /// agents' leases only.
    pub(crate) fn downgrade(&self) -> WeakOneThread {
        WeakOneThread(Arc::downgrade(&self.0), self.1.downgrade())
    }

    /// A binder for agents that should run on this dispatcher.
    pub fn binder(&self) -> Binder {
        Binder::of(BinderKind::OneThread(self.clone()))
    }

    /// The dispatcher's name.
    pub fn name(&self) -> &str {
        self.0.queue.name()
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
        if !self.0.queue.belongs_to(scope.env.address()) {
            return Err(BindError::OtherEnv(self.0.queue.name().to_owned()));
        }
        if self.0.queue.is_closed() {
            return Err(BindError::DispatcherShutDown(
                self.0.queue.name().to_owned(),
            ));
        }
        Ok(PreparedBinding {
            queue: EventQueue::OneThread(Arc::clone(&self.0.queue), self.0.queue.lane_of(priority)),
            lease: self.1.lease(),
        })
    }
}

/// A [`OneThreadDispatcher`] that does not keep its thread alive.
pub(crate) struct WeakOneThread(Weak<Core>, WeakLeaseSource);

impl WeakOneThread {
    /// True while a handle or an agent's lease keeps the dispatcher (every one holds its
    /// lease source); takes no reference, unlike [`upgrade`](Self::upgrade).
    pub(crate) fn is_live(&self) -> bool {
        self.1.is_live()
    }

    /// The dispatcher, while a handle or an agent's lease keeps it.
    pub(crate) fn upgrade(&self) -> Option<OneThreadDispatcher> {
        Some(OneThreadDispatcher(self.0.upgrade()?, self.1.upgrade()?))
    }
}

impl fmt::Debug for OneThreadDispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OneThreadDispatcher")
            .field("name", &self.0.queue.name())
            .finish()
    }
}
