//! Every error the public API returns. Errors that carry a message give it back.

use crate::ids::{CoopId, MboxId};
use std::fmt;
use thiserror::Error;

/// A mistake in an agent's definition (subscriptions, states, limits).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefineError {
    /// The same (mbox, message type, state) was subscribed twice.
    #[error("duplicate subscription: {message} from {mbox} in state `{state}`")]
    DuplicateSubscription {
        /// The mbox.
        mbox: MboxId,
        /// The message type.
        message: &'static str,
        /// The state.
        state: String,
    },
    /// A message type has both an insend handler and a queued handler on the same mbox, or two
    /// insend handlers.
    #[error("conflicting insend subscription for {message} from {mbox}")]
    InsendConflict {
        /// The mbox.
        mbox: MboxId,
        /// The message type.
        message: &'static str,
    },
    /// A [`State`](crate::State) handle that this agent's definition did not create.
    #[error("unknown state (index {0})")]
    UnknownState(u16),
    /// `initial_substate(parent, child)` with `child` not a direct substate of `parent`.
    #[error("state `{child}` is not a direct substate of `{parent}`")]
    NotASubstate {
        /// The parent state's name.
        parent: String,
        /// The would-be child's name.
        child: String,
    },
    /// More than 65,535 states.
    #[error("too many states")]
    TooManyStates,
    /// A second message limit for the same message type.
    #[error("duplicate message limit for {0}")]
    DuplicateLimit(&'static str),
    /// A second time limit for the same state.
    #[error("state `{0}` already has a time limit")]
    DuplicateTimeLimit(String),
    /// Two delivery filters for the same (mbox, message type).
    #[error("duplicate delivery filter for {message} from {mbox}")]
    DuplicateFilter {
        /// The mbox.
        mbox: MboxId,
        /// The message type.
        message: &'static str,
    },
}

/// Why a coop could not be registered. Nothing of the coop was registered.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The environment is shutting down or stopped.
    #[error("the environment is stopped or shutting down")]
    EnvStopped,
    /// The coop was created by another environment.
    #[error("the coop belongs to another environment")]
    WrongEnv,
    /// The parent coop does not exist (never did, or already deregistered).
    #[error("parent coop {0} not found")]
    ParentNotFound(CoopId),
    /// The parent coop is being deregistered.
    #[error("parent coop {0} is being deregistered")]
    ParentDeregistering(CoopId),
    /// An agent's `define` returned an error.
    #[error("agent #{index} ({agent_type}) failed to define itself: {source}")]
    Define {
        /// Position of the agent in the coop.
        index: usize,
        /// The agent's Rust type.
        agent_type: &'static str,
        /// What was wrong.
        #[source]
        source: DefineError,
    },
    /// An agent's `define` panicked.
    #[error("agent #{index} ({agent_type}) panicked in define")]
    DefinePanicked {
        /// Position of the agent in the coop.
        index: usize,
        /// The agent's Rust type.
        agent_type: &'static str,
    },
    /// An agent could not be bound to its dispatcher.
    #[error("agent #{index} ({agent_type}) could not be bound: {source}")]
    Bind {
        /// Position of the agent in the coop.
        index: usize,
        /// The agent's Rust type.
        agent_type: &'static str,
        /// What was wrong.
        #[source]
        source: BindError,
    },
}

/// Why an agent could not be bound to a dispatcher.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BindError {
    /// The dispatcher was shut down.
    #[error("dispatcher `{0}` is shut down")]
    DispatcherShutDown(String),
    /// A thread for the agent could not be started.
    #[error("could not start a dispatcher thread: {0}")]
    Spawn(String),
    /// The dispatcher belongs to another environment.
    #[error("dispatcher `{0}` belongs to another environment")]
    OtherEnv(String),
}

/// Why a deregistration request was refused.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeregisterError {
    /// No such coop (never registered or already gone).
    #[error("coop {0} not found")]
    NotFound(CoopId),
    /// The coop is already being deregistered.
    #[error("coop {0} is already being deregistered")]
    AlreadyDeregistering(CoopId),
}

/// A send that could not be carried out; the message is given back.
#[derive(Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError<M> {
    /// The receiving agent is not running (not registered yet, deregistered, or its
    /// environment stopped).
    #[error("the receiving agent is not running")]
    AgentGone(M),
    /// A message limit of the receiver rejected the message (reaction `Overload::Drop`).
    #[error("the receiver's message limit was reached")]
    Overloaded(M),
}

impl<M> SendError<M> {
    /// The message that was not sent.
    pub fn into_inner(self) -> M {
        match self {
            SendError::AgentGone(m) | SendError::Overloaded(m) => m,
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::AgentGone(_) => f.write_str("AgentGone(..)"),
            SendError::Overloaded(_) => f.write_str("Overloaded(..)"),
        }
    }
}

/// Why a synchronous request got no reply.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// No reply within the timeout (the request may still be handled later; its reply is then
    /// discarded and counted).
    #[error("no reply within the timeout")]
    Timeout,
    /// The receiver had no handler for the request in its current state.
    #[error("the receiver has no handler for this request in its current state")]
    NoHandler,
    /// The receiver is not running.
    #[error("the receiving agent is not running")]
    AgentGone,
    /// A message limit of the receiver rejected the request.
    #[error("the receiver's message limit was reached")]
    Overloaded,
    /// An agent sent a request to itself: it would wait for itself forever.
    #[error("an agent cannot wait for its own reply")]
    SelfRequest,
    /// The receiver is served by the very thread that would block waiting for the reply.
    #[error("the receiver runs on the requesting thread; waiting would deadlock")]
    SameThread,
    /// The handler panicked before replying.
    #[error("the handler panicked before replying")]
    HandlerPanicked,
    /// The handler dropped the reply handle without replying.
    #[error("the handler dropped the request without replying")]
    NoReply,
    /// The environment shut down before the request was handled.
    #[error("the environment shut down")]
    Shutdown,
}

/// A state change that was refused.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// The state does not belong to this agent.
    #[error("unknown state (index {0})")]
    UnknownState(u16),
    /// State changes are not allowed inside on_enter / on_exit hooks.
    #[error("state changes are not allowed inside on_enter / on_exit hooks")]
    InTransition,
}

/// A named-mbox operation that was refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name is already bound to another mbox.
    #[error("the mbox name `{0}` is already taken")]
    Taken(String),
    /// The name is bound to a direct mbox where a multi mbox was asked for, or vice versa.
    #[error("the mbox name `{0}` is bound to a different kind of mbox")]
    KindMismatch(String),
    /// Names must be non-empty.
    #[error("mbox names must not be empty")]
    Empty,
}

/// Why an environment or dispatcher could not be built.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A worker thread could not be spawned.
    #[error("could not spawn a worker thread: {0}")]
    Spawn(#[from] std::io::Error),
    /// The environment is shutting down or stopped.
    #[error("the environment is stopped or shutting down")]
    EnvStopped,
    /// The calling thread already serves a dispatcher (a thread drives at most one).
    #[error("the calling thread already serves a dispatcher")]
    ThreadBusy,
}

/// A stop guard could not be added.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopGuardError {
    /// The environment is already stopping.
    #[error("the environment is already stopping")]
    EnvStopping,
}
