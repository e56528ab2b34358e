//! Every error the public API returns. Errors that carry a message give it back.

use crate::ids::{CoopId, MboxId, WatchId};
use crate::message::envelope::Envelope;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// An application's own error, returned by an agent's [`define`](crate::Agent::define) (as
/// [`DefineError::User`]) or [`on_start`](crate::Agent::on_start) to say why it cannot run.
///
/// Any `std::error::Error + Send + Sync + 'static` converts into it, so `?` works in
/// `on_start`; [`UserError::msg`] makes one from text. The original error stays reachable
/// ([`downcast_ref`](Self::downcast_ref), [`as_error`](Self::as_error)) and is the `source()`
/// of the registration error that reports it.
///
/// Like `anyhow::Error`, it does not implement `std::error::Error` itself (that would make
/// the blanket conversion overlap with `From<T> for T`).
///
/// ```
/// use agentry::{Agent, Ctx, Env, RegisterError, StartFailure, UserError};
///
/// struct NeedsConfig;
/// impl Agent for NeedsConfig {
///     fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
///         let text = std::fs::read_to_string("/nonexistent/agentry.toml")?;
///         println!("{text}");
///         Ok(())
///     }
/// }
///
/// let env = Env::new().expect("env");
/// let err = env.handle().register_agent(NeedsConfig).unwrap_err();
/// let RegisterError::Start { failure: StartFailure::Error(e), .. } = err else { panic!("{err}") };
/// assert!(e.downcast_ref::<std::io::Error>().is_some());
/// ```
#[derive(Clone)]
pub struct UserError(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl UserError {
    /// Wraps an error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        UserError(Arc::new(error))
    }

    /// An error that is just a message.
    pub fn msg(message: impl fmt::Display) -> Self {
        UserError(Arc::new(Message(message.to_string())))
    }

    /// The error, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }

    /// The wrapped error.
    pub fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for UserError {
    fn from(error: E) -> Self {
        UserError::new(error)
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// Two user errors are equal when they are the same error or say the same thing (so that
/// errors holding them can be compared in tests).
impl PartialEq for UserError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for UserError {}

/// The error behind [`UserError::msg`].
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}

/// Why an agent's `on_start` failed. Its `source()` is the agent's own error, if it returned
/// one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartFailure {
    /// It returned this error.
    Error(UserError),
    /// It (or a hook of its initial state) panicked with this message.
    Panicked(String),
}

impl fmt::Display for StartFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartFailure::Error(e) => write!(f, "on_start failed: {e}"),
            StartFailure::Panicked(message) => write!(f, "on_start panicked: {message}"),
        }
    }
}

impl std::error::Error for StartFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartFailure::Error(e) => Some(e.as_error()),
            StartFailure::Panicked(_) => None,
        }
    }
}

impl StartFailure {
    /// The user's error, if `on_start` returned one.
    pub fn user_error(&self) -> Option<&UserError> {
        match self {
            StartFailure::Error(e) => Some(e),
            StartFailure::Panicked(_) => None,
        }
    }
}

/// The message of a caught panic (its payload, when it is a string), worded as agentry words
/// it wherever it reports one (`RegisterError::DefinePanicked`, a handler's panic, a future's
/// `TaskPanicked` in agentry-tokio).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic payload that is not a string)".to_owned()
    }
}

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
    /// Two different event priorities for the same (mbox, message type).
    #[error("conflicting event priorities for {message} from {mbox}")]
    ConflictingPriority {
        /// The mbox.
        mbox: MboxId,
        /// The message type.
        message: &'static str,
    },
    /// A second `on_enter` or `on_exit` hook for the same state (a state has at most one of
    /// each; a second would silently replace the first).
    #[error("state `{state}` already has an {hook} hook")]
    DuplicateHook {
        /// Which hook.
        hook: HookKind,
        /// The state's name.
        state: String,
    },
    /// An agent registered with its typed address declares this message type in its
    /// [`Protocol`](crate::protocol::Protocol) but subscribes no handler for it on its own mbox, in any
    /// state (see [`protocol`](crate::protocol)).
    #[error(
        "the protocol declares {0} but define subscribes no handler for it on the agent's own mbox"
    )]
    UnhandledProtocolMessage(&'static str),
    /// The agent's own reason not to run ([`DefineError::user`]).
    #[error("{0}")]
    User(UserError),
}

impl DefineError {
    /// The agent refuses to be registered, for its own reason:
    /// `Err(DefineError::user(e))`, or `.map_err(DefineError::user)?`.
    pub fn user(error: impl Into<UserError>) -> Self {
        DefineError::User(error.into())
    }
}

/// The kind of a state hook, in [`DefineError::DuplicateHook`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    /// `Define::on_enter`.
    Enter,
    /// `Define::on_exit`.
    Exit,
}

impl std::fmt::Display for HookKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HookKind::Enter => "on_enter",
            HookKind::Exit => "on_exit",
        })
    }
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
    #[error("agent #{index} ({agent_type}) panicked in define: {message}")]
    DefinePanicked {
        /// Position of the agent in the coop.
        index: usize,
        /// The agent's Rust type.
        agent_type: &'static str,
        /// The panic's message.
        message: String,
    },
    /// An agent's `on_start` failed (returned an error or panicked). The coop was rolled
    /// back: none of its agents handled a message, and those that had started finished
    /// (`on_finish` ran) before this was returned.
    #[error("agent #{index} ({agent_type}) failed to start: {failure}")]
    Start {
        /// Position of the agent in the coop.
        index: usize,
        /// The agent's Rust type.
        agent_type: &'static str,
        /// What went wrong.
        #[source]
        failure: StartFailure,
    },
    /// The coop's supervision is wrong (see [`SupervisionError`]).
    #[error("invalid supervision: {0}")]
    Supervision(#[from] SupervisionError),
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
    /// A dispatcher thread could not be started: spawning it failed, or (an io thread of
    /// `agentry-net`) creating what it waits on.
    #[error("could not start a dispatcher thread: {0}")]
    Spawn(#[from] std::io::Error),
    /// A dispatcher thread exited before it reported that it was ready (`agentry-net`'s io
    /// threads report; a panic while setting up is the usual cause).
    #[error("a dispatcher thread exited during start-up")]
    ThreadLost,
    /// A dispatcher name is empty or contains a NUL byte (it names threads and statistics).
    #[error("invalid dispatcher name {0:?}: it must be non-empty and contain no NUL byte")]
    InvalidName(String),
    /// A dispatcher setting is out of range (the text says which).
    #[error("invalid dispatcher setting: {0}")]
    InvalidSetting(&'static str),
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

/// A send to an [`Mchain`](crate::mchain::Mchain) that was refused; the message is given back.
#[derive(Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainSendError<M> {
    /// The chain is full and its overflow reaction is `Fail`, or `Block` and no room came
    /// before the timeout.
    #[error("the chain is full")]
    Full(M),
    /// The chain is closed.
    #[error("the chain is closed")]
    Closed(M),
}

impl<M> ChainSendError<M> {
    /// The message that was not sent.
    pub fn into_inner(self) -> M {
        match self {
            ChainSendError::Full(m) | ChainSendError::Closed(m) => m,
        }
    }
}

impl<M> fmt::Debug for ChainSendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainSendError::Full(_) => f.write_str("Full(..)"),
            ChainSendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

/// Why a receive from an [`Mchain`](crate::mchain::Mchain) got no message.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecvError {
    /// No (handled) message within the timeout.
    #[error("no message within the timeout")]
    Timeout,
    /// The chain is closed and empty.
    #[error("the chain is closed and empty")]
    Closed,
}

/// Why [`Mchain::recv_as`](crate::mchain::Mchain::recv_as) (or
/// [`recv_future_as`](crate::mchain::Mchain::recv_future_as)) got no message of the type asked for.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecvAsError {
    /// No message within the timeout.
    #[error("no message within the timeout")]
    Timeout,
    /// The chain is closed and empty.
    #[error("the chain is closed and empty")]
    Closed,
    /// The next message is of another type. It was taken from the chain (counted as
    /// received) and is given back here, for the caller to downcast or handle.
    #[error("the next message is a {}, not a {expected}", got.type_name())]
    OtherType {
        /// The type asked for.
        expected: &'static str,
        /// The message that came instead.
        got: Envelope,
    },
}

impl From<RecvError> for RecvAsError {
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::Timeout => RecvAsError::Timeout,
            RecvError::Closed => RecvAsError::Closed,
        }
    }
}

/// Why [`Mchain::try_recv`](crate::mchain::Mchain::try_recv) got no message.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryRecvError {
    /// The chain is open and empty.
    #[error("the chain is empty")]
    Empty,
    /// The chain is closed and empty.
    #[error("the chain is closed and empty")]
    Closed,
}

/// Why a [`Select`](crate::mchain::Select) got no message.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectError {
    /// No (handled) message within the timeout.
    #[error("no message within the timeout")]
    Timeout,
    /// Every chain is closed and empty.
    #[error("every chain is closed and empty")]
    AllClosed,
    /// The select has no case.
    #[error("the select has no chain to wait on")]
    NoChains,
}

/// A mistake in setting up a chain, a subscription or a set of handlers.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MchainError {
    /// A bounded chain needs a capacity of at least 1.
    #[error("a bounded chain needs a capacity of at least 1")]
    ZeroCapacity,
    /// The chain is closed.
    #[error("the chain is closed")]
    Closed,
    /// The chain already subscribes to this message type on this multi mbox.
    #[error("the chain already subscribes to {0} on this multi mbox")]
    AlreadySubscribed(&'static str),
    /// A second handler for the same message type.
    #[error("a handler for {0} is already set")]
    DuplicateHandler(&'static str),
}

/// A failed expectation of the testing kit ([`agentry::testing`](crate::testing)).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TestError {
    /// More than `steps` demands and timer deadlines in one call: a message loop that never
    /// ends, or a timer that keeps firing.
    #[error("still busy after {steps} steps (a message loop, or a timer that keeps firing?)")]
    NotIdle {
        /// The limit ([`TestEnvBuilder::max_steps`](crate::testing::TestEnvBuilder::max_steps)).
        steps: usize,
    },
    /// A scenario step failed.
    #[error("step `{step}` failed: {why}")]
    Step {
        /// The step's name.
        step: String,
        /// Why.
        why: StepFailure,
    },
    /// The expected message did not arrive in time.
    #[error("no {expected} arrived within {within:?}")]
    NoMessage {
        /// The expected message type.
        expected: &'static str,
        /// How long (virtual time) the test waited.
        within: Duration,
    },
    /// Another message arrived where one was expected.
    #[error("expected {expected}, got {got}")]
    WrongMessage {
        /// The expected message type.
        expected: &'static str,
        /// The type that arrived.
        got: &'static str,
    },
    /// A message arrived where none was expected.
    #[error("unexpected {got} at {at:?}")]
    UnexpectedMessage {
        /// The type that arrived.
        got: &'static str,
        /// When (virtual time since the environment was created).
        at: Duration,
    },
    /// The chain was closed (and empty) while a message was expected.
    #[error("the chain was closed while a {expected} was expected")]
    ChainClosed {
        /// The expected message type.
        expected: &'static str,
    },
    /// The request was refused or failed.
    #[error("request failed: {0}")]
    Request(#[from] RequestError),
    /// Every queued demand ran and the agent did not reply.
    #[error("the agent did not reply (nothing left to run)")]
    NoReply,
    /// The environment could not stop (a stop guard stayed, or agents on other dispatchers
    /// did not finish).
    #[error("the environment could not stop")]
    NotStopped,
}

/// Why a scenario step failed ([`TestError::Step`]).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepFailure {
    /// The step has no trigger to wait for.
    #[error("it has no trigger")]
    NoTrigger,
    /// Its triggers had not all fired when its time was up.
    #[error("not triggered within {waited:?}; still waiting for: {}", .waiting_for.join("; "))]
    NotTriggered {
        /// How long (virtual time) it waited.
        waited: Duration,
        /// The triggers that did not fire.
        waiting_for: Vec<String>,
    },
    /// It completed before its `not_before` time.
    #[error("completed after {after:?}, before the {not_before:?} it must wait")]
    TooEarly {
        /// When it completed, after it started.
        after: Duration,
        /// The step's `not_before`.
        not_before: Duration,
    },
    /// More than `steps` demands and timer deadlines while it waited.
    #[error("still busy after {steps} steps")]
    NotIdle {
        /// The limit.
        steps: usize,
    },
}

/// A coop's supervision that cannot work (reported by `register_coop` as
/// [`RegisterError::Supervision`]; nothing is registered).
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SupervisionError {
    /// The restart intensity window is zero: no restart could ever be counted.
    #[error("the restart intensity window must not be zero")]
    ZeroWindow,
    /// An exponential backoff whose cap is below its first delay.
    #[error("the backoff cap {max:?} is below its first delay {first:?}")]
    BackoffCapBelowFirst {
        /// The first delay.
        first: std::time::Duration,
        /// The cap.
        max: std::time::Duration,
    },
    /// Supervised children were added to a coop that does not supervise
    /// ([`Coop::supervise`](crate::Coop::supervise) was not called).
    #[error("supervised children were added to a coop without a supervision policy")]
    NotSupervising,
}

/// A death-watch operation that was refused.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchError {
    /// An agent cannot watch itself.
    #[error("an agent cannot watch itself")]
    SelfWatch,
    /// The target mbox's agent was never registered (not yet, or its coop failed to register).
    #[error("the agent of {0} is not registered")]
    NotRegistered(MboxId),
    /// The target belongs to another environment.
    #[error("the target belongs to another environment")]
    OtherEnv,
    /// The watcher is finishing (in `on_finish`, or leaving its states for the last time).
    #[error("the watching agent is finishing")]
    WatcherFinishing,
    /// No such watch of this agent (it fired, was removed, or is another agent's).
    #[error("no watch {0} of this agent")]
    UnknownWatch(WatchId),
}

/// A trace context from outside (a `traceparent` header, a remote envelope's bytes) that is
/// not one (see [`trace::TraceContext`](crate::trace::TraceContext)).
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceContextError {
    /// Not `00-<32 hex>-<16 hex>-<2 hex>` in lower-case hex.
    #[error("malformed traceparent")]
    Malformed,
    /// A `traceparent` version other than `00`.
    #[error("unsupported traceparent version")]
    Version,
    /// An all-zero trace id or span id.
    #[error("all-zero trace id or span id")]
    ZeroId,
}

/// A message-tracing operation that was refused.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceError {
    /// Message tracing is off: it is enabled when the environment is built
    /// ([`EnvBuilder::msg_tracing`](crate::EnvBuilder::msg_tracing)).
    #[error("message tracing is not enabled for this environment")]
    Disabled,
}
