//! Event priorities: the priority an agent declares for a subscription, by (source mbox,
//! message type) — SObjectizer 4's event priorities in modern form.
//!
//! # Ground rules
//!
//! - The priority is read on the sender's thread, when the message becomes a demand (the
//!   handler is only chosen later, by the agent's state), so it belongs to the (mbox, type)
//!   pair, in every state. The table is fixed at registration and read without locks.
//! - A demand carries its priority to its queue, where `disp/event_lanes.rs` serves the
//!   highest priority first. An agent without declared priorities pays one length check per
//!   send.
//! - Insend handlers run on the sender's thread and are never queued: a priority declared for
//!   their type has no effect.

use crate::ids::MboxId;
use crate::priority::Priority;
use std::any::TypeId;

/// The declared event priorities of one agent.
#[derive(Default)]
pub(crate) struct EventPriorities {
    entries: Vec<(MboxId, TypeId, Priority)>,
}

/// A second, different priority for the same (mbox, type).
#[derive(Debug)]
pub(crate) struct Conflict;

impl EventPriorities {
    /// Declares `priority` for messages of `type_id` from `source`; declaring the same
    /// priority again is allowed, a different one is a [`Conflict`].
    pub(crate) fn declare(
        &mut self,
        source: MboxId,
        type_id: TypeId,
        priority: Priority,
    ) -> Result<(), Conflict> {
        match self
            .entries
            .iter()
            .find(|(s, t, _)| *s == source && *t == type_id)
        {
            Some((_, _, declared)) if *declared == priority => Ok(()),
            Some(_) => Err(Conflict),
            None => {
                self.entries.push((source, type_id, priority));
                Ok(())
            }
        }
    }

    /// The priority of a message of type `P` from `source`, as the byte a demand carries.
    pub(crate) fn of<P: 'static>(&self, source: MboxId) -> u8 {
        let type_id = TypeId::of::<P>();
        self.entries
            .iter()
            .find(|(s, t, _)| *s == source && *t == type_id)
            .map_or(0, |(_, _, p)| *p as u8)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The declarations in a canonical order (a restarted agent must declare the same).
    pub(crate) fn sorted(&self) -> Vec<(MboxId, TypeId, Priority)> {
        let mut entries = self.entries.clone();
        entries.sort();
        entries
    }
}
