//! What every dispatcher thread does with a demand it took from its queue.

use crate::demand::{Demand, Kind, Revocable};
use crate::message::Undelivered;
use crate::slab::AgentSlab;
use crate::stats::EnvCounters;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

/// Runs one demand.
///
/// # Safety
///
/// Must be called only by a thread that runs the dispatcher whose queue `demand` was taken
/// from (demands are pushed only to the queue of the dispatcher their agent is bound to), with
/// the slab of the agent's environment, and never re-entrantly for the same agent.
#[inline]
pub(crate) unsafe fn execute(demand: Demand, slab: &AgentSlab, counters: &EnvCounters) {
    let target = demand.target();
    // SAFETY: forwarded contract (this thread runs the agent's dispatcher).
    let Some(body) = (unsafe { slab.body_mut(target) }) else {
        demand.discard(Undelivered::AgentGone, counters);
        return;
    };
    match demand.kind {
        Kind::MESSAGE => {
            let payload = demand
                .payload
                .expect("invariant: message demands carry a payload");
            let handled = body.on_message(demand.source, payload, demand.limit);
            // SAFETY: forwarded contract; the agent is still in its slot (handlers cannot
            // finish their own agent synchronously).
            unsafe { slab.count(target, handled) };
        }
        Kind::REVOCABLE => {
            let payload = demand
                .payload
                .expect("invariant: message demands carry a payload");
            let Ok(Revocable { token, inner }) = payload.take::<Revocable>() else {
                unreachable!("invariant: revocable demands carry a Revocable")
            };
            if token.may_deliver() {
                let handled = body.on_message(demand.source, inner, demand.limit);
                // SAFETY: as for `MESSAGE`.
                unsafe { slab.count(target, handled) };
            } else {
                counters.timers_revoked.fetch_add(1, Ordering::Relaxed);
                body.discard(inner, demand.limit);
            }
        }
        Kind::START => body.on_start(),
        _ => {
            debug_assert!(demand.kind == Kind::FINISH || demand.kind == Kind::FINISH_NOW);
            let exit = body.on_finish();
            // SAFETY: forwarded contract; the agent has finished and `body` is no longer used.
            let body = unsafe { slab.remove(target) };
            if catch_unwind(AssertUnwindSafe(|| drop(body))).is_err() {
                counters.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(agent = %target.id(), "agent panicked while being dropped");
            }
            exit.env.inner().agent_finished(exit.coop);
        }
    }
}
