//! The tests' OpenTelemetry pipeline: one global `tracing` subscriber per test binary whose
//! OpenTelemetry layer exports every finished span to an in-memory exporter; each test opens a
//! root span of its own and reads back the spans of its trace only.
#![allow(dead_code)] // each test binary uses part of it

use opentelemetry::Value;
use opentelemetry::trace::{SpanId, TraceContextExt as _, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;

pub const DEADLINE: Duration = Duration::from_secs(10);

/// The exporter, installed once per test binary.
pub fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry().with(
            tracing_opentelemetry::layer().with_tracer(provider.tracer("agentry-otel-tests")),
        );
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        exporter
    })
}

/// A test's root span.
pub struct Root {
    span: tracing::Span,
    trace_id: TraceId,
    span_id: SpanId,
}

impl Root {
    pub fn new(name: &'static str) -> Root {
        exporter();
        let span = tracing::info_span!("root", test = name);
        let cx = span.context();
        let sc = cx.span().span_context().clone();
        assert!(sc.is_valid(), "the root span is recorded");
        Root {
            span,
            trace_id: sc.trace_id(),
            span_id: sc.span_id(),
        }
    }

    /// Runs `f` inside the root span.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        self.span.in_scope(f)
    }

    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    pub fn span_id(&self) -> SpanId {
        self.span_id
    }
}

/// The finished spans of `trace` now.
pub fn all_of(trace: TraceId) -> Vec<SpanData> {
    exporter()
        .get_finished_spans()
        .expect("exporter")
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .collect()
}

/// Waits until `n` spans of `trace` have finished (the root span finishes when its `Root` is
/// dropped: count it only then).
pub fn spans_of(trace: TraceId, n: usize) -> Vec<SpanData> {
    let start = Instant::now();
    loop {
        let spans = all_of(trace);
        // The root is still open while its `Root` lives: count the others.
        if spans.len() + 1 >= n || start.elapsed() > DEADLINE {
            assert!(
                spans.len() + 1 >= n,
                "{} of {n} spans of {trace} finished",
                spans.len() + 1
            );
            return spans;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The one span among `spans` whose parent is `parent`.
pub fn child_of(spans: &[SpanData], parent: SpanId) -> &SpanData {
    let children: Vec<_> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent)
        .collect();
    assert_eq!(
        children.len(),
        1,
        "one child of {parent}: {:?}",
        spans
            .iter()
            .map(|s| (&s.name, s.span_context.span_id(), s.parent_span_id))
            .collect::<Vec<_>>()
    );
    children[0]
}

/// A span's attribute as a string.
pub fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| match &kv.value {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        })
}
