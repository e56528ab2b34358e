//! The agent whose handler is running on this thread, if any, by its own mbox's id: set by the
//! agent's cell (`agent/cell.rs`) around each handler and hook, read by
//! [`Mbox::request`](crate::Mbox::request) to refuse a request an agent makes to itself. Here,
//! below the agents, so that the mbox reads it without importing them.

use crate::ids::MboxId;
use std::cell::Cell;

thread_local! {
    /// Set for the duration of a handler (the previous value is put back after it).
    pub(crate) static CURRENT_AGENT: Cell<Option<MboxId>> = const { Cell::new(None) };
}

/// The own mbox of the agent whose handler is running on this thread, if any.
pub(crate) fn current_agent() -> Option<MboxId> {
    CURRENT_AGENT.get()
}
