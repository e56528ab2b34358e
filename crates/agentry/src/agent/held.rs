//! Messages an agent took but does not handle now: kept for later, or dropped and counted.
//!
//! An agent keeps a message it takes when it cannot handle it yet: a failed supervised agent
//! keeps it for its next incarnation (`agent/restart.rs`), a started agent of a coop whose
//! siblings are still starting keeps it until the coop has started (`agent/start.rs`). What is
//! kept is handled later in the order it came ([`replay`]), or dropped and counted
//! ([`drop_message`]) — never lost silently.

use crate::ids::{AgentId, MboxId};
use crate::mbox::direct::AgentShared;
use crate::message::LimitSlot;
use crate::message::Undelivered;
use crate::message::payload::Payload;
use crate::slab::IncarnationCx;
use crate::slab::body::{AgentBody, Taken};
use crate::slab::occupants::Occupant;
use crate::timer::delivery::Delivery;
use crate::timer::token::TimerToken;
use crate::trace::{DropReason, Outcome, TraceRecord};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A message kept for later.
pub(crate) struct Held {
    pub(crate) source: MboxId,
    pub(crate) payload: Payload,
    /// Its place under the agent's limits, given back when it is taken or dropped.
    pub(crate) limit: LimitSlot,
    /// A timer's token, checked again when the message is finally taken.
    pub(crate) token: Option<Arc<TimerToken>>,
}

/// Traces a message being kept (its final fate is traced when it is taken or dropped).
pub(crate) fn trace_kept(shared: &AgentShared, id: AgentId, held: &Held) {
    shared.counters().trace(|| TraceRecord {
        agent: Some(id),
        agent_type: Some(shared.agent_type()),
        mbox: Some(held.source),
        message: held.payload.type_name(),
        message_type: held.payload.type_id(),
        outcome: Outcome::Deferred,
    });
}

/// Hands kept messages to `body`, in order, counting each in `cx`. A timer's message whose
/// timer was cancelled meanwhile is discarded (counted in `timers_revoked`).
pub(crate) fn replay(
    body: &mut dyn AgentBody,
    shared: &AgentShared,
    held: Vec<Held>,
    cx: &mut IncarnationCx<'_>,
) {
    for Held {
        source,
        payload,
        limit,
        token,
    } in held
    {
        // A cancel from another thread waits for this delivery (`timer/token.rs`).
        let Ok(delivery) = Delivery::begin_timed(token.as_ref()) else {
            shared
                .counters()
                .timers_revoked
                .fetch_add(1, Ordering::Relaxed);
            body.discard(source, payload, limit);
            continue;
        };
        let taken = match token {
            Some(token) => body.on_timer_message(source, payload, limit, token),
            None => payload.lend(|p| body.on_message(source, p, limit)),
        };
        drop(delivery);
        cx.count(taken);
    }
}

/// Drops a message the agent took but will never handle, because it is not running (gone,
/// failed, its coop leaving or failed to start): gives back its limit place and counts it in
/// `dead_letters` and the agent's `refused` and `dropped`; a request is answered `AgentGone`.
pub(crate) fn drop_message(
    shared: &AgentShared,
    id: Option<AgentId>,
    source: MboxId,
    payload: Payload,
    limit: LimitSlot,
    why: DropReason,
) -> Taken {
    if let Some(b) = shared.binding() {
        b.limits().release(limit);
    }
    shared.count_not_running();
    shared.counters().trace(|| TraceRecord {
        agent: id,
        agent_type: Some(shared.agent_type()),
        mbox: Some(source),
        message: payload.type_name(),
        message_type: payload.type_id(),
        outcome: Outcome::Dropped(why),
    });
    tracing::debug!(
        target: "agentry::delivery",
        mbox = %shared.mbox_id,
        agent_type = shared.agent_type(),
        message = payload.type_name(),
        reason = ?why,
        "message not handled: the agent is not running"
    );
    payload.reject(Undelivered::AgentGone);
    Taken::Dropped
}

/// Drops every kept message (the agent is leaving), as [`drop_message`].
pub(crate) fn drop_all(shared: &AgentShared, id: AgentId, held: Vec<Held>, why: DropReason) {
    if held.is_empty() {
        // Most agents kept none (and an empty `Vec`'s iterator is not free to drop).
        return;
    }
    for Held {
        source,
        payload,
        limit,
        ..
    } in held
    {
        drop_message(shared, Some(id), source, payload, limit, why);
    }
}

/// Disposes of a cancelled timer's message taken from the agent's queue (already counted in
/// `timers_revoked`): gives back its limit place, counts it for the agent, traces it.
pub(crate) fn revoked(
    shared: &AgentShared,
    id: AgentId,
    source: MboxId,
    payload: Payload,
    limit: LimitSlot,
) {
    if let Some(b) = shared.binding() {
        b.limits().release(limit);
    }
    shared.stats.rare().dropped.fetch_add(1, Ordering::Relaxed);
    shared.counters().trace(|| TraceRecord {
        agent: Some(id),
        agent_type: Some(shared.agent_type()),
        mbox: Some(source),
        message: payload.type_name(),
        message_type: payload.type_id(),
        outcome: Outcome::Dropped(DropReason::TimerRevoked),
    });
    drop(payload);
}
