//! The environment: owns the agents, coops, dispatchers and named mboxes of one application.
//!
//! [`Env`] is the owner (dropping it stops and joins everything); [`EnvHandle`] is the cheap
//! clone every thread and agent uses.
//!
//! # Shutdown protocol
//!
//! 1. `stop()` (from any thread or agent): the environment enters *stopping* and calls every
//!    [`StopGuard`]. Coops keep running; new coops may still be registered.
//! 2. When the last guard is removed, it enters *shutting down*: every root coop is
//!    deregistered with [`DeregReason::Shutdown`] (children first, as always); new
//!    registrations fail with [`RegisterError::EnvStopped`].
//! 3. When the last coop is gone it is *stopped*: [`Env::run`] returns (after closing the
//!    dispatchers and joining their threads).
//!
//! With autoshutdown (the default) the environment also stops by itself when its last coop
//! is deregistered, or at `run()` if no coop was ever registered.

mod builder;
mod ctx;
mod register;
mod watches;

pub use builder::EnvBuilder;

use crate::agent::Addr;
use crate::agent::Agent;
use crate::agent::define::DefinitionCheck;
use crate::agent::protocol::Protocol;
use crate::coop::Coop;
use crate::coop::registry::{Actions, Registry};
use crate::destination::Destination;
use crate::destination::sealed::Timed;
use crate::disp::OneThreadDispatcher;
use crate::disp::{
    Binder, DefaultDispatcher, DispatcherCore, DispatcherHost, DispatcherStats, Host, HostOf,
    check_name,
};
use crate::disp::{Closable, Driver, is_worker_of};
use crate::error::{
    BindError, BuildError, DeregisterError, NameError, RegisterError, StopGuardError, TraceError,
};
use crate::ids::{AgentId, CoopId, MboxId};
use crate::mbox::class::AgentClasses;
use crate::mbox::direct::{AgentHost, AgentShared};
use crate::mbox::named::NamedMboxes;
use crate::mbox::{Mbox, MultiMbox};
use crate::panic_reaction::PanicReaction;
use crate::reason::DeregReason;
use crate::slab::AgentSlab;
use crate::stats::{AgentStats, AgentTypeStats, EnvCounters, EnvStats, Tracked};
use crate::supervision::SupervisorStats;
use crate::timer::{Clock, EngineKind, TimerHandle, TimerService};
use crate::trace::TraceFilter;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Something that must finish before the environment shuts down (e.g. flushing a log,
/// closing connections gracefully). Added with [`EnvHandle::add_stop_guard`].
pub trait StopGuard: Send + Sync {
    /// Called once when the environment starts stopping; call
    /// [`EnvHandle::remove_stop_guard`] when done.
    fn stop(&self);
}

/// Identifies an added [`StopGuard`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StopGuardId(u64);

const RUNNING: u8 = 0;
const STOPPING: u8 = 1;
const SHUTTING_DOWN: u8 = 2;
const STOPPED: u8 = 3;

struct Lifecycle {
    guards: HashMap<u64, Arc<dyn StopGuard>>,
    next_guard: u64,
}

struct WorkerThread {
    closer: Arc<dyn Closable>,
    /// `None` for a driven dispatcher (its thread is not ours to join).
    join: Option<JoinHandle<()>>,
}

pub(crate) struct Config {
    pub(crate) panic_reaction: PanicReaction,
    pub(crate) autoshutdown: bool,
    pub(crate) timer_engine: EngineKind,
    pub(crate) clock: Clock,
    /// How every agent is observed (`trace.rs`, `agent/cell.rs`).
    pub(crate) observe: crate::agent::cell::Observe,
    /// Track every agent's queue depth.
    pub(crate) queue_depth: bool,
    /// How many handler runs of the timed agents are timed.
    pub(crate) handler_sampling: crate::stats::HandlerSampling,
    /// What agents given no dispatcher run on (made on first use).
    pub(crate) default_dispatcher: DefaultDispatcher,
    /// The trace-context hook (`trace/context.rs`).
    pub(crate) propagation: Option<crate::trace::context::Propagation>,
}

pub(crate) struct EnvInner {
    pub(crate) slab: Arc<AgentSlab>,
    pub(crate) counters: Arc<EnvCounters>,
    pub(crate) registry: Mutex<Registry>,
    ever_registered: std::sync::atomic::AtomicBool,
    names: NamedMboxes,
    phase: AtomicU8,
    lifecycle: Mutex<Lifecycle>,
    stopped: Condvar,
    workers: Mutex<Vec<WorkerThread>>,
    dispatchers: Mutex<Vec<Weak<dyn DispatcherCore>>>,
    /// The binder of the default dispatcher, once it is made (`default_dispatcher`): read
    /// without a lock by every registration that binds to it.
    default: OnceLock<Binder>,
    /// Held while the default dispatcher is made, so that it is made once.
    making_default: Mutex<()>,
    /// The binder that means "this environment's default dispatcher, whatever it is" (one per
    /// environment: the coops that bind to it share it).
    env_default_binder: OnceLock<Binder>,
    pub(crate) timers: Arc<TimerService>,
    /// The agents' classes, one per agent type (`mbox/class.rs`).
    classes: AgentClasses,
    config: Config,
}

/// The way of the mboxes (`mbox/direct.rs`, on their rare paths only) and of the coop builder
/// to their environment.
impl AgentHost for EnvInner {
    fn agent_slab(&self) -> &AgentSlab {
        &self.slab
    }

    fn counters(&self) -> &Arc<EnvCounters> {
        &self.counters
    }

    fn agent_classes(&self) -> &AgentClasses {
        &self.classes
    }

    fn agent_left(self: Arc<Self>, coop: CoopId, agent: &AgentShared) {
        self.agent_finished(coop, agent);
    }

    fn react_to_agent_panic(self: Arc<Self>, reaction: PanicReaction, coop: CoopId) {
        EnvInner::react_to_panic(&self, reaction, coop);
    }

    fn deregister_for_agent(self: Arc<Self>, coop: CoopId, reason: DeregReason) {
        // Already deregistering is fine: the coop is on its way out either way.
        let _ = EnvInner::deregister(&self, coop, reason);
    }

    fn watcher_gone(&self, watcher: MboxId) {
        self.drop_watches_of(watcher);
    }

    fn position_in_coop(&self, coop: CoopId, agent: MboxId) -> usize {
        self.registry
            .lock()
            .agents_of(coop)
            .iter()
            .position(|a| a.mbox_id == agent)
            .expect("invariant: an agent's coop is registered until the agent has finished")
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// The way of the dispatchers (`disp/host.rs`) to their environment.
impl DispatcherHost for EnvInner {
    fn address(&self) -> usize {
        EnvInner::address(self)
    }

    fn counters(&self) -> &Arc<EnvCounters> {
        &self.counters
    }

    fn slab(&self) -> &Arc<AgentSlab> {
        &self.slab
    }

    /// Spawns a dispatcher thread; at shutdown `closer` is closed and the thread joined.
    ///
    /// Threads that have already ended (an `active_obj` agent's thread after the agent left)
    /// are joined here, so that a long-lived environment creating and dropping such
    /// dispatchers does not keep their stacks until shutdown.
    fn spawn_worker(
        &self,
        name: &str,
        closer: Arc<dyn Closable>,
        body: Box<dyn FnOnce() + Send>,
    ) -> Result<(), BuildError> {
        // std panics on a thread name with a NUL; an `active_group`'s group names reach here
        // unchecked.
        check_name(name)?;
        let mut workers = self.workers.lock();
        if self.phase() == STOPPED {
            return Err(BuildError::EnvStopped);
        }
        workers.retain_mut(|w| match w.join.take_if(|j| j.is_finished()) {
            Some(ended) => {
                if ended.join().is_err() {
                    tracing::error!("a dispatcher thread ended with a panic");
                }
                false
            }
            None => true,
        });
        let join = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(body)?;
        workers.push(WorkerThread {
            closer,
            join: Some(join),
        });
        Ok(())
    }

    /// Closes `closer` at shutdown (a dispatcher whose thread the environment did not start).
    fn register_closer(&self, closer: Arc<dyn Closable>) {
        self.workers
            .lock()
            .push(WorkerThread { closer, join: None });
    }

    /// The binder of the default dispatcher, made (and its threads started) on first use.
    fn default_dispatcher(&self) -> Result<&Binder, BindError> {
        if let Some(binder) = self.default.get() {
            return Ok(binder);
        }
        let _making = self.making_default.lock();
        if let Some(binder) = self.default.get() {
            return Ok(binder);
        }
        let made = self.config.default_dispatcher.start(self);
        let binder = made.map_err(|e| match e {
            BuildError::EnvStopped => BindError::DispatcherShutDown("default".into()),
            other => BindError::Spawn(other.to_string()),
        })?;
        // Unset: it is set only here, under `making_default`, and by a driven env before any
        // registration.
        Ok(self.default.get_or_init(|| binder))
    }

    /// Records a dispatcher for [`EnvHandle::dispatcher_stats`].
    fn register_dispatcher(&self, core: Weak<dyn DispatcherCore>) {
        let mut dispatchers = self.dispatchers.lock();
        dispatchers.retain(|d| d.strong_count() > 0);
        dispatchers.push(core);
    }
}

impl EnvInner {
    fn new(config: Config) -> Self {
        let counters = Arc::new(EnvCounters::new(
            config.observe.trace.clone(),
            config.propagation.clone(),
        ));
        EnvInner {
            slab: Arc::new(AgentSlab::new::<AgentShared>()),
            counters: Arc::clone(&counters),
            registry: Mutex::new(Registry::default()),
            ever_registered: std::sync::atomic::AtomicBool::new(false),
            names: NamedMboxes::default(),
            phase: AtomicU8::new(RUNNING),
            lifecycle: Mutex::new(Lifecycle {
                guards: HashMap::new(),
                next_guard: 1,
            }),
            stopped: Condvar::new(),
            workers: Mutex::new(Vec::new()),
            dispatchers: Mutex::new(Vec::new()),
            default: OnceLock::new(),
            making_default: Mutex::new(()),
            env_default_binder: OnceLock::new(),
            timers: TimerService::new(
                config.timer_engine,
                config.clock.clone(),
                Arc::clone(&counters),
            ),
            classes: AgentClasses::default(),
            config,
        }
    }

    pub(crate) fn address(&self) -> usize {
        self as *const EnvInner as usize
    }

    /// The binder of this environment's default dispatcher (see `env_default_binder`).
    pub(crate) fn env_default_binder(&self) -> Binder {
        self.env_default_binder
            .get_or_init(|| Binder::env_default(self.address()))
            .clone()
    }

    fn phase(&self) -> u8 {
        self.phase.load(Ordering::Acquire)
    }

    fn deregister(
        self: &Arc<Self>,
        id: CoopId,
        reason: DeregReason,
    ) -> Result<(), DeregisterError> {
        let actions = self.registry.lock().begin_deregistration(id, reason)?;
        self.perform(actions);
        Ok(())
    }

    pub(crate) fn agent_finished(self: &Arc<Self>, coop: CoopId, agent: &AgentShared) {
        let actions = self.registry.lock().agent_finished(coop, agent);
        self.perform(actions);
    }

    fn perform(self: &Arc<Self>, mut actions: Actions) {
        // Most agents that finish leave nothing to do (all but the last of their coop).
        if actions.is_empty() {
            return;
        }
        watches::notify(&mut actions);
        // Listeners first: a coop's listeners have run before its parent is told to finish
        // (so before the parent's own listeners can run).
        for (listeners, event) in actions.notify {
            for l in listeners {
                l.notify(event);
            }
        }
        for shared in actions.finish {
            // An agent that stopped itself has its finish demand queued already.
            shared.finish();
        }
        if actions.became_empty {
            self.registry_became_empty();
        }
    }

    fn registry_became_empty(self: &Arc<Self>) {
        match self.phase() {
            SHUTTING_DOWN => self.mark_stopped(),
            RUNNING if self.config.autoshutdown => self.stop(),
            _ => {}
        }
    }

    pub(crate) fn react_to_panic(self: &Arc<Self>, reaction: PanicReaction, coop: CoopId) {
        match reaction {
            PanicReaction::Ignore => {}
            // `Supervise` reaches here only for an agent without a supervisor.
            PanicReaction::DeregisterCoop | PanicReaction::Supervise => {
                let _ = self.deregister(coop, DeregReason::Panic);
            }
            PanicReaction::ShutdownEnv => self.stop(),
            PanicReaction::Abort => {
                eprintln!("agentry: a handler panicked and the panic reaction is Abort");
                std::process::abort();
            }
        }
    }

    pub(crate) fn stop(self: &Arc<Self>) {
        let guards: Vec<Arc<dyn StopGuard>> = {
            let lifecycle = self.lifecycle.lock();
            if self.phase() != RUNNING {
                return;
            }
            self.phase.store(STOPPING, Ordering::Release);
            lifecycle.guards.values().cloned().collect()
        };
        for g in guards {
            if catch_unwind(AssertUnwindSafe(|| g.stop())).is_err() {
                self.counters.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!("stop guard panicked");
            }
        }
        self.shut_down_if_unguarded();
    }

    fn shut_down_if_unguarded(self: &Arc<Self>) {
        {
            let lifecycle = self.lifecycle.lock();
            if self.phase() != STOPPING || !lifecycle.guards.is_empty() {
                return;
            }
            self.phase.store(SHUTTING_DOWN, Ordering::Release);
        }
        let roots = self.registry.lock().roots();
        for root in roots {
            // Coops already leaving keep their own reason.
            let _ = self.deregister(root, DeregReason::Shutdown);
        }
        if self.registry.lock().is_empty() {
            self.mark_stopped();
        }
    }

    fn mark_stopped(&self) {
        let _lifecycle = self.lifecycle.lock();
        if self.phase() == SHUTTING_DOWN {
            self.phase.store(STOPPED, Ordering::Release);
            self.stopped.notify_all();
        }
    }

    /// Blocks until stopped or `deadline`; true if stopped.
    fn wait_stopped_until(&self, deadline: Instant) -> bool {
        if is_worker_of(self.address()) {
            tracing::error!("an environment was run on one of its own worker threads; not waiting");
            return true;
        }
        let mut lifecycle = self.lifecycle.lock();
        while self.phase() != STOPPED {
            if self
                .stopped
                .wait_until(&mut lifecycle, deadline)
                .timed_out()
            {
                return self.phase() == STOPPED;
            }
        }
        true
    }

    /// Blocks until stopped, then closes every dispatcher and joins its thread.
    fn wait_and_join(self: &Arc<Self>) {
        if is_worker_of(self.address()) {
            tracing::error!(
                "an environment was run or dropped on one of its own worker threads; not waiting"
            );
            return;
        }
        {
            let mut lifecycle = self.lifecycle.lock();
            while self.phase() != STOPPED {
                self.stopped.wait(&mut lifecycle);
            }
        }
        // No coop is left to receive timer messages: stop the timer thread first.
        self.timers.shut_down();
        if !self.timers.join() {
            tracing::error!("the timer thread panicked");
        }
        let workers = std::mem::take(&mut *self.workers.lock());
        for w in &workers {
            w.closer.close();
        }
        for w in workers {
            if let Some(join) = w.join
                && join.join().is_err()
            {
                tracing::error!("a dispatcher thread panicked");
            }
        }
    }
}

/// A cheap, cloneable handle to an environment, usable from any thread.
#[derive(Clone)]
pub struct EnvHandle(Arc<EnvInner>);

impl EnvHandle {
    pub(crate) fn inner(&self) -> &Arc<EnvInner> {
        &self.0
    }

    /// The env of the agent whose shared part is `agent` (its class holds the env weakly):
    /// how a `Ctx`, which keeps no env, reaches it. An agent's handlers and hooks run only
    /// while its env lives (`Env`'s drop stops it and waits for every agent to finish).
    pub(crate) fn of(agent: &AgentShared) -> EnvHandle {
        let host = agent
            .env()
            .expect("invariant: an agent's handlers and hooks run while its env lives");
        EnvHandle(
            host.into_any()
                .downcast::<EnvInner>()
                .expect("invariant: the env is the one AgentHost"),
        )
    }

    /// A new, empty coop of this environment.
    pub fn new_coop(&self) -> Coop {
        Coop::new(Arc::clone(&self.0) as Arc<dyn AgentHost>)
    }

    /// Registers `coop` as one transaction: every agent is defined, bound, subscribed and
    /// started, or the coop is rolled back and no agent of it handles a message.
    ///
    /// Starting is the last step: each agent's `on_start` runs on its dispatcher, and no agent
    /// of the coop handles a message before all have started. On a thread that is not a
    /// dispatcher thread this call waits for the starts: `Ok` once every agent has started,
    /// [`RegisterError::Start`] (naming the agent and why) once a failed coop is gone — the
    /// agents that had started have finished by then. On a dispatcher thread (in a handler)
    /// it cannot wait — a start may need this very thread — so it returns once the coop is
    /// committed, and a failed start is reported as the coop's deregistration with
    /// [`DeregReason::StartFailed`] (to its listeners and watchers). Earlier steps fail
    /// synchronously everywhere ([`RegisterError::Define`], `Bind`, ...) and register nothing.
    pub fn register_coop(&self, coop: Coop) -> Result<CoopId, RegisterError> {
        self.0.register(coop)
    }

    /// Registers a coop holding just `agent`; returns the agent's mbox (as
    /// [`register_coop`](Self::register_coop) with a coop of one agent, without building one).
    pub fn register_agent<A: Agent>(&self, agent: A) -> Result<Mbox, RegisterError> {
        self.0
            .register_alone(None, None, None, agent, DefinitionCheck::Unchecked)
    }

    /// Registers a coop holding just `agent`; returns the agent's typed address (see
    /// [`Coop::add_addr`]).
    pub fn register_agent_addr<A: Protocol>(&self, agent: A) -> Result<Addr<A>, RegisterError> {
        self.0
            .register_alone(None, None, None, agent, DefinitionCheck::protocol())
            .map(Addr::new)
    }

    /// Starts deregistering a coop (children first). Returns immediately.
    pub fn deregister_coop(
        &self,
        coop: CoopId,
        reason: DeregReason,
    ) -> Result<(), DeregisterError> {
        self.0.deregister(coop, reason)
    }

    /// Starts stopping the environment (see the shutdown protocol). Returns immediately;
    /// calling it again does nothing.
    pub fn stop(&self) {
        self.0.stop();
    }

    /// True once the environment has fully stopped.
    pub fn is_stopped(&self) -> bool {
        self.0.phase() == STOPPED
    }

    /// A new anonymous multi mbox.
    pub fn create_mbox(&self) -> MultiMbox {
        MultiMbox::new(None, Arc::clone(&self.0.counters))
    }

    /// The multi mbox named `name`, created on first use.
    pub fn named_mbox(&self, name: &str) -> Result<MultiMbox, NameError> {
        self.0.names.multi(name, &self.0.counters)
    }

    /// Publishes an agent's direct mbox under `name` (e.g. a service others send requests
    /// to). Publishing the same mbox again is fine; another mbox under a taken name is
    /// [`NameError::Taken`], a name of a named multi mbox [`NameError::KindMismatch`].
    pub fn publish(&self, name: &str, mbox: &Mbox) -> Result<(), NameError> {
        self.0.names.publish(name, mbox)
    }

    /// The direct mbox published under `name`.
    pub fn lookup(&self, name: &str) -> Option<Mbox> {
        self.0.names.lookup(name)
    }

    /// Removes a name (of a published or a named multi mbox). Returns true if it existed.
    pub fn unpublish(&self, name: &str) -> bool {
        self.0.names.unpublish(name)
    }

    /// The direct mbox of the live agent `id`, if it still exists.
    pub fn mbox_of(&self, id: AgentId) -> Option<Mbox> {
        self.0.slab.lookup(id).map(Mbox::from_shared)
    }

    /// Adds a stop guard; fails if the environment is already stopping.
    pub fn add_stop_guard(&self, guard: Arc<dyn StopGuard>) -> Result<StopGuardId, StopGuardError> {
        let mut lifecycle = self.0.lifecycle.lock();
        if self.0.phase() != RUNNING {
            return Err(StopGuardError::EnvStopping);
        }
        let id = lifecycle.next_guard;
        lifecycle.next_guard += 1;
        lifecycle.guards.insert(id, guard);
        Ok(StopGuardId(id))
    }

    /// Removes a stop guard; the last one removed while stopping lets shutdown proceed.
    /// Returns true if it was present.
    pub fn remove_stop_guard(&self, id: StopGuardId) -> bool {
        let removed = self.0.lifecycle.lock().guards.remove(&id.0).is_some();
        if removed {
            self.0.shut_down_if_unguarded();
        }
        removed
    }

    /// A snapshot of the environment's counters.
    pub fn stats(&self) -> EnvStats {
        let (coops, watches) = {
            let registry = self.0.registry.lock();
            (registry.len(), registry.watches.len())
        };
        let mut stats = self
            .0
            .counters
            .snapshot(coops, self.0.slab.live(), self.0.timers.len());
        stats.watches = watches;
        let memory = crate::sync::blocks::usage();
        stats.agent_memory_reserved = memory.reserved;
        stats.agent_memory_idle = memory.idle;
        stats
    }

    /// The counters of every agent type the environment has had, summed per type
    /// ([`AgentTypeStats`]), sorted by type name. Read-only and off every message path: it
    /// visits each agent slot once (a lock per slot), so it costs time in proportion to the
    /// agents, for dashboards and exporters rather than hot loops.
    ///
    /// Each total is exact once the agents it counts are quiet; one read while an agent's
    /// last mbox is being dropped may miss that agent's counts (they are in the next read).
    pub fn agent_type_stats(&self) -> Vec<AgentTypeStats> {
        let agents = self.0.slab.agents_for_report::<AgentShared>();
        let mut types = BTreeMap::new();
        fn entry<'a>(
            types: &'a mut BTreeMap<&'static str, AgentTypeStats>,
            agent_type: &'static str,
        ) -> &'a mut AgentTypeStats {
            types.entry(agent_type).or_insert(AgentTypeStats {
                agent_type,
                agents: 0,
                totals: AgentStats::default(),
            })
        }
        for (shared, live) in &agents {
            let t = entry(&mut types, shared.agent_type());
            t.agents += usize::from(*live);
            let mut stats = Mbox::from_shared(Arc::clone(shared)).stats();
            if !*live {
                stats.queue_depth = Tracked::NotTracked;
            }
            t.totals.accumulate(&stats);
        }
        // Read while `agents` holds every shared part it saw, so none of them can retire
        // (and be counted twice) meanwhile.
        for class in self.0.classes.all() {
            entry(&mut types, class.agent_type)
                .totals
                .accumulate(&class.retired.lock());
        }
        drop(agents);
        types.into_values().collect()
    }

    /// A snapshot of the counters of the supervisor of `coop`, if `coop` is registered and
    /// supervises ([`Coop::supervise`]).
    pub fn supervisor_stats(&self, coop: CoopId) -> Option<SupervisorStats> {
        let registry = self.0.registry.lock();
        let stats = registry.supervisor_of(coop)?.stats.lock().clone();
        Some(stats)
    }

    /// Replaces the message-trace filter (records made from now on are checked against it).
    /// [`TraceError::Disabled`] if the environment was built without
    /// [`EnvBuilder::msg_tracing`].
    pub fn set_msg_trace_filter(&self, filter: TraceFilter) -> Result<(), TraceError> {
        let sink = self.0.counters.trace.as_ref().ok_or(TraceError::Disabled)?;
        sink.set_filter(filter);
        Ok(())
    }

    /// The trace-context hook installed with
    /// [`EnvBuilder::trace_context`](crate::EnvBuilder::trace_context), if any: what a
    /// transport asks for the context a message it sends out of the process carries
    /// ([`trace::current_context`](crate::trace::current_context)).
    pub fn trace_context_hook(&self) -> Option<Arc<dyn crate::trace::ContextPropagation>> {
        self.0
            .counters
            .propagation
            .as_ref()
            .map(|p| Arc::clone(&p.0))
    }

    /// Sends `message` to `to` — an [`Mbox`], a [`MultiMbox`] or an
    /// [`Mchain`](crate::mchain::Mchain) — after `delay`. Dropping the returned handle cancels it.
    ///
    /// # Panics
    ///
    /// The environment's first timer starts its timer thread: if the thread cannot be
    /// spawned (the process is out of threads or memory), this panics with the reason, as
    /// `std::thread::spawn` does. The same holds for every way of starting a timer.
    pub fn send_delayed<M: Send + 'static>(
        &self,
        to: &(impl Destination<M> + Clone),
        delay: Duration,
        message: M,
    ) -> TimerHandle {
        let to = to.clone();
        let mut message = Some(message);
        self.0.timers.schedule(
            delay,
            None,
            Box::new(move |token| {
                if let Some(m) = message.take() {
                    to.send_timed(m, Timed(token));
                }
            }),
        )
    }

    /// Sends a clone of `message` to `to` (any [`Destination`]) after `delay`, then every
    /// `period` (fixed rate).
    pub fn send_periodic<M: Clone + Send + 'static>(
        &self,
        to: &(impl Destination<M> + Clone),
        delay: Duration,
        period: Duration,
        message: M,
    ) -> TimerHandle {
        let to = to.clone();
        self.0.timers.schedule(
            delay,
            Some(period),
            Box::new(move |token| to.send_timed(message.clone(), Timed(token))),
        )
    }

    /// The counters of every live dispatcher of the environment.
    pub fn dispatcher_stats(&self) -> Vec<DispatcherStats> {
        self.0
            .dispatchers
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .map(|d| d.stats())
            .collect()
    }

    /// The binder of the environment's default dispatcher
    /// ([`EnvBuilder::default_dispatcher`], `one_thread` unless chosen otherwise; started when
    /// the first agent is bound to it).
    pub fn default_binder(&self) -> Binder {
        self.0.env_default_binder()
    }
}

impl fmt::Debug for EnvHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvHandle")
            .field("phase", &self.0.phase())
            .finish_non_exhaustive()
    }
}

/// The owner of an environment. [`run`](Env::run) blocks until it stops; dropping it stops
/// it and waits.
pub struct Env {
    handle: EnvHandle,
}

/// Dispatchers are built on an env (`X::builder(name).build(env.handle())`): they reach it as
/// a [`DispatcherHost`].
impl HostOf for EnvHandle {
    fn host(&self) -> Host<'_> {
        Host(&*self.0)
    }
}

/// `X::builder(name).build(&env)`: the same as on its handle.
impl HostOf for Env {
    fn host(&self) -> Host<'_> {
        self.handle.host()
    }
}

/// For code built on agentry that takes either (`agentry-net`'s `IoDispatcher::build`).
impl AsRef<EnvHandle> for EnvHandle {
    fn as_ref(&self) -> &EnvHandle {
        self
    }
}

/// [`Env::handle`].
impl AsRef<EnvHandle> for Env {
    fn as_ref(&self) -> &EnvHandle {
        &self.handle
    }
}

impl Env {
    /// An environment with the default settings.
    pub fn new() -> Result<Env, BuildError> {
        Env::builder().build()
    }

    /// A builder for an environment with custom settings.
    pub fn builder() -> EnvBuilder {
        EnvBuilder::default()
    }

    fn from_config(config: Config) -> Result<Env, BuildError> {
        config.default_dispatcher.validate()?;
        let handle = EnvHandle(Arc::new(EnvInner::new(config)));
        Ok(Env { handle })
    }

    /// An environment whose default dispatcher is driven by the calling thread (the testing
    /// kit): every agent registered without a binder runs when the returned [`Driver`] runs.
    pub(crate) fn from_config_driven(
        config: Config,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Result<(Env, Driver), BuildError> {
        let handle = EnvHandle(Arc::new(EnvInner::new(config)));
        let (default, driver) =
            OneThreadDispatcher::builder("default").build_driven(&handle, wake)?;
        let unset = handle.0.default.set(default.binder()).is_ok();
        debug_assert!(unset, "a new env has no default dispatcher yet");
        Ok((Env { handle }, driver))
    }

    /// The handle to give to threads and agents.
    pub fn handle(&self) -> &EnvHandle {
        &self.handle
    }

    /// Blocks until the environment stops (see the shutdown protocol), joins its threads,
    /// and returns its final counters.
    pub fn run(self) -> EnvStats {
        self.stop_if_never_used();
        self.handle.0.wait_and_join();
        self.handle.stats()
    }

    /// [`run`](Self::run), but waits at most `limit` for the environment to stop: its final
    /// counters if it stopped in time, else the environment back, still running
    /// ([`StillRunning`]) — stop it and run it again, or drop it (which stops it and waits).
    ///
    /// ```
    /// use agentry::{Agent, Env};
    /// use std::time::Duration;
    ///
    /// struct Idle;
    /// impl Agent for Idle {}
    ///
    /// let env = Env::builder().autoshutdown(false).build().expect("env");
    /// env.handle().register_agent(Idle).expect("registered");
    /// // Nothing stops it: the time is up.
    /// let env = env.run_for(Duration::from_millis(20)).unwrap_err().into_env();
    /// env.handle().stop();
    /// let stats = env.run_for(Duration::from_secs(10)).expect("stopped");
    /// assert_eq!(stats.agents, 0);
    /// ```
    pub fn run_for(self, limit: Duration) -> Result<EnvStats, StillRunning> {
        match Instant::now().checked_add(limit) {
            Some(deadline) => self.run_until(deadline),
            None => Ok(self.run()),
        }
    }

    /// [`run_for`](Self::run_for) with a deadline.
    pub fn run_until(self, deadline: Instant) -> Result<EnvStats, StillRunning> {
        self.stop_if_never_used();
        if !self.handle.0.wait_stopped_until(deadline) {
            return Err(StillRunning(self));
        }
        self.handle.0.wait_and_join();
        Ok(self.handle.stats())
    }

    /// With autoshutdown, an environment in which no coop was ever registered stops at once.
    fn stop_if_never_used(&self) {
        let inner = &self.handle.0;
        if inner.config.autoshutdown && !inner.ever_registered.load(Ordering::Relaxed) {
            inner.stop();
        }
    }
}

/// [`Env::run_for`] or [`Env::run_until`] ran out of time: the environment is still running,
/// and given back.
#[derive(Debug, thiserror::Error)]
#[error("the environment was still running when the time was up")]
pub struct StillRunning(Env);

impl StillRunning {
    /// The environment, still running.
    pub fn into_env(self) -> Env {
        self.0
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        self.handle.0.stop();
        self.handle.0.wait_and_join();
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Env").field("handle", &self.handle).finish()
    }
}
