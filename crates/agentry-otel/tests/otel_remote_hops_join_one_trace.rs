//! Two environments (two processes' worth: each its own gateway) joined by agentry-remote's
//! direct link, both with `OtelPropagation`: a message sent from a span crosses to the other
//! side, whose handler's span is its child, and the answer that handler sends back crosses
//! again, handled in a grandchild — one trace, parent links intact, read from OpenTelemetry's
//! in-memory exporter.

mod support;

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle};
use agentry_otel::OtelPropagation;
use agentry_remote::{Gateway, Registry, RemoteMbox};
use serde::{Deserialize, Serialize};
use std::sync::mpsc::{self, Sender};
use support::{DEADLINE, Root, attr, child_of, spans_of};

#[derive(Serialize, Deserialize, Clone, Debug)]
struct Ping(u32);
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Pong(u32);

fn registry() -> Registry {
    let r = Registry::new();
    r.register::<Ping>("otel.Ping", 1).expect("register");
    r.register::<Pong>("otel.Pong", 1).expect("register");
    r
}

/// Answers every Ping with a Pong over the remote mbox `back`.
struct Answer {
    back: RemoteMbox,
}
impl Agent for Answer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Answer, _: &mut Ctx<Answer>, Ping(n): Ping| {
            a.back.send(Pong(n)).expect("buffered");
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

fn env() -> (Env, EnvHandle) {
    support::exporter();
    let env = Env::builder()
        .autoshutdown(false)
        .trace_context(OtelPropagation::new())
        .build()
        .expect("env");
    let h = env.handle().clone();
    (env, h)
}

#[test]
fn a_round_trip_over_the_link_is_one_trace_of_parent_and_children() {
    let (_a, ha) = env();
    let (_b, hb) = env();
    let mut builder = Gateway::builder(&registry());
    builder.namespace("otel");
    let gw_b = builder.listen_link(&hb, "127.0.0.1:0").expect("listening");
    let gw_a = builder
        .connect_link(&ha, gw_b.local_addr().expect("bound"))
        .expect("connected");
    assert!(gw_b.wait_connected(DEADLINE));

    let answer = hb
        .register_agent(Answer {
            back: gw_b.mbox("back").expect("name"),
        })
        .expect("answer");
    gw_b.subscribe::<Ping>("in", &answer).expect("subscribe");
    let (out, heard) = mpsc::channel();
    let hear = ha.register_agent(Hear { out }).expect("hear");
    gw_a.subscribe::<Pong>("back", &hear).expect("subscribe");

    let input = gw_a.mbox("in").expect("name");
    // The link's subscriptions reach the peer asynchronously: ping, each from a root span of
    // its own, until one is answered; that ping's trace is checked.
    let mut roots = Vec::new();
    let n = loop {
        let root = Root::new("remote");
        root.run(|| input.send(Ping(roots.len() as u32)))
            .expect("buffered");
        roots.push(root);
        if let Ok(n) = heard.recv_timeout(std::time::Duration::from_millis(100)) {
            break n as usize;
        }
        assert!(roots.len() < 100, "no answer");
    };
    let root = &roots[n];
    let spans = spans_of(root.trace_id(), 3);
    let there = child_of(&spans, root.span_id());
    assert!(
        attr(there, "message").is_some_and(|m| m.ends_with("Ping")),
        "{there:?}"
    );
    let back = child_of(&spans, there.span_context.span_id());
    assert!(
        attr(back, "message").is_some_and(|m| m.ends_with("Pong")),
        "{back:?}"
    );
    assert_eq!(back.span_context.trace_id(), root.trace_id());
}
