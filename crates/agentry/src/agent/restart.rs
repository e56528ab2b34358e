//! Restarting a supervised agent in place: the agent's side of supervision (the supervisor's
//! side is `supervision.rs`).
//!
//! # Ground rules
//!
//! - A supervised agent is added with a factory. Its supervisor restarts it with two *control
//!   demands* (`Kind::CONTROL`), which go through the agent's own queue and are run by its own
//!   worker, so the slab's rule — one thread touches a body — holds throughout:
//!   1. `Stop`: the current incarnation finishes (`on_finish`, every state left, the watches
//!      it made removed); the slot moves on to the next generation, which is the next
//!      incarnation's [`AgentId`]; the agent value is dropped; a [`Suspended`] body takes the
//!      slot. Its multi-mbox subscriptions stay, so what is published meanwhile is deferred
//!      like the rest.
//!   2. `Start` (after the backoff): the factory makes a fresh agent, which defines itself; the
//!      old subscriptions are replaced by the new definition's; it takes the slot, runs
//!      `on_start`, then takes the messages deferred meanwhile, in the order they came.
//!
//!   Each is acknowledged to the supervisor, which sequences the children.
//! - What stays: the [`Mbox`] (same `MboxId`, same `Arc`), its dispatcher binding and queue,
//!   its insend handlers and message limits (they belong to the mbox: senders read them with no
//!   synchronisation, so they cannot be swapped — see `mbox/direct.rs`), its counters and
//!   stats. A new definition must declare the same insend message types and the same limits
//!   (types and maxima) and, for an agent added with its typed address, handle its protocol
//!   (`protocol.rs`); otherwise the start fails (acknowledged `StartFailed`, counted by the
//!   supervisor as another failure) and the agent stays suspended. Its handlers, states, hooks
//!   and multi-mbox subscriptions are the new definition's.
//! - A failed or suspended agent's insend handlers still run on the senders' threads: they
//!   never touch the agent, and they are the first incarnation's.
//! - Messages are kept, never silently lost:
//!   - the message whose handler panicked is consumed by the panic (counted in `panics`);
//!   - from the failure on, every message the failed incarnation takes — queued before the
//!     failure or sent after — is *deferred*: kept, with its limit place (so limits bound the
//!     deferred messages too) and, for a timer's message, its token;
//!   - while suspended, the mbox keeps accepting; messages are deferred the same way;
//!   - the new incarnation takes the deferred messages first, in order, then the queue: the
//!     per-sender FIFO order holds across the restart. A deferred timer message cancelled
//!     meanwhile is discarded (counted in `timers_revoked`);
//!   - messages published to a multi mbox are deferred the same way (the subscriptions stay
//!     through the suspension); one published at the very moment the next incarnation
//!     replaces the subscriptions may miss the agent (counted, e.g. in `no_subscribers`);
//!   - a *healthy* agent restarted with a failed sibling (one-for-all, rest-for-one) handles
//!     what was queued before its `Stop` in its old incarnation, the rest in the new one;
//!   - if the agent's coop is deregistered while it holds deferred messages, they are dropped
//!     and counted (`dead_letters`, `AgentStats::dropped`; traced `CoopDeregistering`);
//!     requests among them are answered `AgentGone`.
//! - Demands made for an earlier incarnation are still admitted by the slab (same lineage,
//!   `slab.rs`), so a send that read the previous generation reaches the current body.

use super::cell::{
    AgentCell, Attach, DefinedAgent, Observe, Placement, StartTicket, UndefinedAgent, attached,
    define_cell, taken,
};
use super::define::{Define, DefinitionCheck};
use super::held::{Held, drop_all, replay, revoked, trace_kept};
use super::{Agent, run_definition};
use crate::demand::Demand;
use crate::disp::{Binder, Lease};
use crate::ids::{AgentId, CoopId, MboxId};
use crate::mbox::direct::AgentShared;
use crate::mbox::limit::shape_of;
use crate::mbox::supervisor_link::Ack;
use crate::mbox::supervisor_link::SupervisorLink;
use crate::mbox::{Mbox, MultiMbox};
use crate::message::LimitSlot;
use crate::message::payload::{Lent, Payload};
use crate::panic_reaction::PanicReaction;
use crate::slab::IncarnationCx;
pub(crate) use crate::slab::body::Control;
use crate::slab::body::{AgentBody, Body, ControlFn, Exit, Taken, erase, own};
use crate::sync::blocks::BlockBox;
use crate::timer::token::TimerToken;
use crate::trace::DropReason;
use std::any::TypeId;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Queues a control demand for a supervised agent; false if it cannot get one (not bound, or
/// its dispatcher is closed).
pub(crate) fn send_control(agent: &AgentShared, control: Control) -> bool {
    let Some(b) = agent.binding() else {
        return false;
    };
    b.queue
        .push(Demand::control(
            b.incarnation(),
            agent.mbox_id,
            Payload::new(control),
        ))
        .is_ok()
}

/// Makes a supervised agent's incarnations.
pub(crate) type Factory<A> = Box<dyn FnMut() -> A + Send>;

/// A supervised agent as added to its coop: its first incarnation, its factory, and what its
/// registration checks of every incarnation's definition.
pub(crate) struct SupervisedAgent<A: Agent> {
    first: A,
    factory: Factory<A>,
    check: DefinitionCheck<A>,
}

impl<A: Agent> SupervisedAgent<A> {
    /// Makes the first incarnation at once.
    pub(crate) fn new(
        mut factory: impl FnMut() -> A + Send + 'static,
        check: DefinitionCheck<A>,
    ) -> Self {
        SupervisedAgent {
            first: factory(),
            factory: Box::new(factory),
            check,
        }
    }
}

impl<A: Agent> SupervisedAgent<A> {
    /// Its registration's first step: the first incarnation defined with the factory kept for
    /// the next ones.
    pub(crate) fn undefined(self) -> UndefinedAgent {
        UndefinedAgent::with(self, |value, me, at| {
            let SupervisedAgent {
                first,
                factory,
                check,
            } = taken::<SupervisedAgent<A>>(value);
            let restart = Box::new(Restartable {
                factory,
                check,
                deferred: Vec::new(),
            });
            define_cell(first, me, at, check, Some(restart))
        })
    }
}

/// What a supervised agent carries from one incarnation to the next.
pub(crate) struct Restartable<A: Agent> {
    factory: Factory<A>,
    check: DefinitionCheck<A>,
    /// Messages kept for the next incarnation, in the order they came.
    pub(crate) deferred: Vec<Held>,
}

impl<A: Agent> Restartable<A> {
    /// Keeps a message for the next incarnation (ground rules).
    pub(crate) fn defer(&mut self, shared: &AgentShared, id: AgentId, held: Held) {
        trace_kept(shared, id, &held);
        self.deferred.push(held);
    }
}

/// A supervised agent between two incarnations: it defers every message until `Start`.
pub(crate) struct Suspended<A: Agent> {
    pub(crate) mbox: Mbox,
    /// The next incarnation's id (the slot already carries its generation).
    pub(crate) id: AgentId,
    pub(crate) coop: CoopId,
    pub(crate) lease: Lease,
    /// The binder the agent was bound with (the next incarnation's too).
    pub(crate) binder: Binder,
    pub(crate) restart: Box<Restartable<A>>,
    pub(crate) observe: Observe,
    /// The last incarnation's multi-mbox subscriptions (kept until the next one subscribes).
    pub(crate) multi: Vec<(MultiMbox, TypeId)>,
}

/// Ends the multi-mbox subscriptions `multi` of the agent whose mbox is `me`.
pub(crate) fn unsubscribe(me: MboxId, multi: Vec<(MultiMbox, TypeId)>) {
    for (mbox, type_id) in multi {
        mbox.remove_subscriber(type_id, me);
    }
}

impl<A: Agent> Suspended<A> {
    fn link(&self) -> Option<SupervisorLink> {
        self.mbox
            .shared()
            .binding()
            .and_then(|b| b.supervisor().cloned())
    }

    /// A fresh agent from the factory, defined and checked against what belongs to the mbox.
    fn make(&mut self) -> Result<(A, Define<A>), String> {
        let factory = &mut self.restart.factory;
        let mut agent =
            catch_unwind(AssertUnwindSafe(factory)).map_err(|_| "the factory panicked")?;
        let mut def = Define::new(self.mbox.clone(), None);
        let check = self.restart.check;
        match catch_unwind(AssertUnwindSafe(|| {
            run_definition(&mut agent, &mut def)?;
            check.run(&def)
        })) {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(format!("define failed: {error}")),
            Err(_) => return Err("define panicked".into()),
        }
        let b = self
            .mbox
            .shared()
            .binding()
            .expect("invariant: a suspended agent is bound");
        let (bound_insend, bound_priorities) = match b.type_rules() {
            Some(rules) => (rules.insend.type_ids(), rules.priorities.sorted()),
            None => (Vec::new(), Vec::new()),
        };
        let mut insend = def.insend.type_ids();
        insend.sort();
        if insend != bound_insend
            || def.event_priorities.sorted() != bound_priorities
            || shape_of(&def.limits) != b.limits().shape()
        {
            return Err(
                "the new definition declares other insend handlers, event priorities \
                 or message limits"
                    .into(),
            );
        }
        Ok((agent, def))
    }

    /// A supervisor's `Start` (ground rules).
    fn start(mut this: BlockBox<Self>, epoch: u64, cx: &mut IncarnationCx<'_>) -> Body {
        let link = this.link();
        let (agent, def) = match this.make() {
            Ok(made) => made,
            Err(why) => {
                tracing::error!(
                    agent = %this.id,
                    agent_type = this.mbox.shared().agent_type(),
                    why,
                    "supervised agent could not be restarted"
                );
                if let Some(link) = link {
                    link.ack(epoch, Ack::StartFailed);
                }
                return erase(this);
            }
        };
        let Suspended {
            mbox,
            id: _,
            coop: _,
            lease,
            binder,
            mut restart,
            observe,
            multi: old,
        } = this.into_inner();
        unsubscribe(mbox.id(), old);
        let deferred = std::mem::take(&mut restart.deferred);
        let placement = Placement { binder };
        let (mut cell, parts, _) = AgentCell::defined(
            BlockBox::new_uninit(),
            agent,
            def,
            Some(restart),
            placement,
            None,
        );
        let parts = parts.map(|parts| *parts).unwrap_or_default();
        cell.hold_lease(lease);
        // The binding keeps the first incarnation's insend handlers and limits (checked equal).
        let shared = Arc::clone(mbox.shared());
        let multi = parts
            .multi
            .iter()
            .map(|m| (m.mbox.clone(), m.type_id))
            .collect();
        for m in parts.multi {
            m.mbox
                .add_subscriber(m.type_id, Arc::clone(&shared), m.options);
        }
        let mut body = attached(
            cell.retype(|c| c as &mut dyn DefinedAgent),
            Attach {
                panic_reaction: parts.panic_reaction.unwrap_or(PanicReaction::Supervise),
                multi,
                observe,
                start: StartTicket::Restart,
            },
        );
        shared.stats.rare().restarts.fetch_add(1, Ordering::Relaxed);
        shared.counters().restarts.fetch_add(1, Ordering::Relaxed);
        body.on_start();
        replay(&mut *body, &shared, deferred, cx);
        if let Some(link) = link {
            link.ack(epoch, Ack::Started);
        }
        body
    }

    fn defer(&mut self, held: Held) -> Taken {
        self.restart.defer(self.mbox.shared(), self.id, held);
        Taken::Deferred
    }
}

impl<A: Agent> AgentBody for Suspended<A> {
    fn on_start(&mut self) {}

    fn on_message(&mut self, source: MboxId, payload: Lent<'_>, limit: LimitSlot) -> Taken {
        self.defer(Held {
            source,
            payload: payload.take(),
            limit,
            token: None,
        })
    }

    fn on_timer_message(
        &mut self,
        source: MboxId,
        payload: Payload,
        limit: LimitSlot,
        token: Arc<TimerToken>,
    ) -> Taken {
        self.defer(Held {
            source,
            payload,
            limit,
            token: Some(token),
        })
    }

    fn discard(&mut self, source: MboxId, payload: Payload, limit: LimitSlot) {
        revoked(self.mbox.shared(), self.id, source, payload, limit);
    }

    fn on_finish(&mut self) -> Exit {
        let shared = self.mbox.shared();
        shared.stop_accepting();
        unsubscribe(shared.mbox_id, std::mem::take(&mut self.multi));
        drop_all(
            shared,
            self.id,
            std::mem::take(&mut self.restart.deferred),
            DropReason::CoopDeregistering,
        );
        Exit {
            coop: self.coop,
            agent: Arc::clone(shared) as _,
        }
    }

    fn control_fn(&self) -> ControlFn {
        |body, control, cx| {
            let this = own::<Self>(body);
            match control {
                Control::Start { epoch } => Self::start(this, epoch, cx),
                // Stopped already.
                Control::Stop { epoch } => {
                    if let Some(link) = this.link() {
                        link.ack(epoch, Ack::Stopped);
                    }
                    erase(this)
                }
                // Suspended only after its coop started.
                Control::Release => erase(this),
            }
        }
    }

    fn state_name(&self) -> &str {
        "(restarting)"
    }
}
