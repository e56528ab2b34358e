//! Two environments — two processes' worth, each with its own gateway — joined by
//! agentry-remote's direct link on 127.0.0.1, with `OtelPropagation` on both: a request span
//! on one side sends a `Ping` to a remote mbox, the other side's handler answers with a
//! `Pong` over the link, and all three spans join one trace.
//!
//! Spans go to stdout (OpenTelemetry's stdout exporter) by default; with
//! `AGENTRY_OTLP_ENDPOINT` set — a loopback URL such as `http://127.0.0.1:4318/v1/traces` —
//! they go to an OTLP collector over HTTP/protobuf instead (nothing listening there is no
//! failure: the export is reported and the example still ends normally).
//!
//! ```text
//! cargo run -p agentry-otel --example traced_remote
//! AGENTRY_OTLP_ENDPOINT=http://127.0.0.1:4318/v1/traces cargo run -p agentry-otel --example traced_remote
//! ```

use agentry::{Agent, Ctx, Define, DefineError, Env};
use agentry_otel::OtelPropagation;
use agentry_remote::{Gateway, Registry, RemoteMbox};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::{Deserialize, Serialize};
use std::sync::mpsc::{self, Sender};
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;

#[derive(Serialize, Deserialize, Clone, Debug)]
struct Ping(u32);
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Pong(u32);

/// Answers every Ping with a Pong over the remote mbox `back`.
struct Answer {
    back: RemoteMbox,
}
impl Agent for Answer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Answer, _: &mut Ctx<Answer>, Ping(n): Ping| {
            a.back.send(Pong(n + 1)).expect("buffered");
        })?;
        Ok(())
    }
}

/// Reports every Pong.
struct Hear {
    out: Sender<u32>,
}
impl Agent for Hear {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|h: &mut Hear, _: &mut Ctx<Hear>, Pong(n): Pong| {
            let _ = h.out.send(n);
        })?;
        Ok(())
    }
}

/// The tracer provider: stdout, or OTLP/HTTP to a loopback endpoint.
fn provider() -> Result<SdkTracerProvider, String> {
    let builder = SdkTracerProvider::builder();
    let Ok(endpoint) = std::env::var("AGENTRY_OTLP_ENDPOINT") else {
        return Ok(builder
            .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
            .build());
    };
    let loopback = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"];
    if !loopback.iter().any(|p| endpoint.starts_with(p)) {
        return Err(format!(
            "AGENTRY_OTLP_ENDPOINT must be a loopback http URL (got {endpoint})"
        ));
    }
    use opentelemetry_otlp::WithExportConfig as _;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| format!("OTLP exporter: {e}"))?;
    Ok(builder.with_batch_exporter(exporter).build())
}

fn registry() -> Registry {
    let r = Registry::new();
    r.register::<Ping>("example.Ping", 1).expect("register");
    r.register::<Pong>("example.Pong", 1).expect("register");
    r
}

fn main() -> Result<(), String> {
    let provider = provider()?;
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("traced_remote")));
    tracing::subscriber::set_global_default(subscriber).map_err(|e| e.to_string())?;

    // The "server" side and the "client" side, each an environment with the hook.
    let env = || {
        Env::builder()
            .autoshutdown(false)
            .trace_context(OtelPropagation::new())
            .build()
            .map_err(|e| e.to_string())
    };
    let (server, client) = (env()?, env()?);
    let mut gateways = Gateway::builder(&registry());
    gateways.namespace("example");
    let gw_server = gateways
        .listen_link(server.handle(), "127.0.0.1:0")
        .map_err(|e| e.to_string())?;
    let addr = gw_server.local_addr().ok_or("the link is not bound")?;
    let gw_client = gateways
        .connect_link(client.handle(), addr)
        .map_err(|e| e.to_string())?;
    gw_server.wait_connected(Duration::from_secs(5));

    let answer = server
        .handle()
        .register_agent(Answer {
            back: gw_server.mbox("back").map_err(|e| e.to_string())?,
        })
        .map_err(|e| e.to_string())?;
    gw_server
        .subscribe::<Ping>("in", &answer)
        .map_err(|e| e.to_string())?;
    let (out, heard) = mpsc::channel();
    let hear = client
        .handle()
        .register_agent(Hear { out })
        .map_err(|e| e.to_string())?;
    gw_client
        .subscribe::<Pong>("back", &hear)
        .map_err(|e| e.to_string())?;

    // The link's subscriptions reach the peer asynchronously: ping (each from a span of its
    // own) until one is answered.
    let input = gw_client.mbox("in").map_err(|e| e.to_string())?;
    let mut traces = Vec::new();
    let answered = loop {
        let span = tracing::info_span!("request", attempt = traces.len());
        traces.push(span.context().span().span_context().trace_id());
        span.in_scope(|| input.send(Ping(traces.len() as u32 - 1)))
            .map_err(|e| e.to_string())?;
        drop(span);
        if let Ok(n) = heard.recv_timeout(Duration::from_millis(200)) {
            break n as usize - 1;
        }
        if traces.len() == 50 {
            return Err("no answer over the link".into());
        }
    };
    println!(
        "request {answered}: spans of trace {} — request (client) → handle Ping (server) → handle Pong (client)",
        traces[answered]
    );

    client.handle().stop();
    server.handle().stop();
    client.run();
    server.run();
    if let Err(e) = provider.shutdown() {
        eprintln!("exporting the last spans failed (is a collector listening?): {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `cargo test` runs the example: the round trip over the link completes and every span is
    /// exported (to stdout, captured by the test harness).
    #[test]
    fn the_round_trip_is_answered_and_exported() {
        assert_eq!(super::main(), Ok(()));
    }
}
