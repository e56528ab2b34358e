//! What every dispatcher thread does with a demand it took from its queue.
//!
//! # The observer hook
//!
//! [`execute_observed`] reports each demand to an [`Observer`]: which agent, which message
//! (before it is consumed), what became of it and the agent's state after it. The testing kit
//! (`testing.rs`) is the only observer: its driven dispatcher runs demands through
//! `execute_observed`. Every dispatcher thread runs [`execute`], which is `execute_observed`
//! with the unit observer `()`: its methods are empty and inlined, so the reports compile to
//! nothing — the hook costs nothing where it is not used.

use crate::demand::{Demand, Kind, Revocable, Traced};
use crate::message::payload::{Lent, Payload};
use crate::slab::body::{self, AgentBody, Control, Taken};
use crate::slab::{AgentRef, AgentSlab, IncarnationCx};
use crate::stats::EnvCounters;
use crate::timer::delivery::Delivery;
use crate::trace::{HandlerInfo, TraceContext};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

/// What became of a demand, as reported to an [`Observer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DemandOutcome {
    /// The agent started (`on_start` and its initial state's hooks ran).
    Started,
    /// A handler ran for the message.
    Handled,
    /// The agent had no handler for the message in its current state.
    NoHandler,
    /// The agent kept the message for later (a failed supervised agent, or a coop still
    /// starting).
    Deferred,
    /// The agent is not running (stopped after a failure, or its coop failed to start): the
    /// message was dropped and counted.
    Dropped,
    /// The agent carried out its supervisor's control demand (stopped or started an
    /// incarnation).
    Controlled,
    /// A cancelled timer's message, discarded.
    Revoked,
    /// The agent was gone; the demand was discarded.
    AgentGone,
    /// The agent finished (`on_finish` ran; it is gone).
    Finished,
}

/// Sees every demand a dispatcher thread runs (see the module docs).
pub(crate) trait Observer {
    /// Before the demand runs: its agent and, for a message, the message.
    fn before(&mut self, agent: AgentRef, message: Option<&Payload>);
    /// After it ran: the outcome and, if the agent is still there, its body (for its state).
    fn after(&mut self, outcome: DemandOutcome, body: Option<&dyn AgentBody>);
}

/// The observer of every production dispatcher: reports nothing.
impl Observer for () {
    #[inline(always)]
    fn before(&mut self, _: AgentRef, _: Option<&Payload>) {}
    #[inline(always)]
    fn after(&mut self, _: DemandOutcome, _: Option<&dyn AgentBody>) {}
}

/// Runs one demand.
///
/// # Safety
///
/// Must be called only by a thread that runs the dispatcher whose queue `demand` was taken
/// from (demands are pushed only to the queue of the dispatcher their agent is bound to), with
/// the slab of the agent's environment, and never re-entrantly for the same agent.
#[inline]
pub(crate) unsafe fn execute(demand: Demand, slab: &AgentSlab, counters: &EnvCounters) {
    // SAFETY: forwarded contract.
    unsafe { execute_observed(demand, slab, counters, &mut ()) }
}

/// Runs one demand and reports it to `observer`.
///
/// # Safety
///
/// As [`execute`].
#[inline]
pub(crate) unsafe fn execute_observed<O: Observer>(
    mut demand: Demand,
    slab: &AgentSlab,
    counters: &EnvCounters,
    observer: &mut O,
) {
    let target = demand.target();
    // SAFETY: forwarded contract (this thread runs the agent's dispatcher).
    let Some(body) = (unsafe { slab.body_mut(target) }) else {
        observer.before(target, None);
        demand.discard_gone(slab, counters);
        observer.after(DemandOutcome::AgentGone, None);
        return;
    };
    let limit = demand.limit();
    match demand.kind() {
        Kind::MESSAGE => {
            observer.before(target, demand.payload.as_ref());
            // Lent, not moved: the payload stays in the demand (`message/payload.rs`).
            let Some(payload) = Lent::of(&mut demand.payload) else {
                unreachable!("invariant: message demands carry a payload")
            };
            let taken = body.on_message(demand.source, payload, limit);
            // SAFETY: forwarded contract; the agent is still in its slot (handlers cannot
            // finish their own agent synchronously).
            unsafe { slab.count(target, taken) };
            observer.after(taken_outcome(taken), Some(&*body));
        }
        Kind::TRACED => {
            // SAFETY: forwarded contract.
            unsafe { execute_traced(demand, body, target, slab, counters, observer) }
        }
        Kind::REVOCABLE => {
            let payload = demand
                .payload
                .expect("invariant: message demands carry a payload");
            let Ok(Revocable {
                token,
                inner,
                context,
            }) = payload.take::<Revocable>()
            else {
                unreachable!("invariant: revocable demands carry a Revocable")
            };
            observer.before(target, Some(&inner));
            if let Some(delivery) = Delivery::begin(&token) {
                let span = match &context {
                    Some(context) => handler_span(counters, context, target, &inner, true),
                    None => tracing::Span::none(),
                };
                let taken =
                    span.in_scope(|| body.on_timer_message(demand.source, inner, limit, token));
                delivery.end(); // a `cancel` waiting for this handler returns
                // SAFETY: as for `MESSAGE`.
                unsafe { slab.count(target, taken) };
                observer.after(taken_outcome(taken), Some(&*body));
            } else {
                counters.timers_revoked.fetch_add(1, Ordering::Relaxed);
                body.discard(demand.source, inner, limit);
                observer.after(DemandOutcome::Revoked, Some(&*body));
            }
        }
        Kind::START => {
            observer.before(target, None);
            body.on_start();
            observer.after(DemandOutcome::Started, Some(&*body));
        }
        Kind::CONTROL => {
            observer.before(target, None);
            let Ok(control) = demand
                .payload
                .expect("invariant: control demands carry a payload")
                .take::<Control>()
            else {
                unreachable!("invariant: control demands carry a Control")
            };
            // SAFETY: forwarded contract; `body` is not used past this point.
            let taken = unsafe { slab.take_body(target) }.expect("invariant: found just above");
            // SAFETY: forwarded contract (this thread runs the agent's demand).
            let mut cx = unsafe { IncarnationCx::new(slab, target) };
            let next = body::control(taken, control, &mut cx);
            cx.publish();
            // SAFETY: forwarded contract; the slot was emptied by `take_body` above.
            unsafe { slab.put_body(target, next) };
            // SAFETY: forwarded contract; the body was just put back.
            let body = unsafe { slab.body_mut(target) };
            observer.after(DemandOutcome::Controlled, body.map(|b| &*b));
        }
        _ => {
            debug_assert!(demand.kind() == Kind::FINISH || demand.kind() == Kind::FINISH_NOW);
            observer.before(target, None);
            let exit = body.on_finish();
            // SAFETY: forwarded contract; the agent has finished and `body` is no longer used.
            let body = unsafe { slab.remove(target) };
            if catch_unwind(AssertUnwindSafe(|| drop(body))).is_err() {
                counters.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(agent = %target.id(), "agent panicked while being dropped");
            }
            exit.agent.left(exit.coop);
            observer.after(DemandOutcome::Finished, None);
        }
    }
}

/// A `TRACED` demand: its message's handler inside the hook's span. Out of line, so that
/// `execute` stays what it was for every other demand.
///
/// # Safety
///
/// As [`execute`]; `body` is the agent's body in `target`'s slot.
#[cold]
#[inline(never)]
unsafe fn execute_traced<O: Observer>(
    demand: Demand,
    body: &mut dyn AgentBody,
    target: AgentRef,
    slab: &AgentSlab,
    counters: &EnvCounters,
    observer: &mut O,
) {
    let limit = demand.limit();
    let payload = demand
        .payload
        .expect("invariant: message demands carry a payload");
    let Ok(Traced { context, inner }) = payload.take::<Traced>() else {
        unreachable!("invariant: traced demands carry a Traced")
    };
    observer.before(target, Some(&inner));
    let span = handler_span(counters, &context, target, &inner, false);
    let taken = span.in_scope(|| inner.lend(|p| body.on_message(demand.source, p, limit)));
    // SAFETY: forwarded contract; the agent is still in its slot (handlers cannot finish
    // their own agent synchronously).
    unsafe { slab.count(target, taken) };
    observer.after(taken_outcome(taken), Some(&*body));
}

/// The span the environment's trace-context hook makes for the handler of a message that
/// carried `context` (`trace/context.rs`). Only an environment with a hook queues such
/// demands (the receiver's rules decide, `mbox/direct.rs`), and its hook is fixed when it is
/// built; `Span::none()` keeps the type total.
#[cold]
#[inline(never)]
fn handler_span(
    counters: &EnvCounters,
    context: &TraceContext,
    target: AgentRef,
    message: &Payload,
    timer: bool,
) -> tracing::Span {
    match &counters.propagation {
        Some(hook) => hook.0.handler_span(
            context,
            &HandlerInfo {
                agent: target.id(),
                message: message.type_name(),
                timer,
            },
        ),
        None => tracing::Span::none(),
    }
}

#[inline(always)]
fn taken_outcome(taken: Taken) -> DemandOutcome {
    match taken {
        Taken::Handled => DemandOutcome::Handled,
        Taken::Unhandled => DemandOutcome::NoHandler,
        Taken::Deferred => DemandOutcome::Deferred,
        Taken::Dropped => DemandOutcome::Dropped,
    }
}
