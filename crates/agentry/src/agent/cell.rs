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

use super::Agent;
use super::ctx::Ctx;
use super::define::Define;
use super::handlers::HandlerTable;
use super::shared::AgentShared;
use super::state::{State, StateTree};
use crate::coop::PanicReaction;
use crate::demand::LimitSlot;
use crate::disp::Lease;
use crate::env::EnvHandle;
use crate::error::DefineError;
use crate::ids::{AgentId, CoopId, MboxId};
use crate::mbox::{Mbox, MultiMbox};
use crate::message::Undelivered;
use crate::message::payload::Payload;
use crate::priority::Priority;
use crate::timer::TimerHandle;
use std::any::TypeId;
use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

thread_local! {
    static CURRENT_AGENT: Cell<Option<AgentId>> = const { Cell::new(None) };
}

/// The agent whose handler is running on this thread, if any.
pub(crate) fn current_agent() -> Option<AgentId> {
    CURRENT_AGENT.get()
}

/// What a dispatcher can ask of an agent.
pub(crate) trait AgentBody: Send {
    /// Runs `on_start` (once; later calls do nothing).
    fn on_start(&mut self);
    /// Handles one message; returns false if the agent had no handler for it in its current
    /// state (the message was then rejected and counted).
    fn on_message(&mut self, source: MboxId, payload: Payload, limit: LimitSlot) -> bool;
    /// Drops a message that must not be handled (its timer was cancelled), giving back its
    /// place under the agent's message limit.
    fn discard(&mut self, payload: Payload, limit: LimitSlot);
    /// Runs `on_finish` and leaves every state; the body is dropped next.
    fn on_finish(&mut self) -> Exit;
}

/// Who to tell once a finished agent's body has been dropped.
pub(crate) struct Exit {
    pub(crate) env: EnvHandle,
    pub(crate) coop: CoopId,
}

/// Registration, step 1: an agent not yet defined.
pub(crate) trait UndefinedAgent: Send {
    fn agent_type(&self) -> &'static str;
    fn define(self: Box<Self>, me: Mbox) -> Result<Box<dyn DefinedAgent>, DefineError>;
}

/// Registration, step 2: a defined agent whose sender-side parts are handed to its
/// [`Binding`](super::shared::Binding) and whose body goes into the slab.
pub(crate) trait DefinedAgent: Send {
    /// The priority the agent declared (for binding).
    fn priority(&self) -> Priority;
    fn take_sender_parts(&mut self) -> SenderParts;
    fn into_body(self: Box<Self>, attach: Attach) -> Box<dyn AgentBody>;
}

/// The parts of a definition that senders use.
pub(crate) struct SenderParts {
    pub(crate) insend: super::insend::InsendTable,
    pub(crate) limits: Vec<crate::limit::LimitEntry>,
    pub(crate) multi: Vec<super::define::MultiSubscriptionDef>,
    pub(crate) panic_reaction: Option<PanicReaction>,
}

/// What the body learns at registration commit.
pub(crate) struct Attach {
    pub(crate) id: AgentId,
    pub(crate) coop: CoopId,
    pub(crate) env: EnvHandle,
    pub(crate) panic_reaction: PanicReaction,
    pub(crate) multi: Vec<(MultiMbox, TypeId)>,
    /// Keeps the agent's dispatcher alive until the body is dropped.
    pub(crate) lease: Lease,
}

impl<A: Agent> UndefinedAgent for A {
    fn agent_type(&self) -> &'static str {
        std::any::type_name::<A>()
    }

    fn define(mut self: Box<Self>, me: Mbox) -> Result<Box<dyn DefinedAgent>, DefineError> {
        let mut def = Define::new(me);
        self.as_mut().define(&mut def)?;
        Ok(Box::new(DefinedCell { agent: *self, def }))
    }
}

struct DefinedCell<A: Agent> {
    agent: A,
    def: Define<A>,
}

impl<A: Agent> DefinedAgent for DefinedCell<A> {
    fn priority(&self) -> Priority {
        self.def.priority
    }

    fn take_sender_parts(&mut self) -> SenderParts {
        SenderParts {
            insend: std::mem::take(&mut self.def.insend),
            limits: std::mem::take(&mut self.def.limits),
            multi: std::mem::take(&mut self.def.multi),
            panic_reaction: self.def.panic_reaction,
        }
    }

    fn into_body(self: Box<Self>, attach: Attach) -> Box<dyn AgentBody> {
        let DefinedCell { agent, def } = *self;
        let Define {
            me,
            states,
            mut table,
            initial,
            ..
        } = def;
        table.resolve(&states);
        Box::new(AgentCell {
            agent,
            ctx: Ctx {
                mbox: me,
                id: attach.id,
                coop: attach.coop,
                env: attach.env,
                state: State::DEFAULT,
                state_names: states.names(),
                in_transition: false,
                pending_state: None,
                _agent: PhantomData,
            },
            time_limited: states.has_time_limits(),
            limit_epoch: 0,
            limit_timers: Vec::new(),
            states,
            table,
            initial,
            started: false,
            multi: attach.multi,
            panic_reaction: attach.panic_reaction,
            _lease: attach.lease,
        })
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

struct AgentCell<A: Agent> {
    agent: A,
    ctx: Ctx<A>,
    states: StateTree<A>,
    table: HandlerTable<A>,
    initial: State,
    started: bool,
    time_limited: bool,
    limit_epoch: u64,
    limit_timers: Vec<ActiveLimit>,
    multi: Vec<(MultiMbox, TypeId)>,
    panic_reaction: PanicReaction,
    _lease: Lease,
}

impl<A: Agent> AgentCell<A> {
    fn shared(&self) -> &Arc<AgentShared> {
        self.ctx.mbox.shared()
    }

    /// Runs `f` with the agent and its context, catching a panic. Returns false on panic.
    fn guarded(&mut self, f: impl FnOnce(&mut A, &mut Ctx<A>)) -> bool {
        let previous = CURRENT_AGENT.replace(Some(self.ctx.id));
        let ok = catch_unwind(AssertUnwindSafe(|| f(&mut self.agent, &mut self.ctx))).is_ok();
        CURRENT_AGENT.set(previous);
        if !ok {
            self.on_panic();
        }
        ok
    }

    fn on_panic(&mut self) {
        let shared = self.shared();
        shared.stats.panics.fetch_add(1, Ordering::Relaxed);
        shared.counters.panics.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            agent = %self.ctx.id,
            agent_type = shared.agent_type,
            state = self.states.name(self.ctx.state),
            reaction = ?self.panic_reaction,
            "handler panicked"
        );
        self.ctx.pending_state = None;
        self.ctx
            .env
            .inner()
            .react_to_panic(self.panic_reaction, self.ctx.coop);
    }

    /// Leaves state `s`: cancels its time limit and runs its on_exit hook. False if the hook
    /// panicked.
    fn leave(&mut self, s: State) -> bool {
        self.limit_timers.retain(|limit| limit.state != s);
        match self.states.on_exit(s) {
            Some(hook) => catch_hook(&mut self.agent, &mut self.ctx, hook),
            None => true,
        }
    }

    /// Enters state `s`: makes it current, starts its time limit and runs its on_enter hook.
    /// False if the hook panicked.
    fn enter(&mut self, s: State) -> bool {
        self.ctx.state = s;
        if let Some((limit, _)) = self.states.time_limit(s) {
            self.limit_epoch += 1;
            let expired = TimeLimitExpired {
                state: s,
                epoch: self.limit_epoch,
            };
            let timer = self.ctx.send_delayed(&self.ctx.mbox, limit, expired);
            self.limit_timers.push(ActiveLimit {
                state: s,
                epoch: self.limit_epoch,
                _timer: timer,
            });
        }
        match self.states.on_enter(s) {
            Some(hook) => catch_hook(&mut self.agent, &mut self.ctx, hook),
            None => true,
        }
    }

    /// Runs the hooks of one transition; stops at the first panicking hook.
    fn run_transition(&mut self, to: State) {
        let t = self.states.transition(self.ctx.state, to);
        self.ctx.in_transition = true;
        let mut ok = true;
        for s in t.exits {
            ok = self.leave(s);
            if !ok {
                break;
            }
            self.ctx.state = self.states.parent(s).unwrap_or(State::DEFAULT);
        }
        if ok {
            for s in t.enters {
                ok = self.enter(s);
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
        let Some(pos) = self
            .limit_timers
            .iter()
            .position(|l| l.state == state && l.epoch == epoch)
        else {
            return;
        };
        self.limit_timers.swap_remove(pos);
        if let Some((_, then)) = self.states.time_limit(state) {
            self.run_transition(then);
        }
    }

    fn apply_pending(&mut self) {
        if let Some(to) = self.ctx.pending_state.take() {
            if self.states.is_structured() {
                self.run_transition(to);
            } else {
                self.ctx.state = to;
            }
        }
    }

    fn start(&mut self) {
        self.started = true;
        let entry = self.states.entry_path(self.initial);
        self.ctx.in_transition = true;
        let mut ok = true;
        for s in entry.enters {
            ok = self.enter(s);
            if !ok {
                break;
            }
        }
        self.ctx.in_transition = false;
        if !ok {
            self.on_panic();
            return;
        }
        self.ctx.state = entry.target;
        if self.guarded(|agent, ctx| agent.on_start(ctx)) {
            self.apply_pending();
        }
    }
}

/// Runs a state hook, catching a panic; returns false on panic.
fn catch_hook<A>(agent: &mut A, ctx: &mut Ctx<A>, hook: &super::state::Hook<A>) -> bool {
    let previous = CURRENT_AGENT.replace(Some(ctx.id));
    let ok = catch_unwind(AssertUnwindSafe(|| hook(agent, ctx))).is_ok();
    CURRENT_AGENT.set(previous);
    ok
}

impl<A: Agent> AgentBody for AgentCell<A> {
    fn on_start(&mut self) {
        if !self.started {
            self.start();
        }
    }

    #[inline]
    fn on_message(&mut self, source: MboxId, payload: Payload, limit: LimitSlot) -> bool {
        if !self.started {
            self.start();
        }
        let shared = self.ctx.mbox.shared();
        if limit != LimitSlot::NONE
            && let Some(b) = shared.binding()
        {
            b.limits.release(limit);
        }
        if self.time_limited && payload.type_id() == TypeId::of::<TimeLimitExpired>() {
            let expired = payload.take::<TimeLimitExpired>();
            if let Ok(expired) = expired {
                self.on_time_limit(expired);
            }
            return true;
        }
        let Some(handler) = self.table.lookup(source, payload.type_id(), self.ctx.state) else {
            shared.counters.unhandled.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                target: "agentry::delivery",
                agent = %self.ctx.id,
                agent_type = shared.agent_type,
                message = payload.type_name(),
                state = self.states.name(self.ctx.state),
                "no handler in the current state"
            );
            payload.reject(Undelivered::NoHandler);
            return false;
        };
        let previous = CURRENT_AGENT.replace(Some(self.ctx.id));
        let agent = &mut self.agent;
        let ctx = &mut self.ctx;
        // SAFETY: the handler belongs to `self.table`, which is alive and not touched while
        // the handler runs (handlers.rs ground rules).
        let ok = catch_unwind(AssertUnwindSafe(|| unsafe {
            handler.call(agent, ctx, payload)
        }))
        .is_ok();
        CURRENT_AGENT.set(previous);
        if !ok {
            self.on_panic();
        } else if self.ctx.pending_state.is_some() {
            self.apply_pending();
        }
        true
    }

    fn discard(&mut self, payload: Payload, limit: LimitSlot) {
        if let Some(b) = self.ctx.mbox.shared().binding() {
            b.limits.release(limit);
        }
        drop(payload);
    }

    fn on_finish(&mut self) -> Exit {
        if !self.started {
            self.start();
        }
        self.shared().stop_accepting();
        self.guarded(|agent, ctx| agent.on_finish(ctx));
        self.ctx.pending_state = None;
        // Leave every state, innermost first.
        let exits: Vec<State> = self.states.self_and_ancestors(self.ctx.state).collect();
        self.ctx.in_transition = true;
        for s in exits {
            if !self.leave(s) {
                self.on_panic();
                break;
            }
        }
        self.ctx.in_transition = false;
        let me = self.ctx.mbox.id();
        for (mbox, type_id) in self.multi.drain(..) {
            mbox.remove_subscriber(type_id, me);
        }
        Exit {
            env: self.ctx.env.clone(),
            coop: self.ctx.coop,
        }
    }
}
