//! Demands: what sits in an event queue. One demand = one message for one agent (or one of
//! the agent's lifecycle events).
//!
//! The layout is flat and `repr(C)`: seven words (56 bytes), every field a whole word.
//! Demands are moved in and out of queues on every send, so they must copy as a few aligned
//! words; the generation, limit slot, kind and event priority share one word (`head`) for
//! that reason. As separate sub-word fields, a move that reads the kind (the serving loop
//! does, for the finish barrier) was compiled into copies at odd offsets, whose loads could
//! not be forwarded from the stores that had just written them (a stall per copy).

use crate::ids::{AgentId, MboxId};
use crate::message::LimitSlot;
use crate::message::Undelivered;
use crate::message::payload::Payload;
use crate::slab::occupants::Occupant;
use crate::slab::{AgentRef, AgentSlab, SlotPtr};
use crate::stats::EnvCounters;
use crate::timer::token::TimerToken;
use crate::trace::{DropReason, Outcome, TraceContext, TraceRecord};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What the agent is asked to do.
///
/// A plain byte rather than an enum on purpose: an enum's spare values would become the
/// niche of `Option<Demand>`, putting its discriminant at an odd offset and turning every
/// move of a demand into unaligned re-chunked copies. With no niche here, `Option<Demand>`
/// uses the slot pointer's null.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Kind(u8);

impl Kind {
    /// Handle the message in `payload`, which arrived through `source`.
    pub(crate) const MESSAGE: Kind = Kind(0);
    /// Run `on_start` (first demand of every agent).
    pub(crate) const START: Kind = Kind(1);
    /// Run `on_finish` and leave (last demand of every agent).
    pub(crate) const FINISH: Kind = Kind(2);
    /// Like `MESSAGE`, but `payload` is a [`Revocable`]: a timer's message, handled only if
    /// the timer was not cancelled meanwhile.
    pub(crate) const REVOCABLE: Kind = Kind(4);
    /// A `FINISH` that has passed its dispatcher's other queue(s) (see the finish barrier in
    /// `disp/engine.rs`): run it.
    pub(crate) const FINISH_NOW: Kind = Kind(3);
    /// A control demand: a supervisor's command, or the coop's start verdict (`payload` is a
    /// [`Control`](crate::agent::restart::Control), see `agent/restart.rs`).
    pub(crate) const CONTROL: Kind = Kind(5);
    /// Like `MESSAGE`, but `payload` is a [`Traced`]: the message and the trace context of the
    /// span that sent it (only with a `ContextPropagation` hook, `trace/context.rs`).
    pub(crate) const TRACED: Kind = Kind(6);
}

/// A message and the trace context it carries (kind `TRACED`).
#[derive(Debug)]
pub(crate) struct Traced {
    pub(crate) context: TraceContext,
    pub(crate) inner: Payload,
}

/// A timer's message and the timer's token, checked when the dispatcher takes the demand.
#[derive(Debug)]
pub(crate) struct Revocable {
    pub(crate) token: Arc<TimerToken>,
    pub(crate) inner: Payload,
    /// The trace context current when the timer was scheduled (`trace/context.rs`).
    pub(crate) context: Option<TraceContext>,
}

/// One queued unit of work for one agent.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Demand {
    slot: SlotPtr,
    /// The target's generation (bits 0–31), the message's limit slot (32–47), the kind
    /// (48–55) and the event priority (56–63) (module docs: one word).
    head: u64,
    /// The mbox the message came through (the agent's own for lifecycle demands).
    pub(crate) source: MboxId,
    /// `Some` exactly for `Kind::MESSAGE`.
    pub(crate) payload: Option<Payload>,
}

/// `head` of a demand (see [`Demand`]).
#[inline(always)]
const fn head(generation: u32, limit: LimitSlot, kind: Kind, priority: u8) -> u64 {
    generation as u64
        | (limit.to_bits() as u64) << 32
        | (kind.0 as u64) << 48
        | (priority as u64) << 56
}

impl Demand {
    #[inline]
    pub(crate) fn message(
        target: AgentRef,
        source: MboxId,
        payload: Payload,
        limit: LimitSlot,
        priority: u8,
    ) -> Self {
        let (slot, generation) = target.into_parts();
        Demand {
            slot,
            head: head(generation, limit, Kind::MESSAGE, priority),
            source,
            payload: Some(payload),
        }
    }

    /// A message that carries a trace context (kind `TRACED`).
    pub(crate) fn traced(
        target: AgentRef,
        source: MboxId,
        traced: Traced,
        limit: LimitSlot,
        priority: u8,
    ) -> Self {
        let mut demand = Demand::message(target, source, Payload::new(traced), limit, priority);
        demand.set_kind(Kind::TRACED);
        demand
    }

    /// A timer's message (kind `REVOCABLE`).
    pub(crate) fn revocable(
        target: AgentRef,
        source: MboxId,
        revocable: Revocable,
        limit: LimitSlot,
        priority: u8,
    ) -> Self {
        let mut demand = Demand::message(target, source, Payload::new(revocable), limit, priority);
        demand.set_kind(Kind::REVOCABLE);
        demand
    }

    /// A supervisor's control demand; `source` is the agent's own mbox.
    pub(crate) fn control(target: AgentRef, source: MboxId, control: Payload) -> Self {
        let (slot, generation) = target.into_parts();
        Demand {
            slot,
            head: head(generation, LimitSlot::NONE, Kind::CONTROL, 0),
            source,
            payload: Some(control),
        }
    }

    /// `source` is the agent's own mbox.
    pub(crate) fn start(target: AgentRef, source: MboxId) -> Self {
        Self::lifecycle(target, source, Kind::START)
    }

    /// `source` is the agent's own mbox.
    pub(crate) fn finish(target: AgentRef, source: MboxId) -> Self {
        Self::lifecycle(target, source, Kind::FINISH)
    }

    fn lifecycle(target: AgentRef, source: MboxId, kind: Kind) -> Self {
        let (slot, generation) = target.into_parts();
        Demand {
            slot,
            head: head(generation, LimitSlot::NONE, kind, 0),
            source,
            payload: None,
        }
    }

    /// The agent the demand is for.
    #[inline]
    pub(crate) fn target(&self) -> AgentRef {
        AgentRef::from_parts(self.slot, self.head as u32)
    }

    /// What the agent is asked to do.
    #[inline(always)]
    pub(crate) fn kind(&self) -> Kind {
        Kind((self.head >> 48) as u8)
    }

    /// Turns the demand into one of kind `kind` (the finish barrier: `FINISH` → `FINISH_NOW`).
    #[inline(always)]
    pub(crate) fn set_kind(&mut self, kind: Kind) {
        self.head = (self.head & !(0xff << 48)) | u64::from(kind.0) << 48;
    }

    /// The event priority of the message's subscription (0 = `P0`, the default; see
    /// `disp/event_lanes.rs`). Lifecycle and control demands keep 0.
    #[inline(always)]
    pub(crate) fn priority(&self) -> u8 {
        (self.head >> 56) as u8
    }

    /// The message's place in its agent's message limits.
    #[inline(always)]
    pub(crate) fn limit(&self) -> LimitSlot {
        LimitSlot::from_bits((self.head >> 32) as u16)
    }

    /// The message of a message demand that was just built from a `P` and refused.
    pub(crate) fn into_message<P: 'static>(self) -> P {
        let kind = self.kind();
        let payload = self
            .payload
            .expect("invariant: only message demands are refused");
        let payload = unwrap_message(kind, payload);
        match payload.take::<P>() {
            Ok(message) => message,
            Err(_) => unreachable!("invariant: the refused demand was built from a P"),
        }
    }

    /// Disposes of a demand left in a queue dropped at shutdown, counting its message (if
    /// any) as dropped on shutdown. The slot may belong to a slab that is gone (a queue dropped
    /// after its environment): the demand's agent is not looked at.
    pub(crate) fn discard(self, counters: &EnvCounters) {
        self.dispose(Undelivered::Shutdown, counters, None, None);
    }

    /// Disposes of a demand its dispatcher took for an agent that is gone (the slab is alive):
    /// a dead letter, counted as the agent's too while its mbox is held somewhere (the slot's
    /// tombstone, `slab.rs`).
    pub(crate) fn discard_gone(self, slab: &AgentSlab, counters: &EnvCounters) {
        let target = self.target();
        let agent = slab.finished_agent(target);
        self.dispose(Undelivered::AgentGone, counters, Some(target.id()), agent);
    }

    /// Disposes of a demand drained from a dispatcher that closed (its threads are gone):
    /// for an agent still bound to it, dropped on shutdown; for a finished one, a dead letter
    /// (in both cases counted as the agent's too while its mbox is held).
    pub(crate) fn discard_closed(self, slab: &AgentSlab, counters: &EnvCounters) {
        let target = self.target();
        let (why, agent) = match slab.live_agent(target) {
            Some(live) => (Undelivered::Shutdown, Some(live)),
            None => (Undelivered::AgentGone, slab.finished_agent(target)),
        };
        self.dispose(why, counters, Some(target.id()), agent);
    }

    fn dispose(
        self,
        why: Undelivered,
        counters: &EnvCounters,
        agent: Option<AgentId>,
        shared: Option<Arc<dyn Occupant>>,
    ) {
        // A control demand whose agent is gone is no message: nothing to count.
        if self.kind() == Kind::CONTROL {
            return;
        }
        let kind = self.kind();
        let Some(payload) = self.payload else {
            return;
        };
        // A timer's or a traced message is reported as itself, not as its wrapper.
        let payload = unwrap_message(kind, payload);
        match (why, &shared) {
            (Undelivered::Shutdown, Some(shared)) => shared.count_dropped_on_shutdown(),
            (Undelivered::Shutdown, None) => {
                counters.dropped_on_shutdown.fetch_add(1, Ordering::Relaxed);
            }
            (_, Some(shared)) => shared.count_not_running(),
            (_, None) => {
                counters.dead_letters.fetch_add(1, Ordering::Relaxed);
            }
        }
        counters.trace(|| TraceRecord {
            agent,
            agent_type: shared.as_ref().map(|s| s.agent_type()),
            mbox: Some(self.source),
            message: payload.type_name(),
            message_type: payload.type_id(),
            outcome: Outcome::Dropped(match why {
                Undelivered::Shutdown => DropReason::Shutdown,
                _ => DropReason::AgentGone,
            }),
        });
        tracing::debug!(
            target: "agentry::delivery",
            message = payload.type_name(),
            reason = ?why,
            "queued message discarded"
        );
        payload.reject(why);
    }
}

/// The message inside a message demand's payload: a revocable or traced demand's wrapper
/// taken off.
fn unwrap_message(kind: Kind, payload: Payload) -> Payload {
    let unwrapped = match kind {
        Kind::REVOCABLE => payload.take::<Revocable>().map(|r| r.inner),
        Kind::TRACED => payload.take::<Traced>().map(|t| t.inner),
        _ => return payload,
    };
    match unwrapped {
        Ok(inner) => inner,
        Err(_) => unreachable!("invariant: revocable and traced demands carry their wrapper"),
    }
}

#[cfg(test)]
mod tests {
    use super::{Demand, Kind};
    use crate::ids::MboxId;
    use crate::message::LimitSlot;
    use crate::message::payload::Payload;
    use crate::slab::AgentRef;

    #[test]
    fn a_demand_is_seven_words() {
        assert_eq!(std::mem::size_of::<Demand>(), 56);
        assert_eq!(std::mem::size_of::<Option<Demand>>(), 56);
    }

    #[test]
    fn the_packed_word_keeps_every_field_apart() {
        let target = AgentRef::dangling();
        let source = MboxId::next();
        let mut demand = Demand::message(
            target,
            source,
            Payload::new(7_u32),
            LimitSlot::new(0x1234),
            7,
        );
        assert_eq!(demand.kind(), Kind::MESSAGE);
        assert_eq!(demand.priority(), 7);
        assert_eq!(demand.limit(), LimitSlot::new(0x1234));
        assert_eq!(demand.target().into_parts(), target.into_parts());
        demand.set_kind(Kind::TRACED);
        assert_eq!(demand.kind(), Kind::TRACED);
        assert_eq!(demand.priority(), 7);
        assert_eq!(demand.limit(), LimitSlot::new(0x1234));
        assert_eq!(demand.source, source);
        let finish = Demand::finish(target, source);
        assert_eq!((finish.kind(), finish.priority()), (Kind::FINISH, 0));
        assert_eq!(finish.limit(), LimitSlot::NONE);
    }
}
