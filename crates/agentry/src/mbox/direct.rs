//! What senders see of an agent: its binding (where demands go), the insend handlers and
//! message limits (both fixed at registration), whether it accepts messages, and counters;
//! what is the same for every agent of its type (its type's name, the env and its counters)
//! is its class's (`mbox/class.rs`), one pointer per agent.
//!
//! A direct [`Mbox`](crate::Mbox) is an `Arc<AgentShared>`; it outlives the agent as a
//! tombstone, so a send to a dead agent is refused and counted, never misdelivered.

use super::class::{AgentClass, AgentClasses};
use super::event_priority::EventPriorities;
use super::insend::{InsendCtx, InsendTable};
use super::published_state::{PublishedState, StateNames};
use crate::demand::{Demand, Revocable, Traced};
use crate::disp::EventQueue;
use crate::ids::{AgentId, CoopId, MboxId};
use crate::mbox::limit::{Acquire, LimitTable};
use crate::mbox::supervisor_link::SupervisorLink;
use crate::message::LimitSlot;
use crate::message::payload::Payload;
use crate::panic_reaction::PanicReaction;
use crate::reason::{DeregReason, ExitCell};
use crate::slab::occupants::Occupant;
use crate::slab::{AgentRef, AgentSlab, SlotPtr};
use crate::stats::{AgentCounters, EnvCounters, HandlerSampling};
use crate::sync::set_once::{Flag, SetOnce};
use crate::timer::delivery::Delivery;
use crate::timer::token::TimerToken;
use crate::trace::context::Propagation;
use crate::trace::{DropReason, Outcome, TraceContext, TraceRecord};
use std::any::TypeId;
use std::num::NonZeroU64;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Everything fixed when the agent's coop is registered (a supervised agent's restarts keep
/// it: only its incarnation's generation moves on, see `agent/restart.rs`).
///
/// 48 bytes: its coop's id and its incarnation are kept as their parts, so that the two
/// 4-byte halves (the coop's slot, the generation) share one word instead of each padding
/// its own to 16 bytes. That and the state byte's flags (`SetOnce`) keep the shared part
/// at 88 bytes, a 112-byte chunk with its `Arc`'s counts.
pub(crate) struct Binding {
    /// Its coop's sequence number and slot ([`Binding::coop`]).
    coop_seq: NonZeroU64,
    coop_slot: u32,
    /// The agent's slot, fixed, and its current incarnation's generation there, which moves
    /// on when a supervisor restarts the agent in place ([`Binding::incarnation`]).
    slot: SlotPtr,
    generation: AtomicU32,
    pub(crate) queue: EventQueue,
    /// What few agents have: insend handlers, event priorities, the env's trace-context hook,
    /// a supervisor, message limits or a tracked queue depth, timed handlers. One box,
    /// optional: the send path pays one pointer test when there is none.
    rare: Option<Box<RareBinding>>,
}

/// The parts of a binding that few agents have (see [`Binding`]).
struct RareBinding {
    type_rules: Option<TypeRules>,
    /// Its supervisor, if it was added with a factory to a supervising coop.
    supervisor: Option<SupervisorLink>,
    limits: LimitTable,
    /// Whether its handlers are timed, and how often (`EnvBuilder::handler_time`,
    /// `Define::measure_handler_time`): the agent's worker reads it on a run its sampler
    /// picks, `Mbox::stats` to report the time as tracked before the first timed run (the
    /// timing counters are made by that run: nothing is allocated for it at registration).
    handler_timing: Option<HandlerSampling>,
    /// What a panic of one of its insend handlers does (they run on the sender's thread).
    panic_reaction: PanicReaction,
}

/// The limits of an agent that has none (and no tracked depth).
static NO_LIMITS: LimitTable = LimitTable::NONE;

impl Binding {
    /// The binding of an agent of coop `coop` whose current incarnation is `target`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        coop: CoopId,
        target: AgentRef,
        queue: EventQueue,
        type_rules: Option<TypeRules>,
        supervisor: Option<SupervisorLink>,
        limits: LimitTable,
        handler_timing: Option<HandlerSampling>,
        panic_reaction: PanicReaction,
    ) -> Self {
        // An agent with insend handlers has type rules, so its panic reaction is kept.
        let rare = (type_rules.is_some()
            || supervisor.is_some()
            || !limits.is_empty()
            || handler_timing.is_some())
        .then(|| {
            Box::new(RareBinding {
                type_rules,
                supervisor,
                limits,
                handler_timing,
                panic_reaction,
            })
        });
        let (slot, generation) = target.into_parts();
        Binding {
            coop_seq: coop.seq(),
            coop_slot: coop.slot(),
            slot,
            generation: AtomicU32::new(generation),
            queue,
            rare,
        }
    }

    /// The agent's coop.
    #[inline]
    pub(crate) fn coop(&self) -> CoopId {
        CoopId::in_slot(self.coop_slot, self.coop_seq)
    }

    /// The agent's current incarnation (a demand made for any incarnation of its lineage is
    /// fine, `slab.rs`).
    #[inline(always)]
    pub(crate) fn incarnation(&self) -> AgentRef {
        AgentRef::from_parts(self.slot, self.generation.load(Ordering::Relaxed))
    }

    /// Records the agent's new incarnation (its worker, after
    /// `AgentSlab::next_incarnation`).
    pub(crate) fn set_incarnation(&self, next: AgentRef) {
        let (slot, generation) = next.into_parts();
        debug_assert!(slot == self.slot, "an incarnation keeps its slot");
        self.generation.store(generation, Ordering::Release);
    }

    /// Its insend handlers, event priorities and trace-context hook, if it has any.
    #[inline(always)]
    pub(crate) fn type_rules(&self) -> Option<&TypeRules> {
        self.rare.as_deref()?.type_rules.as_ref()
    }

    /// Its supervisor, if it has one.
    pub(crate) fn supervisor(&self) -> Option<&SupervisorLink> {
        self.rare.as_deref()?.supervisor.as_ref()
    }

    /// Its message limits and tracked queue depth (empty for most agents).
    #[inline(always)]
    pub(crate) fn limits(&self) -> &LimitTable {
        self.rare.as_deref().map_or(&NO_LIMITS, |rare| &rare.limits)
    }

    /// True if a message to it takes a place under a limit (it has limits, or its depth is
    /// tracked): for most agents, the one pointer test of the send path.
    #[inline(always)]
    fn takes_places(&self) -> bool {
        self.rare
            .as_deref()
            .is_some_and(|rare| !rare.limits.is_empty())
    }

    /// How often its handlers are timed, if they are.
    pub(crate) fn handler_timing(&self) -> Option<HandlerSampling> {
        self.rare.as_deref()?.handler_timing
    }

    /// What a panic of one of its insend handlers does.
    fn insend_panic_reaction(&self) -> PanicReaction {
        self.rare
            .as_deref()
            .expect(
                "invariant: an agent with insend handlers has type rules, kept in its rare part",
            )
            .panic_reaction
    }

    /// The id of the agent's current incarnation.
    pub(crate) fn id(&self) -> AgentId {
        self.incarnation().id()
    }

    /// True if messages of type `M` to the agent's own mbox go to an insend handler.
    pub(crate) fn has_insend<M: 'static>(&self) -> bool {
        self.type_rules().is_some_and(|r| r.insend.contains::<M>())
    }
}

/// What a bound agent's mbox asks of its environment, never on the message path: the slab
/// (burying the agent's tombstone as its mbox drops, live counts for `Mbox::stats`), an agent
/// that finished without its finish demand (its dispatcher closed under it), and the panic
/// reaction of an insend handler; and the counters and classes new agents get (the coop
/// builder, which holds its env as an `Arc<dyn AgentHost>`; an agent reaches its env through
/// its class, `mbox/class.rs`). Implemented by the env (`env.rs`): a trait here,
/// so that the mboxes and coops do not import the env — one dynamic call on those rare paths,
/// none per message.
pub(crate) trait AgentHost: Send + Sync {
    /// The environment's agent slab.
    fn agent_slab(&self) -> &AgentSlab;
    /// The environment's counters.
    fn counters(&self) -> &Arc<EnvCounters>;
    /// The environment's agent classes (`mbox/class.rs`).
    fn agent_classes(&self) -> &AgentClasses;
    /// `agent` of `coop` is gone without a finish demand (`EnvInner::agent_finished`).
    fn agent_left(self: Arc<Self>, coop: CoopId, agent: &AgentShared);
    /// Carries out `reaction` to a panic in an agent of `coop`, in a handler, a hook or an
    /// insend handler (`EnvInner::react_to_panic`).
    fn react_to_agent_panic(self: Arc<Self>, reaction: PanicReaction, coop: CoopId);
    /// Starts deregistering `coop` for one of its agents (a failed start); one already
    /// leaving is fine, it goes either way.
    fn deregister_for_agent(self: Arc<Self>, coop: CoopId, reason: DeregReason);
    /// The watches of the agent whose mbox is `watcher` end (a restarted incarnation's).
    fn watcher_gone(&self, watcher: MboxId);
    /// The position of the agent whose mbox is `agent` among the agents of `coop`, in the
    /// order they were added (a failed start names its agent by it; the coop is registered
    /// until its agents have finished, so the agent asking is there).
    fn position_in_coop(&self, coop: CoopId, agent: MboxId) -> usize;
    /// The env itself, for the env's layer to downcast (`EnvHandle::of`: an agent's `Ctx`
    /// reaches its env through its mbox).
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// What an agent declared per message type for its senders: insend handlers and event
/// priorities; and the environment's trace-context hook, if it has one (every send then asks
/// it for the sender's context, `trace/context.rs`). Most agents declare neither and most
/// environments have no hook, so the binding holds it optional, in its rare part.
pub(crate) struct TypeRules {
    pub(crate) insend: InsendTable,
    pub(crate) priorities: EventPriorities,
    pub(crate) propagation: Option<Propagation>,
}

impl TypeRules {
    /// The rules, or `None` if there are none.
    pub(crate) fn new(
        insend: InsendTable,
        priorities: EventPriorities,
        propagation: Option<&Propagation>,
    ) -> Option<Self> {
        (!insend.is_empty() || !priorities.is_empty() || propagation.is_some()).then(|| TypeRules {
            insend,
            priorities,
            propagation: propagation.cloned(),
        })
    }
}

/// When the last holder of the agent's mbox lets go, nobody can read its counters any more:
/// its final counts join its class's retired totals (`mbox/class.rs`; an agent that counted
/// nothing, as a spawned leaf that only started, adds nothing and takes no lock there) and its
/// tombstone leaves its slot (`slab.rs` ground rules).
impl Drop for AgentShared {
    fn drop(&mut self) {
        self.state().forget(&self.class.state_names, self.mbox_id);
        if let Some(b) = self.binding.get() {
            if !self.stats.is_empty() {
                self.class
                    .retire(&crate::stats::AgentStats::read(&self.stats));
            }
            if let Some(env) = self.class.env.upgrade() {
                env.agent_slab().bury(b.incarnation());
            }
        }
    }
}

/// What the slab and the dispatchers ask of an agent's shared part (`slab/occupants.rs`).
impl Occupant for AgentShared {
    fn stats(&self) -> &AgentCounters {
        &self.stats
    }

    fn agent_type(&self) -> &'static str {
        AgentShared::agent_type(self)
    }

    /// `dropped_on_shutdown`, and its `dropped`.
    fn count_dropped_on_shutdown(&self) {
        self.stats.rare().dropped.fetch_add(1, Ordering::Relaxed);
        self.counters()
            .dropped_on_shutdown
            .fetch_add(1, Ordering::Relaxed);
    }

    /// `dead_letters`, and its `refused` and `dropped`.
    fn count_not_running(&self) {
        self.stats.rare().refused.fetch_add(1, Ordering::Relaxed);
        self.stats.rare().dropped.fetch_add(1, Ordering::Relaxed);
        self.counters().dead_letters.fetch_add(1, Ordering::Relaxed);
    }

    fn left(&self, coop: CoopId) {
        self.env()
            .expect("invariant: `Env`'s drop waits for every agent to leave, so its env lives")
            .agent_left(coop, self);
    }
}

/// Where and how a message is queued: what `deliver` decided before the limit and the queue.
struct Queued<'t> {
    source: MboxId,
    priority: u8,
    timer: Option<&'t Arc<TimerToken>>,
    /// The sender's trace context (`trace/context.rs`; only with a hook).
    context: Option<TraceContext>,
}

/// A message the agent did not take, given back to the sender.
pub(crate) enum Refused<P> {
    /// The agent is not running.
    Gone(P),
    /// A message limit rejected it (reaction `Drop`).
    Overloaded(P),
}

pub(crate) struct AgentShared {
    pub(crate) mbox_id: MboxId,
    /// What it shares with the agents of its type (`mbox/class.rs`).
    pub(super) class: Arc<AgentClass>,
    pub(crate) stats: AgentCounters,
    /// Its binding, set at registration; with it, in one state byte, whether it accepts
    /// messages ([`ACCEPTING`]) and whether its finish demand is queued ([`FINISH_QUEUED`]);
    /// beside that byte, its current state for snapshots (one relaxed store per state change).
    binding: SetOnce<Binding, PublishedState>,
    /// Why the agent is gone, once it is (set under the registry lock; death watch).
    pub(crate) exit: ExitCell,
}

/// The agent accepts messages: raised as it is bound, lowered as it stops.
const ACCEPTING: Flag = Flag::nth(0);
/// Its finish demand has been queued (by its coop's deregistration or by the agent stopping
/// itself): it is queued once.
const FINISH_QUEUED: Flag = Flag::nth(1);

impl AgentShared {
    pub(crate) fn new(class: Arc<AgentClass>) -> Self {
        AgentShared {
            mbox_id: MboxId::next(),
            class,
            stats: AgentCounters::default(),
            binding: SetOnce::new(),
            exit: ExitCell::default(),
        }
    }

    /// Its current state, as its worker last published it.
    fn state(&self) -> &PublishedState {
        self.binding.beside()
    }

    /// What it shares with the agents of its type.
    pub(crate) fn class(&self) -> &Arc<AgentClass> {
        &self.class
    }

    /// The name of its type.
    pub(crate) fn agent_type(&self) -> &'static str {
        self.class.agent_type
    }

    /// Its environment's counters.
    pub(crate) fn counters(&self) -> &Arc<EnvCounters> {
        &self.class.counters
    }

    /// Its worker: an incarnation whose layout is `layout` has entered its initial state
    /// `state` (`mbox/published_state.rs`).
    pub(crate) fn publish_started<L: StateNames + 'static>(&self, layout: &Arc<L>, state: u16) {
        self.state()
            .started(&self.class.state_names, self.mbox_id, layout, state);
    }

    /// Its worker: the agent is now in `state`.
    #[inline]
    pub(crate) fn publish_state(&self, state: u16) {
        self.state().set(state);
    }

    /// Calls `f` with the name of its published state (`None` before it started).
    pub(crate) fn with_state_name<R>(&self, f: impl FnOnce(Option<&str>) -> R) -> R {
        self.state()
            .with_name(&self.class.state_names, self.mbox_id, f)
    }

    /// Its environment, if it is still alive.
    pub(crate) fn env(&self) -> Option<Arc<dyn AgentHost>> {
        self.class.env.upgrade()
    }

    /// True if its environment is the one at `env` (the same allocation: the class's weak
    /// reference keeps it, so its address is not reused).
    pub(crate) fn is_of<T: ?Sized>(&self, env: *const T) -> bool {
        std::ptr::addr_eq(self.class.env.as_ptr(), env)
    }

    /// Publishes the binding and starts accepting messages (registration commit).
    pub(crate) fn bind(&self, binding: Binding) {
        if self.binding.set(binding, ACCEPTING).is_err() {
            unreachable!("invariant: an agent is bound once (agents are moved into one coop)");
        }
    }

    /// Stops accepting messages (deregistration); later sends are refused and counted.
    pub(crate) fn stop_accepting(&self) {
        self.binding.update(Flag::NONE, ACCEPTING);
    }

    /// Stops accepting messages and queues the agent's finish demand, once: false if it was
    /// queued already (the agent stopped itself and its coop is leaving too, or the reverse).
    pub(crate) fn finish(&self) -> bool {
        if !self.binding.update(FINISH_QUEUED, ACCEPTING) {
            return false;
        }
        let b = self
            .binding()
            .expect("invariant: registered agents are bound");
        if let Err(demand) = b.queue.push(Demand::finish(b.incarnation(), self.mbox_id)) {
            // Cannot happen while the agent holds its dispatcher lease; keep the env
            // consistent anyway.
            tracing::error!(agent = %b.id(), "dispatcher closed before its agent finished");
            drop(demand);
            if let Some(env) = self.env() {
                env.agent_left(b.coop(), self);
            }
        }
        true
    }

    pub(crate) fn binding(&self) -> Option<&Binding> {
        self.binding.get()
    }

    /// The binding, if the agent currently accepts messages.
    #[inline]
    pub(crate) fn live(&self) -> Option<&Binding> {
        self.binding.get_if(ACCEPTING)
    }

    /// Hands `message` to the agent: to its insend handler if it has one for `P`, otherwise
    /// through its message limit (if any) into its event queue.
    ///
    /// A message sent by a timer carries the timer's token: the insend handler runs only if
    /// the token allows it, and a queued message travels as a [`Revocable`] demand that the
    /// dispatcher checks when it takes it (`timer.rs` ground rules).
    #[inline(always)]
    pub(crate) fn deliver<P: Send + 'static>(
        self: &Arc<Self>,
        source: MboxId,
        message: P,
        wrap: impl FnOnce(P) -> Payload,
        timer: Option<&Arc<TimerToken>>,
    ) -> Result<(), Refused<P>> {
        let Some(b) = self.live() else {
            return Err(Refused::Gone(message));
        };
        let mut queued = Queued {
            source,
            priority: 0,
            timer,
            context: None,
        };
        if let Some(rules) = b.type_rules() {
            if let Some(handler) = rules.insend.find::<P>() {
                // A timer's delivery lasts until the handler returns (`timer.rs`).
                let Ok(_delivery) = Delivery::begin_timed(timer) else {
                    self.revoked_insend::<P>(source);
                    return Ok(());
                };
                self.run_insend(b, handler, message);
                return Ok(());
            }
            queued.priority = rules.priorities.of::<P>(source);
            if let Some(context) = rules.propagation.as_ref().and_then(Propagation::current) {
                queued.context = Some(context);
                return self.enqueue_traced(b, message, wrap, queued);
            }
        }
        self.enqueue(b, message, wrap, queued)
    }

    /// [`enqueue`](Self::enqueue) for a message that carries a trace context: out of line, so
    /// that the send path without one is the code it was before contexts existed (there
    /// `queued.context` is the constant `None` and its branches fold away).
    #[cold]
    #[inline(never)]
    fn enqueue_traced<P: Send + 'static>(
        self: &Arc<Self>,
        b: &Binding,
        message: P,
        wrap: impl FnOnce(P) -> Payload,
        queued: Queued<'_>,
    ) -> Result<(), Refused<P>> {
        self.enqueue(b, message, wrap, queued)
    }

    /// The message through its limit (if any) into the agent's event queue.
    #[inline(always)]
    fn enqueue<P: Send + 'static>(
        self: &Arc<Self>,
        b: &Binding,
        message: P,
        wrap: impl FnOnce(P) -> Payload,
        queued: Queued<'_>,
    ) -> Result<(), Refused<P>> {
        let Queued {
            source,
            priority,
            timer,
            context,
        } = queued;
        let limit = if !b.takes_places() {
            LimitSlot::NONE
        } else {
            match b.limits().acquire::<P>() {
                Acquire::Unlimited => LimitSlot::NONE,
                Acquire::Slot(slot) => slot,
                Acquire::Exceeded(entry) => return entry.react(self, message),
            }
        };
        let target = b.incarnation();
        let demand = match (timer, context) {
            (None, None) => Demand::message(target, source, wrap(message), limit, priority),
            (None, Some(context)) => Demand::traced(
                target,
                source,
                Traced {
                    context,
                    inner: wrap(message),
                },
                limit,
                priority,
            ),
            (Some(token), context) => Demand::revocable(
                target,
                source,
                Revocable {
                    token: Arc::clone(token),
                    inner: wrap(message),
                    context,
                },
                limit,
                priority,
            ),
        };
        match b.queue.push(demand) {
            Ok(()) => Ok(()),
            Err(demand) => Err(Self::closed_queue(b, limit, demand)),
        }
    }

    /// The agent's dispatcher was closed under the send: the message is given back (kept out
    /// of `deliver`, which must stay small enough to inline).
    #[cold]
    #[inline(never)]
    fn closed_queue<P: Send + 'static>(
        b: &Binding,
        limit: LimitSlot,
        demand: Demand,
    ) -> Refused<P> {
        b.limits().release(limit);
        Refused::Gone(demand.into_message::<P>())
    }

    /// Runs an insend handler on the calling (sender's) thread, catching a panic.
    pub(crate) fn run_insend<P: Send + 'static>(
        self: &Arc<Self>,
        b: &Binding,
        handler: &super::insend::InsendFn<P>,
        message: P,
    ) {
        let id = b.id();
        let ctx = InsendCtx::new(self, id);
        let ok = catch_unwind(AssertUnwindSafe(|| handler(&ctx, message))).is_ok();
        // The env's tracer (`EnvCounters::trace`: fixed when the env is built, so no agent
        // keeps a copy of its own).
        if let Some(sink) = &self.counters().trace {
            sink.emit(&TraceRecord {
                agent: Some(id),
                agent_type: Some(self.agent_type()),
                mbox: Some(self.mbox_id),
                message: std::any::type_name::<P>(),
                message_type: TypeId::of::<P>(),
                outcome: if ok {
                    Outcome::InsendHandled
                } else {
                    Outcome::Panicked
                },
            });
        }
        // A panicking insend handler took the message too (as a panicking queued handler does).
        self.stats
            .rare()
            .insend_handled
            .fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.stats.rare().panics.fetch_add(1, Ordering::Relaxed);
            self.counters().panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(agent = %id, agent_type = self.agent_type(), "insend handler panicked");
            match (b.supervisor(), b.insend_panic_reaction()) {
                // The agent keeps handling until its supervisor stops it.
                (Some(link), PanicReaction::Supervise) => link.report_failure(id),
                (_, reaction) => {
                    if let Some(env) = self.env() {
                        env.react_to_agent_panic(reaction, b.coop());
                    }
                }
            }
        }
    }

    /// Counts and traces a cancelled timer's message that did not reach an insend handler
    /// (kept out of `deliver`, which must stay small enough to inline).
    #[cold]
    #[inline(never)]
    pub(crate) fn revoked_insend<P: 'static>(&self, source: MboxId) {
        self.counters()
            .timers_revoked
            .fetch_add(1, Ordering::Relaxed);
        self.stats.rare().dropped.fetch_add(1, Ordering::Relaxed);
        self.trace_drop::<P>(source, DropReason::TimerRevoked);
    }

    /// Counts a send refused because the agent is not running ([`count_not_running`]) and
    /// traces it.
    ///
    /// [`count_not_running`]: Self::count_not_running
    pub(crate) fn count_gone<P: 'static>(&self) {
        self.count_not_running();
        if self.counters().trace.is_some() {
            // Bound but not accepting and not gone yet: its coop is on its way out.
            let why = match (self.binding(), self.exit.get()) {
                (Some(_), None) => DropReason::CoopDeregistering,
                _ => DropReason::AgentGone,
            };
            self.trace_drop::<P>(self.mbox_id, why);
        }
    }

    /// Traces a message of type `P` for this agent that was dropped.
    pub(crate) fn trace_drop<P: 'static>(&self, source: MboxId, why: DropReason) {
        self.counters().trace(|| TraceRecord {
            agent: self.binding().map(Binding::id),
            agent_type: Some(self.agent_type()),
            mbox: Some(source),
            message: std::any::type_name::<P>(),
            message_type: TypeId::of::<P>(),
            outcome: Outcome::Dropped(why),
        });
    }

    /// Counts and disposes of a refused message.
    pub(crate) fn count_refused<P: Send + 'static>(
        &self,
        refused: Refused<P>,
        wrap: fn(P) -> Payload,
    ) {
        use crate::message::Undelivered;
        let (payload, why) = match refused {
            Refused::Gone(m) => {
                self.count_gone::<P>();
                (wrap(m), Undelivered::AgentGone)
            }
            Refused::Overloaded(m) => (wrap(m), Undelivered::Overloaded),
        };
        tracing::debug!(
            target: "agentry::delivery",
            mbox = %self.mbox_id,
            agent_type = self.agent_type(),
            message = payload.type_name(),
            reason = ?why,
            "message not delivered"
        );
        payload.reject(why);
    }
}

// Every agent has one: with the `Arc`'s counts, 104 bytes, a 112-byte chunk of glibc's
// malloc (a field more crosses into the next chunk size). The binding is most of it.
const _: () = assert!(std::mem::size_of::<AgentShared>() <= 88);
const _: () = assert!(std::mem::size_of::<Binding>() <= 48);
