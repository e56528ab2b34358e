//! An agent's layout: its state tree and the shape of its handler table, built once per
//! agent type and shared by every agent of the type whose definition produced it.
//!
//! # Why
//!
//! Every agent runs its own `define` (a definition may depend on the agent's fields), but
//! nearly all agents of one type come out the same: same states, same subscriptions, same
//! handler in each state. Kept per agent, that shape is most of an idle agent's memory
//! (about 600 of 1,400 heap bytes for an agent with one handler). The environment keeps one
//! layout per agent type; an agent whose definition declares the same shares it.
//!
//! Nor is the shape built only to be found equal: a definition's handler table is compared
//! with its type's cached layout *as the definition goes* (`HandlerTable::expecting`), and
//! stores nothing while each declaration matches; a default-only state tree is not stored
//! either (`StateTree`). An agent whose definition declares its type's layout makes no
//! allocation for it: its handlers (none for closures that capture nothing) are all it keeps.
//!
//! # Ground rules
//!
//! - A layout is plain data (names, parents, time limits, type ids, handler and hook
//!   *indices*); the closures stay with each agent (`Handlers`, `Hooks`), so an agent's
//!   handlers and hooks are always the ones its own definition gave, whatever it captured.
//! - Two layouts are shared only if equal in every field (a definition matches the cached
//!   layout only if it declared the same pairs, in the same states, with the same handler
//!   indices, in the same order, in an equal state tree), so an agent indexes its own
//!   handlers and hooks exactly as its definition declared them. The agent's own mbox is
//!   `Source::Own` in a layout; another mbox (a multi mbox) is named by its id, so agents
//!   subscribed to different multi mboxes have different layouts.
//! - The cache holds the first layout seen per agent type. A definition that differs from it
//!   keeps its own layout (nothing is evicted): correct whatever the definitions do, and as
//!   small as today's for types whose agents differ.

use super::handlers::HandlerLayout;
use super::state::{State, StateTree};
use crate::ids::IdHash;
use crate::mbox::direct::AgentHost;
use parking_lot::Mutex;
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

/// The state tree and handler-table shape of one agent (see the module docs).
pub(crate) struct AgentLayout {
    pub(crate) states: StateTree,
    pub(crate) handlers: HandlerLayout,
}

impl crate::mbox::published_state::StateNames for AgentLayout {
    fn state_name(&self, index: u16) -> &str {
        self.states.name(State(index))
    }
}

impl AgentLayout {
    pub(crate) fn new(states: StateTree, handlers: HandlerLayout) -> Self {
        AgentLayout { states, handlers }
    }

    /// Equal in everything an agent's behaviour depends on.
    fn same_as(&self, other: &AgentLayout) -> bool {
        self.states == other.states && self.handlers == other.handlers
    }
}

/// One environment's layouts, by agent type.
#[derive(Default)]
pub(crate) struct LayoutCache {
    by_type: Mutex<HashMap<TypeId, Arc<AgentLayout>, IdHash>>,
}

impl LayoutCache {
    /// The cached layout of the agent type `agent`, if it has one: what its next definition
    /// is compared with as it goes (`HandlerTable::expecting`).
    pub(crate) fn cached(&self, agent: TypeId) -> Option<Arc<AgentLayout>> {
        self.by_type.lock().get(&agent).cloned()
    }

    /// The layout cache of the env `host`.
    pub(crate) fn of(host: &dyn AgentHost) -> &LayoutCache {
        host.layouts()
            .downcast_ref()
            .expect("invariant: an env's layouts are a LayoutCache")
    }

    /// The layout an agent of type `agent` is to use: the cached one if equal to `layout`,
    /// else `layout` itself (cached if the type has none yet).
    pub(crate) fn share(&self, agent: TypeId, layout: AgentLayout) -> Arc<AgentLayout> {
        let mut by_type = self.by_type.lock();
        match by_type.get(&agent) {
            Some(cached) if cached.same_as(&layout) => Arc::clone(cached),
            Some(_) => Arc::new(layout),
            None => {
                let layout = Arc::new(layout);
                by_type.insert(agent, Arc::clone(&layout));
                layout
            }
        }
    }
}

#[cfg(test)]
mod tests;
