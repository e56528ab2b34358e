//! With a trace-context hook on both environments, a message or request sent from inside a
//! span crosses two gateways — over NATS and over the direct link — and its handler on the
//! other side is asked for a span whose parent is the sender's context; the envelope on the
//! wire has flag bit 4 and the context's 25 bytes. Without a hook the bit is clear. (The hook
//! here is a stand-in backend: a thread's current span is a thread-local context; the
//! OpenTelemetry one is `agentry-otel`'s, tested there.)

mod common;

use agentry::trace::{ContextPropagation, HandlerInfo, TraceContext, with_trace_context};
use agentry::{Env, EnvHandle};
use agentry_remote::{Gateway, RemoteMbox};
use common::*;
use futures_util::StreamExt as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records the parent of every handler span it is asked for.
#[derive(Clone, Default)]
struct Recording {
    asked: Arc<Mutex<Vec<(TraceContext, &'static str)>>>,
}

impl ContextPropagation for Recording {
    fn current(&self) -> Option<TraceContext> {
        // The stand-in backend has no spans: sends carry a context only inside a
        // `with_trace_context` scope, which `current_context` consults before this.
        None
    }
    fn handler_span(&self, parent: &TraceContext, handler: &HandlerInfo) -> tracing::Span {
        self.asked
            .lock()
            .expect("lock")
            .push((*parent, handler.message));
        tracing::Span::none()
    }
}

impl Recording {
    fn parents_of(&self, message: &str) -> Vec<TraceContext> {
        self.asked
            .lock()
            .expect("lock")
            .iter()
            .filter(|(_, m)| m.contains(message))
            .map(|(c, _)| *c)
            .collect()
    }
}

fn traced_env(hook: &Recording) -> Env {
    Env::builder()
        .autoshutdown(false)
        .trace_context(hook.clone())
        .build()
        .expect("env")
}

fn span(n: u8) -> TraceContext {
    TraceContext::new([n; 16], [n.wrapping_add(1); 8], 1).expect("non-zero ids")
}

/// Sends a Ping and a request from inside two spans of `from` and checks what `to`'s hook
/// was asked.
fn exchange(hook_b: &Recording, from: &Gateway, to_h: &EnvHandle, to: &Gateway) {
    let (c, seen) = Collector::<Ping>::new(None);
    to.subscribe::<Ping>("in", &register(to_h, c))
        .expect("subscribe");
    to.serve::<Add, Sum>("calc", &register(to_h, Adder))
        .expect("serve");
    let input: RemoteMbox = from.mbox("in").expect("name");
    let calc = from.mbox("calc").expect("name");
    // Subscriptions travel to the server (NATS) or the peer (link) asynchronously: send
    // until one arrives.
    assert!(eventually(|| {
        with_trace_context(Some(span(1)), || input.send(Ping(1))).expect("buffered");
        std::thread::sleep(Duration::from_millis(20));
        len(&seen) > 0
    }));
    let sum = with_trace_context(Some(span(3)), || {
        calc.request::<Add, Sum>(Add { a: 2, b: 3 }, WAIT)
    });
    assert_eq!(sum, Ok(Sum(5)));
    // A send outside any span carries nothing.
    let before = len(&seen);
    input.send(Ping(2)).expect("buffered");
    assert!(eventually(|| seen.lock().expect("lock").contains(&Ping(2))));
    assert!(len(&seen) > before);

    let pings = hook_b.parents_of("Ping");
    assert!(!pings.is_empty());
    assert!(pings.iter().all(|c| *c == span(1)), "{pings:?}");
    assert_eq!(hook_b.parents_of("Add"), vec![span(3)]);
}

#[test]
fn over_nats_the_handler_span_is_a_child_of_the_senders() {
    let Some(bin) = nats_or_skip("over_nats_the_handler_span_is_a_child_of_the_senders") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let (hook_a, hook_b) = (Recording::default(), Recording::default());
    let (a, b) = (traced_env(&hook_a), traced_env(&hook_b));
    let gw_a = nats_gateway(a.handle(), &server.url, "traced");
    let gw_b = nats_gateway(b.handle(), &server.url, "traced");
    exchange(&hook_b, &gw_a, b.handle(), &gw_b);
    // The sending side's handlers saw no traced message.
    assert!(hook_a.asked.lock().expect("lock").is_empty());
}

#[test]
fn over_the_direct_link_the_handler_span_is_a_child_of_the_senders() {
    let (hook_a, hook_b) = (Recording::default(), Recording::default());
    let (a, b) = (traced_env(&hook_a), traced_env(&hook_b));
    let mut builder = Gateway::builder(&registry());
    builder.namespace("traced");
    let gw_b = builder
        .listen_link(b.handle(), "127.0.0.1:0")
        .expect("listening");
    let gw_a = builder
        .connect_link(a.handle(), gw_b.local_addr().expect("bound"))
        .expect("connected");
    assert!(gw_b.wait_connected(WAIT));
    exchange(&hook_b, &gw_a, b.handle(), &gw_b);
}

/// The payload of the first message `send` publishes on `subject`, as a raw NATS subscriber
/// receives it. (A raw subscriber confirms no receipt: the gateway resends until it gives
/// up, so each case has a subject of its own.)
fn published_envelope(url: &str, subject: &str, send: impl FnOnce()) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = async_nats::connect(url).await.expect("raw client");
        let mut sub = client
            .subscribe(subject.to_owned())
            .await
            .expect("raw subscription");
        client.flush().await.expect("flush");
        send();
        let msg = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("a message within the deadline")
            .expect("subscription open");
        msg.payload.to_vec()
    })
}

#[test]
fn the_wire_has_the_trace_bit_only_with_a_hook() {
    let Some(bin) = nats_or_skip("the_wire_has_the_trace_bit_only_with_a_hook") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let plain = env();
    let gw = nats_gateway(plain.handle(), &server.url, "plain");
    let input = gw.mbox("in").expect("name");
    let bytes = published_envelope(&server.url, input.subject(), || {
        with_trace_context(Some(span(5)), || input.send(Ping(7))).expect("buffered")
    });
    assert_eq!(bytes[0], agentry_remote::envelope::WIRE_VERSION);
    assert_eq!(bytes[1] & 16, 0, "no hook: no trace context on the wire");

    let hook = Recording::default();
    let traced = traced_env(&hook);
    let gw = nats_gateway(traced.handle(), &server.url, "traced");
    let input = gw.mbox("in").expect("name");
    let bytes = published_envelope(&server.url, input.subject(), || {
        with_trace_context(Some(span(5)), || input.send(Ping(7))).expect("buffered")
    });
    assert_eq!(bytes[1] & 16, 16, "a hook and a span: the trace bit");
    let (envelope, _) = agentry_remote::envelope::Envelope::decode(&bytes[1..]).expect("valid");
    assert_eq!(envelope.trace, Some(span(5)));
}
