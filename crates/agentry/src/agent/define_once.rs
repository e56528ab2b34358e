//! Definitions recorded once per agent type: what a type that gives its definition
//! (`Agent::DEFINITION`) hands to its later agents instead of running it again.
//!
//! # Why
//!
//! An agent's own `define` may depend on the agent, so every agent runs its own: a handler
//! table is built, matched against its type's cached layout (`agent/layout.rs`) and dropped,
//! two fifths of what registering a two-handler agent costs (callgrind: 3,132 → 1,900
//! instructions an agent). A type's `DEFINITION` takes no agent, so it cannot depend on one:
//! once it has produced a layout and handlers that every agent of the type can share, a later
//! agent gets those directly.
//!
//! # Ground rules
//!
//! - A definition is *recorded* (once per class, `mbox/class.rs`, the first record stands)
//!   when it was given by its type, is not a supervised agent's (whose incarnations define
//!   themselves), declared no state hooks and nothing that senders use (insend handlers,
//!   limits, event priorities, tracked depth, multi-mbox subscriptions, a panic reaction), and
//!   its handlers are its type's shared set (closures that capture nothing,
//!   `handlers/shared.rs`) or none. Anything else is not recorded: every agent of the type
//!   runs the definition, as agents with their own `define` do.
//! - A record holds the agent's layout, the shared set, its initial state and what its
//!   registration reads ([`Declared`]). A later agent's cell gets exactly these, with its own
//!   value and mbox: what running the same definition would have given it.
//! - The type's class decides to share a single handler too when the type gives its
//!   definition (`HandlerTable::into_handlers`), so that a one-handler type is recorded.
//! - A record made unchecked does not serve a registration that checks the agent's protocol
//!   (its definition was never checked against it): that registration runs the definition.

use super::Agent;
use super::cell::Declared;
use super::define::DefinitionCheck;
use super::handlers::TypeHandlers;
use super::layout::AgentLayout;
use super::state::State;
use crate::mbox::class::AgentClass;
use std::sync::Arc;

/// A recorded definition of the agent type `A` (module docs).
pub(crate) struct DefinedOnce<A: 'static> {
    pub(crate) layout: Arc<AgentLayout>,
    pub(crate) handlers: TypeHandlers<A>,
    pub(crate) initial: State,
    pub(crate) declared: Declared,
    /// It passed a protocol check.
    pub(crate) checked: bool,
}

/// `class`'s recorded definition (`class` is the class of `A`), if it has one that serves a
/// registration checked by `check`.
pub(crate) fn recorded<A: Agent>(
    class: &AgentClass,
    check: DefinitionCheck<A>,
) -> Option<&DefinedOnce<A>> {
    let once = class
        .defined_once
        .get()?
        .downcast_ref::<DefinedOnce<A>>()
        .unwrap_or_else(|| unreachable!("invariant: a class records its own type's definition"));
    (once.checked || !check.checks()).then_some(once)
}

/// Records the definition `once` makes as `class`'s, unless one is recorded already (that one
/// stands, and nothing is made).
pub(crate) fn record<A: Agent>(class: &AgentClass, once: impl FnOnce() -> DefinedOnce<A>) {
    if class.defined_once.get().is_none() {
        let _ = class.defined_once.set(Box::new(once()));
    }
}
