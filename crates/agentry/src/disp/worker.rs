//! What every dispatcher thread does with a demand it took from its queue.

use crate::demand::{Demand, DemandKind};
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
pub(crate) unsafe fn execute(demand: Demand, slab: &AgentSlab, counters: &EnvCounters) {
    let target = demand.target;
    // SAFETY: forwarded contract (this thread runs the agent's dispatcher).
    let Some(body) = (unsafe { slab.body_mut(target) }) else {
        demand.discard(Undelivered::AgentGone, counters);
        return;
    };
    match demand.kind {
        DemandKind::Message {
            source,
            payload,
            limit,
        } => body.on_message(source, payload, limit),
        DemandKind::Start => body.on_start(),
        DemandKind::Finish => {
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
