//! Trace context across hops: with a [`ContextPropagation`] hook installed
//! ([`EnvBuilder::trace_context`](crate::EnvBuilder::trace_context)), a message carries the W3C
//! trace context of the span that sent it, and the handler that receives it runs inside a span
//! whose parent is that context — so one request's spans, across agents, timers and processes,
//! join one trace.
//!
//! # Ground rules
//!
//! - The core knows no tracing backend: it carries an opaque [`TraceContext`] (the fields of a
//!   W3C `traceparent`) and asks the hook, which the user installs (the `agentry-otel` crate
//!   implements it with `tracing-opentelemetry`), for the context of the current span when a
//!   message is sent or a timer is scheduled, and for the span to enter around the handler.
//! - Off (no hook, the default), nothing is attached anywhere and the paths pay nothing: the
//!   hook sits in an agent's boxed per-type rules (`mbox/direct.rs`), which are absent for
//!   agents that declare no insend handler and no event priority, and a message with a
//!   context is a demand of its own kind (`Kind::TRACED`, `demand.rs`) — the 56-byte demand
//!   does not grow; a plain message is what it was.
//! - On, a send from inside a span (or a [`with_trace_context`] scope) boxes the payload with
//!   the context; a send outside any span carries nothing. Which hops carry it:
//!   - local sends to an agent's mbox (direct, typed, through a multi mbox, a request): the
//!     sender's context; the receiving handler runs in the hook's span, child of it; an insend
//!     handler runs on the sender's thread, inside the sender's span already;
//!   - timers (`send_delayed`, `send_periodic`): the context current when the timer was
//!     scheduled — every delivery of a periodic timer is its child;
//!   - a remote gateway delivering a message from another process: the context the envelope
//!     carried (`agentry-remote`, through [`with_trace_context`]).
//!
//!   Message chains (`Mchain`) carry none: a chain's receiver is no handler. A message an
//!   agent holds and replays later (a failed supervised agent's, or one that arrived while its
//!   coop was starting, `agent/held.rs`) is replayed without its context.
//! - A context is copied, never shared: 25 bytes; a bad `traceparent` from outside is a typed
//!   [`TraceContextError`], never a panic.

use crate::error::TraceContextError;
use crate::ids::AgentId;
use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

/// The W3C trace context of one span: trace id, the span's id (the parent of what it sends)
/// and the trace flags (bit 0: sampled). Both ids are non-zero (the W3C rule).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

/// The bytes of a [`TraceContext`] in its binary form: trace id, span id, flags.
pub const TRACE_CONTEXT_LEN: usize = 25;

impl TraceContext {
    /// A context, or `None` if an id is all zeros (invalid in W3C trace context).
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8], flags: u8) -> Option<TraceContext> {
        (trace_id != [0; 16] && span_id != [0; 8]).then_some(TraceContext {
            trace_id,
            span_id,
            flags,
        })
    }

    /// The trace id.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The id of the span the context belongs to (the parent of the receiving handler's).
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace flags.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// The `sampled` flag (bit 0).
    pub fn is_sampled(&self) -> bool {
        self.flags & 1 != 0
    }

    /// The binary form: trace id (16 bytes), span id (8), flags (1).
    pub fn to_bytes(&self) -> [u8; TRACE_CONTEXT_LEN] {
        let mut b = [0; TRACE_CONTEXT_LEN];
        b[..16].copy_from_slice(&self.trace_id);
        b[16..24].copy_from_slice(&self.span_id);
        b[24] = self.flags;
        b
    }

    /// Reads the binary form of [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(b: &[u8; TRACE_CONTEXT_LEN]) -> Result<TraceContext, TraceContextError> {
        let mut trace_id = [0; 16];
        let mut span_id = [0; 8];
        trace_id.copy_from_slice(&b[..16]);
        span_id.copy_from_slice(&b[16..24]);
        TraceContext::new(trace_id, span_id, b[24]).ok_or(TraceContextError::ZeroId)
    }

    /// The W3C `traceparent` header value (version `00`):
    /// `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
    pub fn traceparent(&self) -> String {
        self.to_string()
    }

    /// Parses a `traceparent` header value of version `00` (lower-case hex, as W3C requires).
    pub fn parse_traceparent(s: &str) -> Result<TraceContext, TraceContextError> {
        let b = s.as_bytes();
        if b.len() != 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return Err(TraceContextError::Malformed);
        }
        if hex::<1>(&b[0..2])? != [0] {
            return Err(TraceContextError::Version);
        }
        let trace_id = hex::<16>(&b[3..35])?;
        let span_id = hex::<8>(&b[36..52])?;
        let [flags] = hex::<1>(&b[53..55])?;
        TraceContext::new(trace_id, span_id, flags).ok_or(TraceContextError::ZeroId)
    }
}

/// `2 * N` lower-case hex digits as `N` bytes.
fn hex<const N: usize>(digits: &[u8]) -> Result<[u8; N], TraceContextError> {
    fn nibble(d: u8) -> Result<u8, TraceContextError> {
        match d {
            b'0'..=b'9' => Ok(d - b'0'),
            b'a'..=b'f' => Ok(d - b'a' + 10),
            _ => Err(TraceContextError::Malformed),
        }
    }
    let mut out = [0; N];
    for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *o = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Ok(out)
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        for b in self.trace_id {
            write!(f, "{b:02x}")?;
        }
        f.write_str("-")?;
        for b in self.span_id {
            write!(f, "{b:02x}")?;
        }
        write!(f, "-{:02x}", self.flags)
    }
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceContext({self})")
    }
}

/// The handler a span is asked for ([`ContextPropagation::handler_span`]).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct HandlerInfo {
    /// The receiving agent.
    pub agent: AgentId,
    /// The message's type name.
    pub message: &'static str,
    /// The message was sent by a timer.
    pub timer: bool,
}

/// The user's tracing backend as the core sees it (see the module docs). Called on the
/// sending thread ([`current`](Self::current)) and on the receiving agent's worker
/// ([`handler_span`](Self::handler_span)); both must be cheap and must not panic.
pub trait ContextPropagation: Send + Sync + 'static {
    /// The context of the span current on this thread, or `None` if there is none (or it is
    /// not recorded).
    fn current(&self) -> Option<TraceContext>;

    /// A span whose parent is `parent`, entered around the handler of a message that carried
    /// it.
    fn handler_span(&self, parent: &TraceContext, handler: &HandlerInfo) -> tracing::Span;
}

/// The hook installed on an environment (cloned into every agent's per-type rules and into the
/// timer service).
#[derive(Clone)]
pub(crate) struct Propagation(pub(crate) Arc<dyn ContextPropagation>);

impl fmt::Debug for Propagation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContextPropagation(..)")
    }
}

impl Propagation {
    /// The context a send from this thread carries now ([`current_context`]).
    #[inline(never)]
    pub(crate) fn current(&self) -> Option<TraceContext> {
        current_context(&*self.0)
    }
}

thread_local! {
    /// The context of the innermost [`with_trace_context`] scope on this thread: `None` outside
    /// any, `Some(None)` inside a scope that carries no context.
    static SCOPE: Cell<Option<Option<TraceContext>>> = const { Cell::new(None) };
}

/// Runs `f` with `context` as the context every send from this thread carries (instead of the
/// current span's): what a timer does with the context of its scheduling, and a remote gateway
/// with the context an envelope carried. `None` makes the sends in `f` carry none. Scopes nest;
/// the previous one is back when `f` returns or unwinds.
pub fn with_trace_context<R>(context: Option<TraceContext>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Option<TraceContext>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPE.with(|s| s.replace(Some(context))));
    f()
}

/// The context a send from this thread carries now: the innermost [`with_trace_context`]
/// scope's, otherwise the current span's as `hook` reports it.
pub fn current_context(hook: &dyn ContextPropagation) -> Option<TraceContext> {
    match SCOPE.with(Cell::get) {
        Some(scoped) => scoped,
        None => hook.current(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> TraceContext {
        TraceContext::new([0xab; 16], [0x01, 2, 3, 4, 5, 6, 7, 0xff], 1).expect("non-zero")
    }

    #[test]
    fn traceparent_round_trips_and_is_the_w3c_form() {
        let text = cx().traceparent();
        assert_eq!(
            text,
            "00-abababababababababababababababab-01020304050607ff-01"
        );
        assert_eq!(TraceContext::parse_traceparent(&text), Ok(cx()));
        assert_eq!(TraceContext::from_bytes(&cx().to_bytes()), Ok(cx()));
    }

    #[test]
    fn bad_traceparents_are_typed_errors() {
        let good = cx().traceparent();
        let cases = [
            ("", TraceContextError::Malformed),
            (&good[..54], TraceContextError::Malformed),
            (
                "01-abababababababababababababababab-01020304050607ff-01",
                TraceContextError::Version,
            ),
            (
                "00-ABABABABABABABABABABABABABABABAB-01020304050607ff-01",
                TraceContextError::Malformed,
            ),
            (
                "00-abababababababababababababababab_01020304050607ff-01",
                TraceContextError::Malformed,
            ),
            (
                "00-00000000000000000000000000000000-01020304050607ff-01",
                TraceContextError::ZeroId,
            ),
            (
                "00-abababababababababababababababab-0000000000000000-01",
                TraceContextError::ZeroId,
            ),
        ];
        for (text, error) in cases {
            assert_eq!(
                TraceContext::parse_traceparent(text),
                Err(error),
                "{text:?}"
            );
        }
        assert_eq!(
            TraceContext::from_bytes(&[0; TRACE_CONTEXT_LEN]),
            Err(TraceContextError::ZeroId)
        );
    }

    struct Fixed(Option<TraceContext>);
    impl ContextPropagation for Fixed {
        fn current(&self) -> Option<TraceContext> {
            self.0
        }
        fn handler_span(&self, _: &TraceContext, _: &HandlerInfo) -> tracing::Span {
            tracing::Span::none()
        }
    }

    #[test]
    fn scopes_override_the_hook_nest_and_restore() {
        let other = TraceContext::new([7; 16], [7; 8], 0).expect("non-zero");
        let hook = Fixed(Some(cx()));
        assert_eq!(current_context(&hook), Some(cx()));
        with_trace_context(Some(other), || {
            assert_eq!(current_context(&hook), Some(other));
            with_trace_context(None, || assert_eq!(current_context(&hook), None));
            assert_eq!(current_context(&hook), Some(other));
        });
        let unwound = std::panic::catch_unwind(|| {
            with_trace_context(None, || panic!("inside a scope"));
        });
        assert!(unwound.is_err());
        assert_eq!(current_context(&hook), Some(cx()));
    }
}
