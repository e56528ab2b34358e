//! Message delivery tracing, in the spirit of SObjectizer 5's `msg_tracing`: when it is enabled
//! ([`EnvBuilder::msg_tracing`](crate::EnvBuilder::msg_tracing)), a [`Tracer`] receives one
//! [`TraceRecord`] for each fate of each message — handled, ignored (no handler in the current
//! state), deferred, redirected, or dropped and why — that passes the environment's
//! [`TraceFilter`].
//!
//! # Ground rules
//!
//! - Off (the default), tracing costs the send and handle paths nothing: the records are
//!   produced at the points that count a drop (cold paths), and a handled message is traced
//!   only on an agent's slow path, which an agent takes when its one `gate` byte is non-zero
//!   (`agent/cell.rs`) — and that byte is tested for every message anyway.
//! - A record is made where the fate is decided: on the sending thread for refusals, limits,
//!   redirects, filters and insend handlers; on the agent's worker for handled, ignored,
//!   deferred, revoked and discarded messages; on the dispatcher being closed for messages
//!   dropped at shutdown. So records of one message may come from different threads, and the
//!   tracer must be `Send + Sync`.
//! - The filter can be replaced while the environment runs
//!   ([`EnvHandle::set_msg_trace_filter`](crate::EnvHandle::set_msg_trace_filter)); each
//!   record is checked against the filter current when it is made. A panicking tracer or
//!   custom filter is caught: the record is lost, the panic is logged through `tracing`.
//!
//! ```
//! use agentry::trace::{CallbackTracer, OutcomeKind, TraceFilter, TraceRecord};
//! use agentry::{Agent, Ctx, Define, DefineError, Env};
//! use std::sync::{Arc, Mutex};
//!
//! struct Ping;
//! struct Pong;
//! struct Echo;
//! impl Agent for Echo {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(|_: &mut Echo, ctx: &mut Ctx<Echo>, _: Ping| ctx.deregister_coop(agentry::DeregReason::Normal))?;
//!         Ok(())
//!     }
//! }
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = Arc::clone(&seen);
//! let env = Env::builder()
//!     .msg_tracing(CallbackTracer::new(move |r: &TraceRecord<'_>| {
//!         log.lock().expect("log").push((r.message, r.outcome.kind()));
//!     }))
//!     .msg_trace_filter(TraceFilter::new().message::<Ping>().message::<Pong>())
//!     .build()
//!     .expect("env");
//! let echo = env.handle().register_agent(Echo).expect("registered");
//! echo.send(Pong); // no handler: ignored
//! echo.send(Ping); // handled
//! env.run();
//! let seen = seen.lock().expect("log");
//! assert!(seen.iter().any(|&(m, k)| m.ends_with("Pong") && k == OutcomeKind::Ignored));
//! assert!(seen.iter().any(|&(m, k)| m.ends_with("Ping") && k == OutcomeKind::Handled));
//! ```
//!
//! The trace context that messages carry across hops when a tracing backend is hooked in
//! ([`ContextPropagation`], [`EnvBuilder::trace_context`](crate::EnvBuilder::trace_context)) is
//! the other half of this module: `trace/context.rs`.

pub(crate) mod context;

pub use context::{
    ContextPropagation, HandlerInfo, TRACE_CONTEXT_LEN, TraceContext, current_context,
    with_trace_context,
};

use crate::ids::{AgentId, MboxId};
use parking_lot::RwLock;
use std::any::TypeId;
use std::fmt;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Receives the records of traced deliveries (see the module docs).
pub trait Tracer: Send + Sync + 'static {
    /// Called once for each record that passes the filter, on the thread that made it.
    fn trace(&self, record: &TraceRecord<'_>);
}

/// What happened to one message at one agent (or at a multi mbox without subscribers).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct TraceRecord<'a> {
    /// The agent the message was for (`None`: a multi mbox without subscribers, or a demand
    /// whose agent was already gone when its dispatcher took it).
    pub agent: Option<AgentId>,
    /// The agent's Rust type, when known.
    pub agent_type: Option<&'static str>,
    /// The mbox the message came through (the agent's own direct mbox, or a multi mbox).
    pub mbox: Option<MboxId>,
    /// The message's Rust type (`Arc<T>` for a `T` delivered through a multi mbox).
    pub message: &'static str,
    /// The message's `TypeId` (of `Arc<T>` for a `T` delivered through a multi mbox).
    pub message_type: TypeId,
    /// What became of it.
    pub outcome: Outcome<'a>,
}

/// The fate of a traced message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome<'a> {
    /// A handler ran and returned.
    Handled,
    /// A handler ran and panicked (the agent's panic reaction follows).
    Panicked,
    /// The agent had no handler for it in `state` (counted in `unhandled`).
    Ignored {
        /// The agent's state when it took the message.
        state: &'a str,
    },
    /// An insend handler ran on the sender's thread.
    InsendHandled,
    /// Kept for later: the agent failed and waits for its supervisor to restart it, or its coop
    /// is still starting. A later record tells its final fate.
    Deferred,
    /// The receiver's message limit redirected it to another agent.
    Redirected,
    /// The receiver's message limit transformed it into another message.
    Transformed,
    /// Dropped, for the reason given (always counted in `EnvStats`).
    Dropped(DropReason),
}

impl Outcome<'_> {
    /// The outcome without its details (what [`TraceFilter::outcome`] matches).
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Handled => OutcomeKind::Handled,
            Outcome::Panicked => OutcomeKind::Panicked,
            Outcome::Ignored { .. } => OutcomeKind::Ignored,
            Outcome::InsendHandled => OutcomeKind::InsendHandled,
            Outcome::Deferred => OutcomeKind::Deferred,
            Outcome::Redirected => OutcomeKind::Redirected,
            Outcome::Transformed => OutcomeKind::Transformed,
            Outcome::Dropped(_) => OutcomeKind::Dropped,
        }
    }
}

/// [`Outcome`] without details, for filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutcomeKind {
    /// [`Outcome::Handled`].
    Handled,
    /// [`Outcome::Panicked`].
    Panicked,
    /// [`Outcome::Ignored`].
    Ignored,
    /// [`Outcome::InsendHandled`].
    InsendHandled,
    /// [`Outcome::Deferred`].
    Deferred,
    /// [`Outcome::Redirected`].
    Redirected,
    /// [`Outcome::Transformed`].
    Transformed,
    /// [`Outcome::Dropped`].
    Dropped,
}

/// Why a message was dropped; each reason is counted in `EnvStats` (the counter is named).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// A message limit with the `Drop` reaction (`limit_dropped`).
    Overloaded,
    /// A redirect/transform chain was too long (`redirect_loops`).
    RedirectLoop,
    /// The receiver was not running: never registered, gone, or its demand outlived it
    /// (`dead_letters`).
    AgentGone,
    /// The receiver's coop is being deregistered: it no longer accepts messages, or it was
    /// holding deferred messages when it finished (`dead_letters`).
    CoopDeregistering,
    /// A cancelled timer's message, discarded when its turn came (`timers_revoked`).
    TimerRevoked,
    /// Still queued when its dispatcher shut down (`dropped_on_shutdown`).
    Shutdown,
    /// The receiver failed — a handler or hook panicked with the reaction `DeregisterCoop` or
    /// `ShutdownEnv` — and handles nothing more (`dead_letters`).
    AgentFailed,
    /// The receiver's coop failed to start: one of its agents' `on_start` returned an error
    /// or panicked (`dead_letters`).
    StartFailed,
    /// Sent to a multi mbox with no subscriber for its type (`no_subscribers`).
    NoSubscribers,
    /// A subscriber's delivery filter declined it (`filtered_out`).
    FilteredOut,
    /// A subscriber's delivery filter panicked (`panics`).
    FilterPanicked,
    /// The overload transform panicked (`panics`).
    TransformPanicked,
}

type CustomFilter = Arc<dyn Fn(&TraceRecord<'_>) -> bool + Send + Sync>;

/// Which records reach the tracer. Each kind of criterion (agent, agent type, mbox, message
/// type, outcome) that is set must be met by at least one of its values; criteria of different
/// kinds must all be met; the custom predicate, if set, must accept too. The default
/// ([`TraceFilter::new`]) accepts every record.
///
/// ```
/// use agentry::trace::{OutcomeKind, TraceFilter};
/// struct Ping;
/// // Only Ping messages (sent directly or through a multi mbox) that were dropped or ignored:
/// let filter = TraceFilter::new()
///     .message::<Ping>()
///     .outcome(OutcomeKind::Dropped)
///     .outcome(OutcomeKind::Ignored);
/// # let _ = filter;
/// ```
#[derive(Clone, Default)]
pub struct TraceFilter {
    agents: Vec<AgentId>,
    agent_types: Vec<&'static str>,
    mboxes: Vec<MboxId>,
    messages: Vec<TypeId>,
    outcomes: Vec<OutcomeKind>,
    custom: Option<CustomFilter>,
}

impl TraceFilter {
    /// A filter that accepts every record.
    pub fn new() -> Self {
        TraceFilter::default()
    }

    /// Records of the agent `id` (an incarnation: a restarted agent has a new id — use
    /// [`mbox`](Self::mbox) to follow it across restarts).
    pub fn agent(mut self, id: AgentId) -> Self {
        self.agents.push(id);
        self
    }

    /// Records of agents of Rust type `A`.
    pub fn agent_type<A: 'static>(mut self) -> Self {
        self.agent_types.push(std::any::type_name::<A>());
        self
    }

    /// Records of messages that came through the mbox `id` (a direct or a multi mbox).
    pub fn mbox(mut self, id: MboxId) -> Self {
        self.mboxes.push(id);
        self
    }

    /// Records of messages of type `M`, sent directly or through a multi mbox (delivered as
    /// `Arc<M>`).
    pub fn message<M: 'static>(mut self) -> Self {
        self.messages.push(TypeId::of::<M>());
        self.messages.push(TypeId::of::<Arc<M>>());
        self
    }

    /// Records with this outcome.
    pub fn outcome(mut self, kind: OutcomeKind) -> Self {
        self.outcomes.push(kind);
        self
    }

    /// Records `predicate` accepts (called on the thread that makes the record, after the
    /// other criteria passed).
    pub fn custom(
        mut self,
        predicate: impl Fn(&TraceRecord<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.custom = Some(Arc::new(predicate));
        self
    }

    /// True if `record` passes the filter.
    pub fn accepts(&self, record: &TraceRecord<'_>) -> bool {
        fn any<T: PartialEq>(set: &[T], value: Option<T>) -> bool {
            set.is_empty() || value.is_some_and(|v| set.contains(&v))
        }
        any(&self.agents, record.agent)
            && any(&self.agent_types, record.agent_type)
            && any(&self.mboxes, record.mbox)
            && any(&self.messages, Some(record.message_type))
            && any(&self.outcomes, Some(record.outcome.kind()))
            && self.custom.as_ref().is_none_or(|f| f(record))
    }
}

impl fmt::Debug for TraceFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceFilter")
            .field("agents", &self.agents)
            .field("agent_types", &self.agent_types)
            .field("mboxes", &self.mboxes)
            .field("messages", &self.messages.len())
            .field("outcomes", &self.outcomes)
            .field("custom", &self.custom.is_some())
            .finish()
    }
}

/// Writes one line per record to standard error, e.g.
/// `agentry trace: agent#3.1 (app::Worker) <- mbox#7: app::Ping: handled`.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdErrTracer;

impl Tracer for StdErrTracer {
    fn trace(&self, record: &TraceRecord<'_>) {
        // One `write_all` per record keeps lines of different threads apart.
        let line = format!("agentry trace: {record}\n");
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

/// A tracer that calls a closure with each record.
pub struct CallbackTracer<F>(F);

impl<F: Fn(&TraceRecord<'_>) + Send + Sync + 'static> CallbackTracer<F> {
    /// Wraps `f`.
    pub fn new(f: F) -> Self {
        CallbackTracer(f)
    }
}

impl<F: Fn(&TraceRecord<'_>) + Send + Sync + 'static> Tracer for CallbackTracer<F> {
    fn trace(&self, record: &TraceRecord<'_>) {
        (self.0)(record)
    }
}

impl<F> fmt::Debug for CallbackTracer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallbackTracer(..)")
    }
}

impl fmt::Display for TraceRecord<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.agent {
            Some(id) => write!(f, "{id}")?,
            None => f.write_str("no agent")?,
        }
        if let Some(t) = self.agent_type {
            write!(f, " ({t})")?;
        }
        if let Some(m) = self.mbox {
            write!(f, " <- {m}")?;
        }
        write!(f, ": {}: ", self.message)?;
        match self.outcome {
            Outcome::Handled => f.write_str("handled"),
            Outcome::Panicked => f.write_str("handler panicked"),
            Outcome::Ignored { state } => write!(f, "ignored (no handler in state `{state}`)"),
            Outcome::InsendHandled => f.write_str("handled by an insend handler"),
            Outcome::Deferred => f.write_str("kept for later"),
            Outcome::Redirected => f.write_str("redirected by a message limit"),
            Outcome::Transformed => f.write_str("transformed by a message limit"),
            Outcome::Dropped(why) => write!(f, "dropped ({why:?})"),
        }
    }
}

/// One environment's tracer and its current filter.
pub(crate) struct TraceSink {
    tracer: Arc<dyn Tracer>,
    filter: RwLock<TraceFilter>,
}

impl TraceSink {
    pub(crate) fn new(tracer: Arc<dyn Tracer>, filter: TraceFilter) -> Self {
        TraceSink {
            tracer,
            filter: RwLock::new(filter),
        }
    }

    pub(crate) fn set_filter(&self, filter: TraceFilter) {
        *self.filter.write() = filter;
    }

    /// Hands `record` to the tracer if the filter accepts it.
    pub(crate) fn emit(&self, record: &TraceRecord<'_>) {
        let delivered = catch_unwind(AssertUnwindSafe(|| {
            if self.filter.read().accepts(record) {
                self.tracer.trace(record);
            }
        }));
        if delivered.is_err() {
            tracing::error!(
                message = record.message,
                "message tracer or trace filter panicked"
            );
        }
    }
}

impl fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceSink")
            .field("filter", &*self.filter.read())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
