//! OpenTelemetry for Agentry: with [`OtelPropagation`] installed on an environment
//! ([`EnvBuilder::trace_context`](agentry::EnvBuilder::trace_context)), every message sent
//! from inside a `tracing` span carries the span's W3C trace context, and the handler that
//! receives it runs inside a span (`handle`, target `agentry::handle`) whose parent is that
//! span — across agents, timers, and, through `agentry-remote`'s envelopes, processes. One
//! request's spans join one trace in whatever backend the user's `tracing-opentelemetry`
//! layer exports to (OTLP, stdout, an in-memory exporter in tests).
//!
//! ```
//! use agentry::Env;
//! use agentry_otel::OtelPropagation;
//! use opentelemetry::trace::TracerProvider as _;
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! // The user's pipeline: any OpenTelemetry tracer behind the tracing-opentelemetry layer.
//! let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
//! let subscriber = tracing_subscriber::registry()
//!     .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("app")));
//! let _default = tracing::subscriber::set_default(subscriber);
//! // The one line Agentry needs.
//! let env = Env::builder().trace_context(OtelPropagation::new()).build().expect("env");
//! env.handle().stop();
//! env.run();
//! ```
//!
//! # Ground rules
//!
//! - The context is the one of `tracing::Span::current()` as `tracing-opentelemetry` sees it
//!   ([`OpenTelemetrySpanExt::context`](tracing_opentelemetry::OpenTelemetrySpanExt::context)); a thread with no current span, or whose span the
//!   layer does not record, sends nothing (the receiving handler then runs in no span of
//!   ours).
//! - The handler's span is made at level INFO: a subscriber filtering it out gets no span,
//!   and sends from that handler carry no context.
//! - The parent is attached as a *remote* span context (`is_remote`): for a sampler it is a
//!   parent from elsewhere, which it is — another agent, often another thread or process.
//!   The trace state (`tracestate`) does not travel.

use agentry::trace::{ContextPropagation, HandlerInfo, TraceContext};
use opentelemetry::Context;
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The [`ContextPropagation`] hook over `tracing-opentelemetry` (see the crate docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct OtelPropagation {
    _private: (),
}

impl OtelPropagation {
    /// The hook.
    pub fn new() -> OtelPropagation {
        OtelPropagation::default()
    }
}

impl ContextPropagation for OtelPropagation {
    fn current(&self) -> Option<TraceContext> {
        let cx = tracing::Span::current().context();
        from_otel(cx.span().span_context())
    }

    fn handler_span(&self, parent: &TraceContext, handler: &HandlerInfo) -> tracing::Span {
        let span = tracing::info_span!(
            target: "agentry::handle",
            "handle",
            agent = %handler.agent,
            message = handler.message,
            timer = handler.timer,
        );
        // Fails only if the span is disabled or no OpenTelemetry layer is installed: then
        // there is no trace to join.
        let _ = span.set_parent(Context::new().with_remote_span_context(to_otel(parent)));
        span
    }
}

/// An OpenTelemetry span context as Agentry's (none if it is invalid).
pub fn from_otel(sc: &SpanContext) -> Option<TraceContext> {
    if !sc.is_valid() {
        return None;
    }
    TraceContext::new(
        sc.trace_id().to_bytes(),
        sc.span_id().to_bytes(),
        sc.trace_flags().to_u8(),
    )
}

/// Agentry's trace context as a remote OpenTelemetry span context.
pub fn to_otel(cx: &TraceContext) -> SpanContext {
    SpanContext::new(
        TraceId::from_bytes(cx.trace_id()),
        SpanId::from_bytes(cx.span_id()),
        TraceFlags::new(cx.flags()),
        true,
        TraceState::default(),
    )
}
