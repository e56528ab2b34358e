//! The state an agent is in, published by its worker for readers on other threads
//! ([`EnvHandle::snapshot`](crate::EnvHandle::snapshot)).
//!
//! # Ground rules
//!
//! - Only the agent's worker writes it: when the agent has entered its initial states
//!   ([`started`](PublishedState::started), once per incarnation, with the incarnation's
//!   layout), after a handler's state change has been applied and after a state time limit
//!   switched the state ([`set`](PublishedState::set)). Nothing is written per message: an
//!   agent that never changes state writes it once per incarnation.
//! - The layout and the state index are written together under one lock, so a reader never
//!   pairs an index with another incarnation's layout.
//! - It is a report, not a synchronisation point: a reader sees the state as of the last
//!   publication, which may be one transition behind the worker.

use crate::agent::State;
use crate::agent::layout::AgentLayout;
use parking_lot::Mutex;
use std::sync::Arc;

/// An agent's current state as its worker last published it (module docs).
#[derive(Default)]
pub(crate) struct PublishedState(Mutex<Option<(Arc<AgentLayout>, State)>>);

impl PublishedState {
    /// The incarnation whose layout is `layout` has entered its initial state `state`.
    pub(crate) fn started(&self, layout: &Arc<AgentLayout>, state: State) {
        *self.0.lock() = Some((Arc::clone(layout), state));
    }

    /// The agent is now in `state` (of the layout published by `started`).
    pub(crate) fn set(&self, state: State) {
        if let Some((_, s)) = &mut *self.0.lock() {
            *s = state;
        }
    }

    /// Calls `f` with the name of the published state (`None` before the agent started).
    pub(crate) fn with_name<R>(&self, f: impl FnOnce(Option<&str>) -> R) -> R {
        let published = self.0.lock();
        f(published.as_ref().map(|(layout, s)| layout.states.name(*s)))
    }
}
