//! Messages: what travels through mboxes.
//!
//! Any `Send + 'static` value is a message; messages sent through a
//! [`MultiMbox`](crate::MultiMbox) are shared by every subscriber and must also be `Sync`.
//! A *signal* is a zero-sized message type (`struct Start;`): it carries no payload, and
//! sending one copies and allocates nothing.

pub(crate) mod envelope;
mod limit_slot;
#[allow(unsafe_code)]
pub(crate) mod payload;

pub(crate) use limit_slot::LimitSlot;

/// Why a message was not handled; reported to requesters and counted in the stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Undelivered {
    /// The receiving agent had no handler for the message in its current state.
    NoHandler,
    /// The receiving agent was not running (never registered, or deregistered).
    AgentGone,
    /// A message limit of the receiver rejected the message.
    Overloaded,
    /// The handler panicked before replying.
    HandlerPanicked,
    /// The environment shut down before the message was handled.
    Shutdown,
}
