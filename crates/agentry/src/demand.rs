//! Demands: what sits in an event queue. One demand = one message for one agent (or one of
//! the agent's lifecycle events).

use crate::ids::MboxId;
use crate::message::Undelivered;
use crate::message::payload::Payload;
use crate::slab::AgentRef;
use crate::stats::EnvCounters;
use std::sync::atomic::Ordering;

/// Index of the message limit a queued message holds a place in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct LimitSlot(u16);

impl LimitSlot {
    /// The message is not limited.
    pub(crate) const NONE: LimitSlot = LimitSlot(u16::MAX);

    pub(crate) fn new(index: u16) -> Self {
        debug_assert!(index != u16::MAX);
        LimitSlot(index)
    }

    pub(crate) fn index(self) -> Option<usize> {
        (self != Self::NONE).then_some(usize::from(self.0))
    }
}

/// What the agent is asked to do.
#[derive(Debug)]
pub(crate) enum DemandKind {
    /// Handle a message that arrived through `source`.
    Message {
        source: MboxId,
        payload: Payload,
        limit: LimitSlot,
    },
    /// Run `on_start` (first demand of every agent).
    Start,
    /// Run `on_finish` and leave (last demand of every agent).
    Finish,
}

/// One queued unit of work for one agent.
#[derive(Debug)]
pub(crate) struct Demand {
    pub(crate) target: AgentRef,
    pub(crate) kind: DemandKind,
}

impl Demand {
    pub(crate) fn start(target: AgentRef) -> Self {
        Demand {
            target,
            kind: DemandKind::Start,
        }
    }

    pub(crate) fn finish(target: AgentRef) -> Self {
        Demand {
            target,
            kind: DemandKind::Finish,
        }
    }

    /// The message of a message demand that was just built from a `P` and refused.
    pub(crate) fn into_message<P: 'static>(self) -> P {
        match self.kind {
            DemandKind::Message { payload, .. } => match payload.take::<P>() {
                Ok(message) => message,
                Err(_) => unreachable!("invariant: the payload was built from a P"),
            },
            _ => unreachable!("invariant: only message demands are refused"),
        }
    }

    /// Disposes of a demand that will never run, counting a message as `counted_as`.
    pub(crate) fn discard(self, why: Undelivered, counters: &EnvCounters) {
        if let DemandKind::Message { payload, .. } = self.kind {
            match why {
                Undelivered::Shutdown => {
                    counters.dropped_on_shutdown.fetch_add(1, Ordering::Relaxed)
                }
                _ => counters.dead_letters.fetch_add(1, Ordering::Relaxed),
            };
            tracing::debug!(
                target: "agentry::delivery",
                message = payload.type_name(),
                reason = ?why,
                "queued message discarded"
            );
            payload.reject(why);
        }
    }
}
