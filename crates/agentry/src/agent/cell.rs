//! The agent cell: a typed agent with its context, states and handler table, behind the
//! type-erased [`AgentBody`] interface that dispatchers drive.
//!
//! # Ground rules
//!
//! - A cell is driven by one dispatcher thread at a time (the slab's rules), so it needs no
//!   synchronisation of its own.
//! - Start runs before anything else (even when a message or the finish demand overtakes the
//!   start demand), and finish runs exactly once.
//! - Changes requested by a handler (state change) are applied after it returns; a panicking
//!   handler's requests are discarded and the agent's panic reaction applies.
//! - One byte, `gate`, guards the hot path of a message: it is zero for a started agent with no
//!   state time limits, no observation (message tracing, handler timing, `tracing` spans) and
//!   no failure. Anything else takes the slow path (`on_message_slow`). So observation costs an
//!   agent that has none of it nothing beyond this one test, which replaces the two the hot
//!   path made before (started? time-limited?).
//! - A supervised agent whose handler panicked (reaction `Supervise`) is *failed*: no handler of
//!   it runs any more; the messages it takes are deferred, keeping their limit places, to its
//!   next incarnation (`agent/restart.rs`).
//! - Starting is part of the coop's registration (`agent/start.rs`): a started agent whose
//!   siblings have not all started *holds* the messages it takes until its coop has started; an
//!   agent whose start failed, or whose coop failed to start, is *stopped*.
//! - A *stopped* agent handles nothing more: every message it takes is dropped and counted
//!   (`agent/held.rs`) until its finish demand. An agent stops when its start fails, when its
//!   coop fails to start, and when a handler (or hook) panics with the reaction
//!   `DeregisterCoop` or `ShutdownEnv` — what was queued behind the failing message is not
//!   handled by a broken agent.

use super::ctx::Ctx;
use super::define::{Define, DefinitionCheck};
use super::define_once::{self, DefinedOnce};
use super::handlers::Handlers;
use super::held::{Held, drop_all, drop_message, replay, revoked, trace_kept};
use super::layout::{self, AgentLayout};
use super::protocol::Protocol;
use super::restart::{Restartable, Suspended, unsubscribe};
use super::room::Room;
use super::start::{CoopStart, Failed, Go};
use super::state::{Hook, State};
use super::{Agent, run_definition};
use crate::disp::{Binder, Lease};
use crate::error::{DefineError, StartFailure, panic_message};
use crate::ids::MboxId;
use crate::mbox::current_agent::CURRENT_AGENT;
use crate::mbox::direct::{AgentHost, AgentShared};
use crate::mbox::{Mbox, MultiMbox};
use crate::message::LimitSlot;
use crate::message::Undelivered;
use crate::message::payload::{self, Lent, Payload};
use crate::panic_reaction::PanicReaction;
use crate::priority::Priority;
use crate::reason::DeregReason;
use crate::slab::IncarnationCx;
pub(crate) use crate::slab::body::{AgentBody, Body, Control, ControlFn, Exit, Taken};
use crate::slab::body::{erase, own};
use crate::stats::{skip_timing, time_this_run};
use crate::sync::blocks::BlockBox;
use crate::timer::TimerHandle;
use crate::timer::token::TimerToken;
use crate::trace::{DropReason, Outcome, TraceRecord, TraceSink};
use std::any::TypeId;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// How an agent is observed (fixed when it is bound): message tracing, handler timing,
/// `tracing` spans around its handlers.
#[derive(Clone, Default)]
pub(crate) struct Observe {
    pub(crate) trace: Option<Arc<TraceSink>>,
    /// Its handlers are timed (the rate is in its binding, `Binding::handler_timing`).
    pub(crate) time_handlers: bool,
    pub(crate) spans: bool,
}

impl Observe {
    /// Traced or spanned: what the `OBSERVED` bit stands for and the boxed extras must keep
    /// (timing needs only the `TIMED` bit).
    fn kept(&self) -> bool {
        self.trace.is_some() || self.spans
    }
}

/// Registration, step 1: an agent not yet defined — its value, held as a type-erased
/// [`Payload`] ([`hold`]: a small agent inline, a larger one in the block its cell will take,
/// so that either costs one block of the cells' store in all and leaves no hole behind), and
/// the definition its type runs.
pub(crate) struct UndefinedAgent {
    value: Payload,
    define: DefineFn,
}

/// Runs the definition of the agent in a payload (of the type it was made for) and builds its
/// cell — in the block that holds it from then on — where the placement says; its layout is
/// shared through its class at once (`agent/layout.rs`), so that what only the definition
/// needed is freed before the next agent defines itself.
type DefineFn = fn(Payload, Mbox, Placement) -> Result<Defined, DefineError>;

impl UndefinedAgent {
    /// `agent`, defined unchecked.
    pub(crate) fn new<A: Agent>(agent: A) -> Self {
        UndefinedAgent {
            value: hold(agent),
            define: |value, me, at| {
                let (agent, place) = unhold::<A>(value);
                define_cell_in(place, agent, me, at, DefinitionCheck::Unchecked, None)
            },
        }
    }

    /// `agent`, added with its typed address: its definition must handle its whole protocol
    /// (`protocol.rs`).
    pub(crate) fn declared<A: Protocol>(agent: A) -> Self {
        UndefinedAgent {
            value: hold(agent),
            define: |value, me, at| {
                let (agent, place) = unhold::<A>(value);
                define_cell_in(place, agent, me, at, DefinitionCheck::protocol(), None)
            },
        }
    }

    /// `value`, defined by `define` (a supervised agent, `agent/restart.rs`).
    pub(crate) fn with<T: Send + 'static>(value: T, define: DefineFn) -> Self {
        UndefinedAgent {
            value: Payload::new(value),
            define,
        }
    }

    /// Runs the agent's definition and builds its cell where `at` says.
    pub(crate) fn define(self, me: Mbox, at: Placement) -> Result<Defined, DefineError> {
        (self.define)(self.value, me, at)
    }
}

/// Where an agent's cell is built: a block of the cells' store (`sync/blocks.rs`), empty.
type CellPlace<A> = BlockBox<MaybeUninit<AgentCell<A>>>;

/// `agent`, held until its definition: inline in the payload if it fits there (no
/// allocation), else in the block its cell will take ([`Room`]).
fn hold<A: Agent>(agent: A) -> Payload {
    if payload::is_inline::<A>() {
        Payload::new(agent)
    } else {
        Payload::new(Room::<A, AgentCell<A>>::new(agent))
    }
}

/// The agent [`hold`] held in `value`, and where its cell goes: the block it waited in, or a
/// new one for an agent that waited inline.
fn unhold<A: Agent>(value: Payload) -> (A, CellPlace<A>) {
    if payload::is_inline::<A>() {
        (taken::<A>(value), BlockBox::new_uninit())
    } else {
        taken::<Room<A, AgentCell<A>>>(value).take()
    }
}

/// The value of type `T` in `value`, which its [`UndefinedAgent`] was made with.
pub(crate) fn taken<T: 'static>(value: Payload) -> T {
    value
        .take::<T>()
        .unwrap_or_else(|_| unreachable!("invariant: an undefined agent holds its own type"))
}

/// Why an agent's env is there whenever its cell asks: `Env`'s drop stops it and waits for
/// every agent to finish, so a handler, hook or control of an agent runs while its env lives.
pub(crate) const ENV_LIVES: &str =
    "invariant: an agent's handlers, hooks and controls run while its env lives";

/// Where a defined agent goes: what its cell knows from its definition on.
pub(crate) struct Placement {
    /// The binder it is bound with (its child coops run there too).
    pub(crate) binder: Binder,
}

/// Registration, step 2: a defined agent, its cell built, waiting for the commit
/// ([`DefinedAgent::attach`]).
pub(crate) struct Defined {
    pub(crate) cell: BlockBox<dyn DefinedAgent>,
    /// The parts of its definition that senders use, handed to its
    /// [`Binding`](crate::mbox::direct::Binding); `None` when it declared none of them (most
    /// agents: nothing per agent is kept for them between the definition and the commit).
    pub(crate) sender: Option<Box<SenderParts>>,
    /// What its definition declared that only its registration reads.
    pub(crate) declared: Declared,
}

/// What a definition declared that only the agent's registration reads (kept out of the cell).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Declared {
    /// The priority its binding is prepared with.
    pub(crate) priority: Priority,
    /// It asked for its handlers to be timed (`Define::measure_handler_time`).
    pub(crate) time_handlers: bool,
}

/// A defined agent's cell before the commit.
pub(crate) trait DefinedAgent: Send {
    /// The agent's shared part (its own mbox's).
    fn shared(&self) -> &Arc<AgentShared>;
    /// The binder the agent is bound with.
    fn binder(&self) -> &Binder;
    /// Keeps the agent's dispatcher alive from its prepared binding on (dropping the cell
    /// before the commit gives it back: a rolled-back registration).
    fn hold_lease(&mut self, lease: Lease);
    /// Completes the cell with what the commit decides, in place ([`attached`] makes it the
    /// body the slab holds, in the same block).
    fn attach(&mut self, attach: Attach);
    /// The cell as the body it becomes once attached.
    fn as_body(&mut self) -> &mut dyn AgentBody;
}

/// `cell`, completed with what the commit decides: the body the slab holds, in the block the
/// cell was built in.
pub(crate) fn attached(mut cell: BlockBox<dyn DefinedAgent>, attach: Attach) -> Body {
    cell.attach(attach);
    cell.retype(|c| c.as_body())
}

/// The parts of a definition that senders use.
#[derive(Default)]
pub(crate) struct SenderParts {
    pub(crate) insend: crate::mbox::insend::InsendTable,
    pub(crate) event_priorities: crate::mbox::event_priority::EventPriorities,
    pub(crate) limits: Vec<crate::mbox::limit::LimitEntry>,
    pub(crate) track_depth: bool,
    pub(crate) multi: Vec<super::define::MultiSubscriptionDef>,
    pub(crate) panic_reaction: Option<PanicReaction>,
}

/// What the cell learns at registration commit.
pub(crate) struct Attach {
    pub(crate) panic_reaction: PanicReaction,
    pub(crate) multi: Vec<(MultiMbox, TypeId)>,
    /// How the agent is observed: the environment's settings, with handler timing as its
    /// registration decided (the env's setting or the definition's).
    pub(crate) observe: Observe,
    /// Where the outcome of its start goes.
    pub(crate) start: StartTicket,
}

/// Where an agent reports the outcome of its start (`agent/start.rs`).
pub(crate) enum StartTicket {
    /// Its coop's registration: the coop's start when siblings or a waiting registration
    /// share it (`None`: the agent's own outcome is the verdict).
    Registration { coop: Option<Arc<CoopStart>> },
    /// A supervisor's restart: a failed start is a failure of the agent, reported like a panic.
    Restart,
}

/// Runs `agent`'s definition, then `check` on it; `restart` for a supervised agent.
pub(crate) fn define_cell<A: Agent>(
    agent: A,
    me: Mbox,
    at: Placement,
    check: DefinitionCheck<A>,
    restart: Option<Box<Restartable<A>>>,
) -> Result<Defined, DefineError> {
    define_cell_in(BlockBox::new_uninit(), agent, me, at, check, restart)
}

/// [`define_cell`], building the cell in `place`.
fn define_cell_in<A: Agent>(
    place: CellPlace<A>,
    mut agent: A,
    me: Mbox,
    at: Placement,
    check: DefinitionCheck<A>,
    restart: Option<Box<Restartable<A>>>,
) -> Result<Defined, DefineError> {
    // A definition given by the type, for an agent that is not supervised, may be (or have
    // been) recorded for the type (`agent/define_once.rs`).
    let recordable = A::DEFINITION.is_some() && restart.is_none();
    if recordable && let Some(once) = define_once::recorded::<A>(me.shared().class(), check) {
        let (layout, handlers) = (
            Arc::clone(&once.layout),
            Handlers::from_type(&once.handlers),
        );
        let (initial, declared) = (once.initial, once.declared);
        let cell = place.write(AgentCell::new(
            agent, me, at, layout, handlers, initial, None,
        ));
        return Ok(Defined {
            cell: cell.retype(|c| c as &mut dyn DefinedAgent),
            sender: None,
            declared,
        });
    }
    let expected = layout::cached(me.shared().class());
    let mut def = Define::new(me, expected);
    run_definition(&mut agent, &mut def)?;
    check.run(&def)?;
    let record = recordable.then_some(check);
    let (cell, sender, declared) = AgentCell::defined(place, agent, def, restart, at, record);
    Ok(Defined {
        cell: cell.retype(|c| c as &mut dyn DefinedAgent),
        sender,
        declared,
    })
}

impl<A: Agent> AgentCell<A> {
    /// The cell of `agent` as `def` defined it, built in `place`, placed `at`; its layout is
    /// shared through its class (`agent/layout.rs`). Returns the parts of the definition that
    /// senders use apart, boxed, or `None` if it declared none of them (nothing is moved or
    /// dropped for them), and what only its registration reads. The cell runs nothing before
    /// [`attach`](DefinedAgent::attach) completes it (it has no id, lease or start ticket
    /// until then).
    ///
    /// With `record` (the check it passed), a definition that declared only states and
    /// handlers its type shares is recorded for the type's later agents
    /// (`agent/define_once.rs`); `None` for a definition that may not be (not the type's, or a
    /// supervised agent's).
    pub(super) fn defined(
        place: CellPlace<A>,
        agent: A,
        def: Define<A>,
        restart: Option<Box<Restartable<A>>>,
        at: Placement,
        record: Option<DefinitionCheck<A>>,
    ) -> (BlockBox<Self>, Option<Box<SenderParts>>, Declared) {
        let Define {
            me,
            states,
            hooks,
            mut table,
            insend,
            event_priorities,
            limits,
            multi,
            initial,
            panic_reaction,
            priority,
            time_handlers,
            track_depth,
        } = def;
        let (layout, handlers) = match table.take_expected(&states) {
            // The definition declared its type's cached layout: nothing was built.
            Some(layout) => (
                layout,
                table.into_handlers(me.shared().class(), record.is_some()),
            ),
            None => {
                let (handler_layout, handlers) = table.finish(&states);
                let class = me.shared().class();
                let layout = layout::share(class, AgentLayout::new(states, handler_layout));
                (layout, handlers)
            }
        };
        // A supervised agent's failures go to its supervisor unless it says otherwise.
        let panic_reaction =
            panic_reaction.or(restart.is_some().then_some(PanicReaction::Supervise));
        let declared = !insend.is_empty()
            || !event_priorities.is_empty()
            || !limits.is_empty()
            || track_depth
            || !multi.is_empty()
            || panic_reaction.is_some();
        let sender = declared.then(|| {
            Box::new(SenderParts {
                insend,
                event_priorities,
                limits,
                track_depth,
                multi,
                panic_reaction,
            })
        });
        let declared = Declared {
            priority,
            time_handlers,
        };
        if let Some(check) = record
            && sender.is_none()
            && hooks.is_empty()
            && let Some(type_handlers) = handlers.of_type()
        {
            define_once::record(me.shared().class(), || DefinedOnce {
                layout: Arc::clone(&layout),
                handlers: type_handlers,
                initial,
                declared,
                checked: check.checks(),
            });
        }
        let extras = (!hooks.is_empty() || restart.is_some()).then(|| {
            Box::new(Extras {
                hooks,
                restart,
                ..Extras::default()
            })
        });
        let cell = AgentCell::new(agent, me, at, layout, handlers, initial, extras);
        (place.write(cell), sender, declared)
    }

    /// A cell of `agent`, whose own mbox is `me`, with its layout, handlers, initial state and
    /// extras: defined, not attached yet (its caller writes it into its place).
    fn new(
        agent: A,
        me: Mbox,
        at: Placement,
        layout: Arc<AgentLayout>,
        handlers: Handlers<A>,
        initial: State,
        extras: Option<Box<Extras<A>>>,
    ) -> Self {
        AgentCell {
            agent,
            ctx: Ctx {
                mbox: me,
                binder: at.binder,
                state: State::DEFAULT,
                layout,
                in_transition: false,
                finishing: false,
                pending_state: None,
                _agent: PhantomData,
            },
            gate: NOT_STARTED,
            handlers,
            initial,
            extras,
            panic_reaction: PanicReaction::Ignore,
            lease: None,
            coop_start: None,
            phase: StartPhase::Defined,
            started: false,
            entered: false,
            stopped: DropReason::AgentFailed,
        }
    }
}

impl<A: Agent> DefinedAgent for AgentCell<A> {
    fn shared(&self) -> &Arc<AgentShared> {
        self.ctx.mbox.shared()
    }

    fn binder(&self) -> &Binder {
        &self.ctx.binder
    }

    fn hold_lease(&mut self, lease: Lease) {
        self.lease = Some(lease);
    }

    fn attach(&mut self, attach: Attach) {
        // Timed if the registration decided so (the env's setting or the definition's, the
        // decision its binding's `handler_timing` holds too), or a restart carried it over.
        let observe = attach.observe;
        assert!(
            self.phase == StartPhase::Defined,
            "invariant: a cell is attached once"
        );
        let has_time_limits = self.ctx.layout.states.has_time_limits();
        if has_time_limits {
            self.gate |= TIME_LIMITED;
        }
        if observe.kept() {
            self.gate |= OBSERVED;
        }
        if observe.time_handlers {
            self.gate |= TIMED;
        }
        if has_time_limits || !attach.multi.is_empty() || observe.kept() {
            let x = self.extras.get_or_insert_with(Box::default);
            x.multi = attach.multi;
            x.observe = observe;
        }
        self.panic_reaction = attach.panic_reaction;
        self.phase = match attach.start {
            StartTicket::Registration { coop } => {
                self.coop_start = coop;
                StartPhase::Pending
            }
            StartTicket::Restart => StartPhase::PendingRestart,
        };
    }

    fn as_body(&mut self) -> &mut dyn AgentBody {
        self
    }
}

/// Where an agent is in its start (`agent/start.rs`). Its coop's start, if it reports to one,
/// is the cell's `coop_start` (one pointer beside this byte: an enum carrying it would take 16
/// bytes of every cell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StartPhase {
    /// Defined, not yet attached ([`DefinedAgent::attach`]).
    Defined,
    /// Not started yet: its start is reported to its coop's start (`coop_start`), or is the
    /// verdict on its own (none).
    Pending,
    /// Not started yet, restarted by its supervisor: a failed start is a failure of the
    /// agent, reported like a panic.
    PendingRestart,
    /// Started while a sibling has not: it holds the messages it takes, in the order they
    /// came, until its coop (`coop_start`) has started. Every agent of a coop but the last to
    /// start passes through here, and an idle one stays until its first message. What it
    /// holds goes to its extras (`Extras::held`), made by the first message held if it has
    /// none.
    Holding,
    /// Its start is settled (whatever the outcome).
    Settled,
}

/// `gate` bits (ground rules): the agent has not started yet…
const NOT_STARTED: u8 = 1;
/// … has states with time limits (their expiry messages are internal) …
const TIME_LIMITED: u8 = 2;
/// … is traced or spanned …
const OBSERVED: u8 = 4;
/// … failed and waits for its supervisor (supervised agents only) …
const FAILED: u8 = 8;
/// … started, and holds messages until its coop has started …
const HELD: u8 = 16;
/// … is stopped: it handles nothing more (ground rules) …
const STOPPED: u8 = 32;
/// … times some of its handler runs. Where it is the only bit, the hot path counts the runs
/// its sampler skips and dispatches them at once ([`AgentCell::skips_timing`]).
const TIMED: u8 = 64;

/// What a handler call came to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dispatched {
    Handled,
    Panicked,
    Unhandled,
}

impl From<Dispatched> for Taken {
    #[inline(always)]
    fn from(d: Dispatched) -> Taken {
        match d {
            Dispatched::Unhandled => Taken::Unhandled,
            Dispatched::Handled | Dispatched::Panicked => Taken::Handled,
        }
    }
}

/// The internal message a state's time limit sends to its agent.
struct TimeLimitExpired {
    state: State,
    epoch: u64,
}

/// The time limit of a state the agent is in.
struct ActiveLimit {
    state: State,
    /// Which visit of the state (a stale expiry of an earlier visit is ignored).
    epoch: u64,
    /// Dropping it (leaving the state) cancels the limit.
    _timer: TimerHandle,
}

pub(super) struct AgentCell<A: Agent> {
    agent: A,
    ctx: Ctx<A>,
    /// Its own handlers, indexed by its layout (`ctx.layout`); its hooks are in its extras.
    handlers: Handlers<A>,
    initial: State,
    /// Ground rules: zero on the hot path.
    gate: u8,
    /// What few agents use (`None` for most: it keeps the cell small).
    extras: Option<Box<Extras<A>>>,
    panic_reaction: PanicReaction,
    /// Keeps its dispatcher alive (`None` only before [`DefinedAgent::attach`]).
    lease: Option<Lease>,
    /// Its coop's start while it is `Pending` (if it reports to one) or `Holding`.
    coop_start: Option<Arc<CoopStart>>,
    /// Where it is in its start (`HELD` while `Holding`).
    phase: StartPhase,
    /// Its `on_start` succeeded: `on_finish` is due.
    started: bool,
    /// It entered its initial states: they are left when it finishes.
    entered: bool,
    /// Why the messages a stopped agent takes are dropped (`STOPPED`).
    stopped: DropReason,
}

/// A zero-sized agent, to hold the cell's own size (the agent's value comes on top).
struct SizeProbe;

impl Agent for SizeProbe {}

// Every agent has one, boxed: 88 bytes and the agent's value, so that a zero-sized agent
// fits a 96-byte chunk of glibc's malloc, an agent of up to 16 bytes a 112-byte chunk, one of
// up to 32 a 128-byte chunk.
const _: () = assert!(std::mem::size_of::<AgentCell<SizeProbe>>() <= 88);

/// The parts of a cell that only some agents use: state hooks, a supervised agent's factory,
/// state time limits, multi-mbox subscriptions, observation, messages held until its coop has
/// started. Boxed in the cell, made by the definition (hooks, supervision), the registration
/// (time limits, subscriptions, observation) or the first message held; an agent that uses
/// none of them has none.
struct Extras<A: Agent> {
    /// Its state hooks, indexed by its layout (`ctx.layout`).
    hooks: Vec<Hook<A>>,
    /// A supervised agent's factory and deferred messages.
    restart: Option<Box<Restartable<A>>>,
    /// Visits of time-limited states so far (a stale expiry of an earlier visit is ignored).
    limit_epoch: u64,
    limit_timers: Vec<ActiveLimit>,
    multi: Vec<(MultiMbox, TypeId)>,
    observe: Observe,
    /// What it took while holding (`StartPhase::Holding`), in the order it came; not empty once
    /// it held one (so its coop knows it must release it).
    held: Vec<Held>,
}

// Not derived: a derive would ask `A: Default`.
impl<A: Agent> Default for Extras<A> {
    fn default() -> Self {
        Extras {
            hooks: Vec::new(),
            restart: None,
            limit_epoch: 0,
            limit_timers: Vec::new(),
            multi: Vec::new(),
            observe: Observe::default(),
            held: Vec::new(),
        }
    }
}

/// The factory and deferred messages of the supervised agent whose extras are `extras` (`None`
/// for an agent that is not supervised).
fn restartable<A: Agent>(extras: &mut Option<Box<Extras<A>>>) -> Option<&mut Restartable<A>> {
    extras.as_mut()?.restart.as_deref_mut()
}

/// Hook `index` of the agent whose extras are `extras` (its layout names only hooks it has).
fn hook<A: Agent>(extras: &Option<Box<Extras<A>>>, index: usize) -> &Hook<A> {
    &extras
        .as_deref()
        .expect("invariant: a layout names hooks its agent has")
        .hooks[index]
}

impl<A: Agent> AgentCell<A> {
    fn shared(&self) -> &Arc<AgentShared> {
        self.ctx.mbox.shared()
    }

    /// True if timing is all that sets the agent's gate and this run is not one its sampler
    /// times: the run takes the hot path (the sampler counted it).
    #[inline(always)]
    fn skips_timing(&self) -> bool {
        self.gate == TIMED && skip_timing()
    }

    /// Releases the message's limit place, finds its handler and runs it (the hot path).
    #[inline(always)]
    fn dispatch(&mut self, source: MboxId, payload: Lent<'_>, limit: LimitSlot) -> Dispatched {
        let shared = self.ctx.mbox.shared();
        if limit != LimitSlot::NONE
            && let Some(b) = shared.binding()
        {
            b.limits().release_taken(limit);
        }
        let Some(handler) = self.handlers.lookup(
            &self.ctx.layout.handlers,
            shared.mbox_id,
            source,
            payload.type_id(),
            self.ctx.state,
        ) else {
            shared.counters().unhandled.fetch_add(1, Ordering::Relaxed);
            shared.stats.count_unhandled();
            tracing::debug!(
                target: "agentry::delivery",
                agent = %self.ctx.id(),
                agent_type = shared.agent_type(),
                message = payload.type_name(),
                state = self.ctx.layout.states.name(self.ctx.state),
                "no handler in the current state"
            );
            payload.take().reject(Undelivered::NoHandler);
            return Dispatched::Unhandled;
        };
        let previous = CURRENT_AGENT.replace(Some(shared.mbox_id));
        let agent = &mut self.agent;
        let ctx = &mut self.ctx;
        let ok = catch_unwind(AssertUnwindSafe(|| handler.call(agent, ctx, payload))).is_ok();
        // Through `with`: `LocalKey::set` is an out-of-line call (it would initialise the key).
        CURRENT_AGENT.with(|current| current.set(previous));
        if !ok {
            self.on_panic();
            return Dispatched::Panicked;
        }
        if self.ctx.pending_state.is_some() {
            self.apply_pending();
        }
        Dispatched::Handled
    }

    /// Everything but the hot path (`gate` is not zero).
    #[inline(never)]
    fn on_message_slow(
        &mut self,
        source: MboxId,
        payload: Payload,
        limit: LimitSlot,
        token: Option<Arc<TimerToken>>,
    ) -> Taken {
        if self.gate & NOT_STARTED != 0 {
            self.start();
        }
        if self.gate & STOPPED != 0 {
            let id = Some(self.ctx.id());
            return drop_message(self.shared(), id, source, payload, limit, self.stopped);
        }
        if self.gate & FAILED != 0 {
            self.defer(Held {
                source,
                payload,
                limit,
                token,
            });
            return Taken::Deferred;
        }
        if self.gate & HELD != 0 && self.still_holding() {
            let held = Held {
                source,
                payload,
                limit,
                token,
            };
            if self.gate & STOPPED != 0 {
                // Its coop failed to start meanwhile.
                let id = Some(self.ctx.id());
                return drop_message(
                    self.shared(),
                    id,
                    held.source,
                    held.payload,
                    held.limit,
                    self.stopped,
                );
            }
            trace_kept(self.shared(), self.ctx.id(), &held);
            if self.phase == StartPhase::Holding {
                self.extras.get_or_insert_with(Box::default).held.push(held);
            }
            return Taken::Deferred;
        }
        if self.gate & TIME_LIMITED != 0 && payload.type_id() == TypeId::of::<TimeLimitExpired>() {
            if let Some(b) = self.shared().binding() {
                b.limits().release_taken(limit);
            }
            if let Ok(expired) = payload.take::<TimeLimitExpired>() {
                self.on_time_limit(expired);
            }
            return Taken::Handled;
        }
        if self.gate & (OBSERVED | TIMED) != 0 {
            return self.dispatch_observed(source, payload, limit);
        }
        payload.lend(|p| self.dispatch(source, p, limit)).into()
    }

    /// [`dispatch`](Self::dispatch) with the agent's observation: a span around it, its time
    /// (the runs its sampler picks), and its trace record.
    fn dispatch_observed(&mut self, source: MboxId, payload: Payload, limit: LimitSlot) -> Taken {
        let state = self.ctx.state;
        let timed = self.gate & TIMED != 0
            && self
                .shared()
                .binding()
                .and_then(|b| b.handler_timing())
                .is_some_and(time_this_run);
        let (spans, traced) = self.extras.as_ref().map_or((false, false), |x| {
            (x.observe.spans, x.observe.trace.is_some())
        });
        // What the message is, read only for a span or a trace record (most runs of a timed
        // agent need neither).
        let described = (spans || traced).then(|| (payload.type_name(), payload.type_id()));
        let span = described.filter(|_| spans).map(|(message, _)| {
            tracing::debug_span!(
                target: "agentry::delivery",
                "handle",
                agent = %self.ctx.id(),
                agent_type = self.shared().agent_type(),
                message,
                mbox = %source
            )
            .entered()
        });
        let started = timed.then(Instant::now);
        let dispatched = payload.lend(|p| self.dispatch(source, p, limit));
        if let Some(started) = started {
            let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            // Made by the agent's first timed run.
            let timing = self.shared().stats.rare().timing.get_or_init(Box::default);
            timing.record(took);
        }
        drop(span);
        let sink = self.extras.as_ref().and_then(|x| x.observe.trace.as_ref());
        if let (Some(sink), Some((message, message_type))) = (sink, described) {
            sink.emit(&TraceRecord {
                agent: Some(self.ctx.id()),
                agent_type: Some(self.shared().agent_type()),
                mbox: Some(source),
                message,
                message_type,
                outcome: match dispatched {
                    Dispatched::Handled => Outcome::Handled,
                    Dispatched::Panicked => Outcome::Panicked,
                    Dispatched::Unhandled => Outcome::Ignored {
                        state: self.ctx.layout.states.name(state),
                    },
                },
            });
        }
        dispatched.into()
    }

    /// Keeps a message for the next incarnation (a failed supervised agent).
    fn defer(&mut self, held: Held) {
        let restart =
            restartable(&mut self.extras).expect("invariant: only supervised agents fail");
        restart.defer(self.ctx.mbox.shared(), self.ctx.id(), held);
    }

    /// A holding agent takes a message: true if it must hold it too (its coop has not
    /// started, or has and its release demand — which handles what it holds first — is on the
    /// way). Stops the agent if its coop failed to start.
    fn still_holding(&mut self) -> bool {
        let (StartPhase::Holding, Some(coop)) = (self.phase, &self.coop_start) else {
            unreachable!("invariant: HELD is set exactly while the agent is holding");
        };
        // Never emptied while holding: not empty once a message was held.
        let registered = self.extras.as_ref().is_some_and(|x| !x.held.is_empty());
        match coop.on_message(self.ctx.mbox.shared(), registered) {
            Go::Hold => true,
            Go::Run if registered => true,
            Go::Run => {
                self.settle();
                false
            }
            Go::RolledBack => {
                let held = self.settle();
                self.stop(DropReason::StartFailed);
                drop_all(self.shared(), self.ctx.id(), held, DropReason::StartFailed);
                true
            }
        }
    }

    /// The coop has started: handles what the agent held, in order, then runs freely.
    fn release(&mut self, cx: &mut IncarnationCx<'_>) {
        let held = self.settle();
        let shared = Arc::clone(self.shared());
        replay(self, &shared, held, cx);
    }

    /// The agent's start is settled: it holds nothing more; returns what it held.
    fn settle(&mut self) -> Vec<Held> {
        self.gate &= !HELD;
        self.coop_start = None;
        match std::mem::replace(&mut self.phase, StartPhase::Settled) {
            StartPhase::Holding => self
                .extras
                .as_mut()
                .map(|x| std::mem::take(&mut x.held))
                .unwrap_or_default(),
            StartPhase::Defined
            | StartPhase::Pending
            | StartPhase::PendingRestart
            | StartPhase::Settled => Vec::new(),
        }
    }

    /// The agent handles nothing more; what it takes is dropped for `why`.
    fn stop(&mut self, why: DropReason) {
        self.gate |= STOPPED;
        self.stopped = why;
    }

    /// Runs `f` with the agent and its context, catching a panic: `Err` with the panic's
    /// message if it panicked.
    fn catching<R>(&mut self, f: impl FnOnce(&mut A, &mut Ctx<A>) -> R) -> Result<R, String> {
        let previous = CURRENT_AGENT.replace(Some(self.ctx.mbox.id()));
        let result = catch_unwind(AssertUnwindSafe(|| f(&mut self.agent, &mut self.ctx)));
        CURRENT_AGENT.set(previous);
        result.map_err(|payload| panic_message(&*payload))
    }

    /// Runs `f` with the agent and its context, catching a panic (and reacting to it). Returns
    /// false on panic.
    fn guarded(&mut self, f: impl FnOnce(&mut A, &mut Ctx<A>)) -> bool {
        let ok = self.catching(f).is_ok();
        if !ok {
            self.on_panic();
        }
        ok
    }

    fn on_panic(&mut self) {
        self.count_panic();
        self.react_to_failure();
    }

    fn count_panic(&self) {
        let shared = self.shared();
        shared.stats.rare().panics.fetch_add(1, Ordering::Relaxed);
        shared.counters().panics.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            agent = %self.ctx.id(),
            agent_type = shared.agent_type(),
            state = self.ctx.layout.states.name(self.ctx.state),
            reaction = ?self.panic_reaction,
            "handler panicked"
        );
    }

    /// The agent's panic reaction to a failure of its own (a panic, or a supervised
    /// incarnation's failed start).
    fn react_to_failure(&mut self) {
        self.ctx.pending_state = None;
        match self.panic_reaction {
            // Leaving anyway (its coop is going, or its supervisor is stopping it).
            _ if self.ctx.finishing => {}
            PanicReaction::Ignore => {}
            PanicReaction::Supervise => self.fail(),
            reaction => {
                self.stop(DropReason::AgentFailed);
                self.host().react_to_agent_panic(reaction, self.ctx.coop());
            }
        }
    }

    /// A supervised failure: stop handling and tell the supervisor (ground rules). Without a
    /// supervisor the reaction is `DeregisterCoop`.
    fn fail(&mut self) {
        if self.gate & FAILED != 0 {
            return;
        }
        let link = self
            .shared()
            .binding()
            .and_then(|b| b.supervisor())
            .filter(|_| self.extras.as_ref().is_some_and(|x| x.restart.is_some()));
        match link {
            Some(link) => {
                link.report_failure(self.ctx.id());
                self.gate |= FAILED;
            }
            None => {
                self.stop(DropReason::AgentFailed);
                self.host()
                    .react_to_agent_panic(PanicReaction::DeregisterCoop, self.ctx.coop());
            }
        }
    }

    /// Leaves state `s`: cancels its time limit and runs its on_exit hook. False if the hook
    /// panicked.
    fn leave(&mut self, s: State) -> bool {
        if let Some(x) = &mut self.extras {
            x.limit_timers.retain(|limit| limit.state != s);
        }
        match self.ctx.layout.states.on_exit(s) {
            Some(index) => {
                catch_hook(&mut self.agent, &mut self.ctx, hook(&self.extras, index)).is_ok()
            }
            None => true,
        }
    }

    /// Enters state `s`: makes it current, starts its time limit and runs its on_enter hook.
    /// `Err` with the panic's message if the hook panicked.
    fn enter(&mut self, s: State) -> Result<(), String> {
        self.ctx.state = s;
        if let Some((limit, _)) = self.ctx.layout.states.time_limit(s) {
            let x = self.extras.get_or_insert_with(Box::default);
            x.limit_epoch += 1;
            let epoch = x.limit_epoch;
            let expired = TimeLimitExpired { state: s, epoch };
            let timer = self.ctx.send_delayed(&self.ctx.mbox, limit, expired);
            x.limit_timers.push(ActiveLimit {
                state: s,
                epoch,
                _timer: timer,
            });
        }
        match self.ctx.layout.states.on_enter(s) {
            Some(index) => catch_hook(&mut self.agent, &mut self.ctx, hook(&self.extras, index)),
            None => Ok(()),
        }
    }

    /// Runs the hooks of one transition; stops at the first panicking hook.
    fn run_transition(&mut self, to: State) {
        let t = self.ctx.layout.states.transition(self.ctx.state, to);
        self.ctx.in_transition = true;
        let mut ok = true;
        for s in t.exits {
            ok = self.leave(s);
            if !ok {
                break;
            }
            self.ctx.state = self.ctx.layout.states.parent(s).unwrap_or(State::DEFAULT);
        }
        if ok {
            for s in t.enters {
                ok = self.enter(s).is_ok();
                if !ok {
                    break;
                }
            }
        }
        self.ctx.in_transition = false;
        if ok {
            self.ctx.state = t.target;
        } else {
            self.on_panic();
        }
    }

    /// A state's time limit expired: switch to its target if the agent is still in that very
    /// visit of the state (not if it left, or left and came back).
    fn on_time_limit(&mut self, TimeLimitExpired { state, epoch }: TimeLimitExpired) {
        let Some(x) = &mut self.extras else {
            return;
        };
        let Some(pos) = x
            .limit_timers
            .iter()
            .position(|l| l.state == state && l.epoch == epoch)
        else {
            return;
        };
        x.limit_timers.swap_remove(pos);
        if let Some((_, then)) = self.ctx.layout.states.time_limit(state) {
            self.run_transition(then);
            self.ctx.mbox.shared().publish_state(self.ctx.state.0);
        }
    }

    fn apply_pending(&mut self) {
        if let Some(to) = self.ctx.pending_state.take() {
            if self.ctx.layout.states.is_structured() {
                self.run_transition(to);
            } else {
                self.ctx.state = to;
            }
            self.ctx.mbox.shared().publish_state(self.ctx.state.0);
        }
    }

    /// Starts the agent (its initial states, then `on_start`) and reports the outcome
    /// (`agent/start.rs`).
    fn start(&mut self) {
        self.gate &= !NOT_STARTED;
        let restart = match std::mem::replace(&mut self.phase, StartPhase::Settled) {
            StartPhase::Pending => false,
            StartPhase::PendingRestart => true,
            StartPhase::Defined | StartPhase::Holding | StartPhase::Settled => {
                unreachable!("invariant: an agent starts once")
            }
        };
        let coop = self.coop_start.take();
        if let Some(coop) = &coop
            && coop.has_failed()
        {
            // A sibling failed first: this agent never starts (nor finishes).
            self.stop(DropReason::StartFailed);
            return;
        }
        match self.run_start() {
            Ok(()) => {
                self.started = true;
                self.apply_pending();
                if let Some(coop) = coop {
                    match coop.started() {
                        Go::Run => {}
                        Go::Hold => {
                            self.gate |= HELD;
                            self.phase = StartPhase::Holding;
                            self.coop_start = Some(coop);
                        }
                        Go::RolledBack => self.stop(DropReason::StartFailed),
                    }
                }
            }
            Err(failure) if restart => self.restart_failed(failure),
            Err(failure) => self.start_failed(coop, failure),
        }
    }

    /// Enters the initial states and runs `on_start`.
    fn run_start(&mut self) -> Result<(), StartFailure> {
        self.entered = true;
        let target = if self.ctx.layout.states.is_structured() {
            let entry = self.ctx.layout.states.entry_path(self.initial);
            self.ctx.in_transition = true;
            for s in entry.enters {
                if let Err(message) = self.enter(s) {
                    self.ctx.in_transition = false;
                    return Err(StartFailure::Panicked(message));
                }
            }
            self.ctx.in_transition = false;
            entry.target
        } else {
            // No hook, initial substate or time limit: entering the states is taking the
            // initial one (and nothing is allocated for the path).
            self.initial
        };
        self.ctx.state = target;
        self.ctx
            .mbox
            .shared()
            .publish_started(&self.ctx.layout, target.0);
        let outcome = match self.catching(|agent, ctx| agent.on_start(ctx)) {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(error)) => StartFailure::Error(error),
            Err(message) => StartFailure::Panicked(message),
        };
        self.ctx.pending_state = None;
        Err(outcome)
    }

    /// A failed start's panic is counted as the agent's, and aborts if that is its reaction.
    fn count_start_panic(&mut self, failure: &StartFailure) {
        if let StartFailure::Panicked(_) = failure {
            self.count_panic();
            if self.panic_reaction == PanicReaction::Abort {
                self.host()
                    .react_to_agent_panic(PanicReaction::Abort, self.ctx.coop());
            }
        }
    }

    /// A restarted agent failed to start: its supervisor is told, as of a panic.
    fn restart_failed(&mut self, failure: StartFailure) {
        self.count_start_panic(&failure);
        tracing::error!(
            agent = %self.ctx.id(),
            agent_type = self.shared().agent_type(),
            %failure,
            "a restarted agent failed to start"
        );
        self.react_to_failure();
    }

    /// The agent failed to start at its registration: its coop is rolled back. `coop` is the
    /// coop's start it reports to, if any (else its failure is the verdict on its own).
    fn start_failed(&mut self, coop: Option<Arc<CoopStart>>, failure: StartFailure) {
        self.count_start_panic(&failure);
        self.stop(DropReason::StartFailed);
        let agent_type = self.shared().agent_type();
        tracing::error!(
            agent = %self.ctx.id(),
            agent_type,
            coop = %self.ctx.coop(),
            %failure,
            "agent failed to start; its coop is rolled back"
        );
        let mbox_id = self.shared().mbox_id;
        let first = coop.is_none_or(|coop| {
            coop.failed(Failed {
                index: self.host().position_in_coop(self.ctx.coop(), mbox_id),
                agent_type,
                failure,
            })
        });
        if first {
            // Already leaving (deregistered meanwhile) is fine: it goes either way.
            self.host()
                .deregister_for_agent(self.ctx.coop(), DeregReason::StartFailed);
        }
    }
}

/// Runs a state hook, catching a panic: `Err` with the panic's message if it panicked.
fn catch_hook<A>(
    agent: &mut A,
    ctx: &mut Ctx<A>,
    hook: &super::state::Hook<A>,
) -> Result<(), String> {
    let previous = CURRENT_AGENT.replace(Some(ctx.mbox.id()));
    let result = catch_unwind(AssertUnwindSafe(|| hook(agent, ctx)));
    CURRENT_AGENT.set(previous);
    result.map_err(|payload| panic_message(&*payload))
}

impl<A: Agent> AgentCell<A> {
    /// Ends this incarnation: `on_finish`, every state left (innermost first). Its multi-mbox
    /// subscriptions stay (see [`unsubscribe`](Self::unsubscribe)).
    fn finish_incarnation(&mut self) {
        if self.gate & NOT_STARTED != 0 {
            self.start();
        }
        self.ctx.finishing = true;
        if self.started {
            self.guarded(|agent, ctx| agent.on_finish(ctx));
        }
        self.ctx.pending_state = None;
        // Without hooks or time limits, leaving the states does nothing (as entering them
        // was taking the initial one).
        if !self.entered || !self.ctx.layout.states.is_structured() {
            return;
        }
        // Leave every state, innermost first (the layout held apart from the cell, whose
        // hooks run meanwhile).
        let layout = Arc::clone(&self.ctx.layout);
        self.ctx.in_transition = true;
        for s in layout.states.self_and_ancestors(self.ctx.state) {
            if !self.leave(s) {
                self.on_panic();
                break;
            }
        }
        self.ctx.in_transition = false;
    }

    /// Ends the agent's multi-mbox subscriptions.
    fn unsubscribe(&mut self) {
        if let Some(x) = &mut self.extras {
            unsubscribe(self.ctx.mbox.id(), std::mem::take(&mut x.multi));
        }
    }

    /// Its env, reached through its mbox (the cell keeps none), on the rare paths that need it.
    fn host(&self) -> Arc<dyn AgentHost> {
        self.shared().env().expect(ENV_LIVES)
    }

    /// A supervisor's `Stop`: this incarnation ends, the slot moves on to the next one (a new
    /// id), the agent value is dropped, and a suspended body takes the slot
    /// (`agent/restart.rs`).
    fn stop_for_restart(mut self, epoch: u64, cx: &mut IncarnationCx<'_>) -> Body {
        self.finish_incarnation();
        self.host().watcher_gone(self.ctx.mbox.id());
        // The ending incarnation's, for the log below (the binding moves on to the next).
        let id = self.ctx.id();
        let next = cx.next_incarnation();
        let b = self
            .shared()
            .binding()
            .expect("invariant: a registered agent is bound");
        b.set_incarnation(next);
        let link = b.supervisor().cloned();
        let timed = self.gate & TIMED != 0;
        let AgentCell {
            agent,
            ctx,
            lease,
            extras,
            ..
        } = self;
        let Extras {
            restart,
            mut observe,
            multi,
            ..
        } = *extras.expect("invariant: a supervised agent has extras (its factory)");
        // Kept by the bit, not the extras (a timed-only agent has none).
        observe.time_handlers |= timed;
        if catch_unwind(AssertUnwindSafe(move || drop(agent))).is_err() {
            ctx.mbox
                .shared()
                .stats
                .rare()
                .panics
                .fetch_add(1, Ordering::Relaxed);
            ctx.mbox
                .shared()
                .counters()
                .panics
                .fetch_add(1, Ordering::Relaxed);
            tracing::error!(agent = %id, "agent panicked while being dropped");
        }
        let suspended = Suspended {
            coop: ctx.coop(),
            mbox: ctx.mbox,
            id: next.id(),
            lease: lease.expect("invariant: an attached cell holds its lease"),
            binder: ctx.binder,
            restart: restart.expect("invariant: only supervised agents are stopped"),
            observe,
            multi,
        };
        if let Some(link) = link {
            link.ack(epoch, crate::mbox::supervisor_link::Ack::Stopped);
        }
        erase(BlockBox::new(suspended))
    }

    /// A supervisor's control demand, or its coop's start verdict (`slab/body.rs`).
    fn control(this: BlockBox<Self>, control: Control, cx: &mut IncarnationCx<'_>) -> Body {
        match control {
            Control::Stop { epoch } => this.into_inner().stop_for_restart(epoch, cx),
            Control::Release => {
                let mut this = this;
                this.release(cx);
                erase(this)
            }
            // Running already: what `Start` asks for (the supervisor only starts what it
            // stopped, so this does not happen; the ack keeps it from waiting regardless).
            Control::Start { epoch } => {
                if let Some(link) = this.shared().binding().and_then(|b| b.supervisor()) {
                    link.ack(epoch, crate::mbox::supervisor_link::Ack::Started);
                }
                erase(this)
            }
        }
    }
}

impl<A: Agent> AgentBody for AgentCell<A> {
    fn on_start(&mut self) {
        if self.gate & NOT_STARTED != 0 {
            self.start();
        }
    }

    #[inline]
    fn on_message(&mut self, source: MboxId, payload: Lent<'_>, limit: LimitSlot) -> Taken {
        if self.gate != 0 && !self.skips_timing() {
            return self.on_message_slow(source, payload.take(), limit, None);
        }
        self.dispatch(source, payload, limit).into()
    }

    fn on_timer_message(
        &mut self,
        source: MboxId,
        payload: Payload,
        limit: LimitSlot,
        token: Arc<TimerToken>,
    ) -> Taken {
        if self.gate != 0 && !self.skips_timing() {
            return self.on_message_slow(source, payload, limit, Some(token));
        }
        payload.lend(|p| self.dispatch(source, p, limit)).into()
    }

    fn discard(&mut self, source: MboxId, payload: Payload, limit: LimitSlot) {
        revoked(
            self.ctx.mbox.shared(),
            self.ctx.id(),
            source,
            payload,
            limit,
        );
    }

    fn on_finish(&mut self) -> Exit {
        self.shared().stop_accepting();
        self.finish_incarnation();
        self.unsubscribe();
        let shared = Arc::clone(self.shared());
        let why = if self.gate & STOPPED != 0 {
            self.stopped
        } else {
            DropReason::CoopDeregistering
        };
        let held = self.settle();
        drop_all(&shared, self.ctx.id(), held, why);
        if let Some(restart) = restartable(&mut self.extras) {
            let deferred = std::mem::take(&mut restart.deferred);
            drop_all(
                &shared,
                self.ctx.id(),
                deferred,
                DropReason::CoopDeregistering,
            );
        }
        Exit {
            coop: self.ctx.coop(),
            agent: shared,
        }
    }

    fn control_fn(&self) -> ControlFn {
        |body, control, cx| Self::control(own(body), control, cx)
    }

    fn state_name(&self) -> &str {
        self.ctx.layout.states.name(self.ctx.state)
    }
}
