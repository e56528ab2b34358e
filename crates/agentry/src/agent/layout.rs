//! An agent's layout: its state tree and the shape of its handler table, built once per
//! agent type and shared by every agent of the type whose definition produced it.
//!
//! # Why
//!
//! Every agent runs its own `define` (a definition may depend on the agent's fields), but
//! nearly all agents of one type come out the same: same states, same subscriptions, same
//! handler in each state. Kept per agent, that shape is most of an idle agent's memory
//! (about 600 of 1,400 heap bytes for an agent with one handler). Each agent type's class
//! (`mbox/class.rs`, one per type and environment) keeps one layout; an agent whose
//! definition declares the same shares it.
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
//!   *indices*); the closures stay with each agent (its `Handlers`, its hooks), so an agent's
//!   handlers and hooks are always the ones its own definition gave, whatever it captured.
//! - Two layouts are shared only if equal in every field (a definition matches the cached
//!   layout only if it declared the same pairs, in the same states, with the same handler
//!   indices, in the same order, in an equal state tree), so an agent indexes its own
//!   handlers and hooks exactly as its definition declared them. The agent's own mbox is
//!   `Source::Own` in a layout; another mbox (a multi mbox) is named by its id, so agents
//!   subscribed to different multi mboxes have different layouts.
//! - The class holds the first layout seen of its type. A definition that differs from it
//!   keeps its own layout (nothing is evicted): correct whatever the definitions do, and as
//!   small as today's for types whose agents differ.

use super::handlers::HandlerLayout;
use super::state::{State, StateTree};
use crate::mbox::class::AgentClass;
use std::any::Any;
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

/// The cached layout of `class`'s agent type, if it has one: what its next definition is
/// compared with as it goes (`HandlerTable::expecting`). Kept in the class (`mbox/class.rs`:
/// type-erased there, since the mboxes do not name agent layouts), so reading it takes no
/// lock and no lookup.
pub(crate) fn cached(class: &AgentClass) -> Option<Arc<AgentLayout>> {
    class.layout.get().map(|layout| {
        Arc::clone(layout)
            .downcast::<AgentLayout>()
            .unwrap_or_else(|_| unreachable!("invariant: a class caches an AgentLayout"))
    })
}

/// The layout an agent of `class`'s type is to use: the cached one if equal to `layout`, else
/// `layout` itself (cached if the type has none yet).
pub(crate) fn share(class: &AgentClass, layout: AgentLayout) -> Arc<AgentLayout> {
    if let Some(cached) = cached(class) {
        return if cached.same_as(&layout) {
            cached
        } else {
            Arc::new(layout)
        };
    }
    let layout = Arc::new(layout);
    let kept = class
        .layout
        .get_or_init(|| Arc::clone(&layout) as Arc<dyn Any + Send + Sync>);
    // Another definition of the type may have been cached meanwhile: then it is compared.
    match Arc::clone(kept).downcast::<AgentLayout>() {
        Ok(kept) if kept.same_as(&layout) => kept,
        _ => layout,
    }
}

#[cfg(test)]
mod tests;
