//! Insend handlers: run on the *sender's* thread before `send` returns (the seed's
//! "insend events").
//!
//! # What an insend handler may touch
//!
//! The agent may be running a queued handler on its own worker at the very moment an insend
//! handler runs elsewhere, so an insend handler never gets `&mut Agent`. It is a
//! `Fn(&InsendCtx, M) + Send + Sync` closure: it can read and update only what it captured,
//! which the compiler requires to be `Sync` (atomics, locks, channels, mboxes). It can forward
//! work to the agent's queued handlers through [`InsendCtx::mbox`]. Insend handlers are
//! state-independent (the agent's state may be changing concurrently), they bypass message
//! limits, and a panic inside one is caught on the sender's thread and handled by the
//! agent's panic reaction.

use super::Mbox;
use super::direct::AgentShared;
use crate::ids::AgentId;
use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

/// What an insend handler can see of its agent.
pub struct InsendCtx<'a> {
    shared: &'a Arc<AgentShared>,
    id: AgentId,
}

impl<'a> InsendCtx<'a> {
    pub(crate) fn new(shared: &'a Arc<AgentShared>, id: AgentId) -> Self {
        InsendCtx { shared, id }
    }

    /// The agent's id.
    pub fn agent_id(&self) -> AgentId {
        self.id
    }

    /// The agent's own direct mbox (to hand work to its queued handlers).
    pub fn mbox(&self) -> Mbox {
        Mbox::from_shared(Arc::clone(self.shared))
    }
}

impl fmt::Debug for InsendCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InsendCtx")
            .field("agent", &self.id)
            .finish()
    }
}

/// A typed insend handler.
pub(crate) type InsendFn<M> = Box<dyn Fn(&InsendCtx<'_>, M) + Send + Sync>;

/// The insend handlers of one agent's direct mbox, by message type.
#[derive(Default)]
pub(crate) struct InsendTable {
    entries: Vec<(TypeId, Box<dyn Any + Send + Sync>)>,
}

impl InsendTable {
    pub(crate) fn insert<M: Send + 'static>(&mut self, f: InsendFn<M>) -> bool {
        if self.contains::<M>() {
            return false;
        }
        self.entries.push((TypeId::of::<M>(), Box::new(f)));
        true
    }

    /// The message types with an insend handler, sorted.
    pub(crate) fn type_ids(&self) -> Vec<TypeId> {
        let mut ids: Vec<TypeId> = self.entries.iter().map(|(t, _)| *t).collect();
        ids.sort();
        ids
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn contains<M: 'static>(&self) -> bool {
        self.contains_id(TypeId::of::<M>())
    }

    pub(crate) fn contains_id(&self, type_id: TypeId) -> bool {
        self.entries.iter().any(|(t, _)| *t == type_id)
    }

    #[inline]
    pub(crate) fn find<M: Send + 'static>(&self) -> Option<&InsendFn<M>> {
        if self.entries.is_empty() {
            return None;
        }
        self.entries
            .iter()
            .find(|(t, _)| *t == TypeId::of::<M>())
            .and_then(|(_, f)| f.downcast_ref::<InsendFn<M>>())
    }
}
