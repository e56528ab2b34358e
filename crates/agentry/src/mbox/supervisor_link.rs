//! A supervised agent's way to its supervisor: the supervisor's mbox and the child's index,
//! and the two messages a child sends it (`ChildFailed`, `ChildAck`). The supervisor itself
//! (`supervision/supervisor.rs`) sits in the coops layer; the link sits here, with the mboxes,
//! because the send path carries it (an insend handler's panic is reported through it, from
//! `mbox/direct.rs`).

use super::Mbox;
use crate::ids::AgentId;

/// A supervised agent failed (sent by its incarnation `agent`).
pub(crate) struct ChildFailed {
    pub(crate) child: usize,
    pub(crate) agent: AgentId,
}

/// A supervised agent carried out a control demand of restart `epoch`.
pub(crate) struct ChildAck {
    pub(crate) child: usize,
    pub(crate) epoch: u64,
    pub(crate) ack: Ack,
}

/// What a [`ChildAck`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ack {
    /// The incarnation finished; the agent is suspended.
    Stopped,
    /// A new incarnation started.
    Started,
    /// No new incarnation could be made (the factory or `define` failed, or the definition
    /// changed what belongs to the mbox); the agent stays suspended.
    StartFailed,
}

/// A supervised agent's way to its supervisor (kept in its binding).
#[derive(Clone)]
pub(crate) struct SupervisorLink {
    supervisor: Mbox,
    child: usize,
}

impl SupervisorLink {
    /// The link of child `child` of the supervisor behind `supervisor`.
    pub(crate) fn new(supervisor: Mbox, child: usize) -> Self {
        SupervisorLink { supervisor, child }
    }

    /// Reports that the incarnation `agent` failed.
    pub(crate) fn report_failure(&self, agent: AgentId) {
        self.supervisor.send(ChildFailed {
            child: self.child,
            agent,
        });
    }

    /// Acknowledges a control demand of the restart `epoch`.
    pub(crate) fn ack(&self, epoch: u64, ack: Ack) {
        self.supervisor.send(ChildAck {
            child: self.child,
            epoch,
            ack,
        });
    }
}
