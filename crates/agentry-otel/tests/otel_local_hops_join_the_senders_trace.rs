//! With `OtelPropagation` installed, the handler of a message runs in a span that is the child
//! of the span that sent it — same trace id, parent = the sender's span id — through a chain of
//! agents on different dispatchers, a request, a delayed and a periodic timer; without the hook
//! (or outside any span) nothing is attached. Spans are read back from OpenTelemetry's
//! in-memory exporter.

mod support;

use agentry::disp::{ActiveObjDispatcher, ThreadPoolDispatcher};
use agentry::trace::ContextPropagation as _;
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox};
use agentry_otel::OtelPropagation;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;
use support::{DEADLINE, Root, attr, child_of, spans_of};

/// Passes a token on to `next`, or reports the context its handler runs in.
struct Hop {
    next: Option<Mbox>,
    seen: Sender<Option<agentry::trace::TraceContext>>,
}
#[derive(Clone)]
struct Token;
impl Agent for Hop {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|h: &mut Hop, _: &mut Ctx<Hop>, Token| match &h.next {
            Some(next) => next.send(Token),
            None => {
                let _ = h.seen.send(OtelPropagation::new().current());
            }
        })?;
        def.on_request(|_: &mut Hop, _: &mut Ctx<Hop>, n: u32| n * 2)?;
        Ok(())
    }
}

fn env(hook: bool) -> (Env, EnvHandle) {
    support::exporter();
    let mut b = Env::builder();
    b.autoshutdown(false);
    if hook {
        b.trace_context(OtelPropagation::new());
    }
    let env = b.build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

fn last(h: &EnvHandle) -> (Mbox, Receiver<Option<agentry::trace::TraceContext>>) {
    let (seen, rx) = mpsc::channel();
    (h.register_agent(Hop { next: None, seen }).expect("hop"), rx)
}

#[test]
fn a_handler_span_is_the_child_of_the_sending_span() {
    let (_env, h) = env(true);
    let (hop, seen) = last(&h);
    let root = Root::new("send");
    root.run(|| hop.send(Token));
    let inside = seen.recv_timeout(DEADLINE).expect("handled");
    let spans = spans_of(root.trace_id(), 2);
    let handle = child_of(&spans, root.span_id());
    assert_eq!(handle.name, "handle");
    assert_eq!(
        attr(handle, "message"),
        Some(std::any::type_name::<Token>().into())
    );
    assert_eq!(attr(handle, "timer"), Some("false".into()));
    // What the handler itself would send carries its own span.
    let inside = inside.expect("the handler runs in a span");
    assert_eq!(inside.trace_id(), root.trace_id().to_bytes());
    assert_eq!(inside.span_id(), handle.span_context.span_id().to_bytes());
}

#[test]
fn three_hops_on_three_dispatchers_make_one_chain() {
    let (_env, h) = env(true);
    let (c, seen) = last(&h);
    let pool = ThreadPoolDispatcher::new(&h, "pool").expect("pool");
    let own = ActiveObjDispatcher::new(&h, "own").expect("active_obj");
    let mut coop = h.new_coop();
    let (unused, _) = mpsc::channel();
    let b = coop.add_with(
        Hop {
            next: Some(c),
            seen: unused.clone(),
        },
        &pool.binder(),
    );
    let a = coop.add_with(
        Hop {
            next: Some(b),
            seen: unused,
        },
        &own.binder(),
    );
    h.register_coop(coop).expect("coop");
    let root = Root::new("chain");
    root.run(|| a.send(Token));
    seen.recv_timeout(DEADLINE)
        .expect("the token reached the end");
    let spans = spans_of(root.trace_id(), 4);
    let first = child_of(&spans, root.span_id());
    let second = child_of(&spans, first.span_context.span_id());
    let third = child_of(&spans, second.span_context.span_id());
    let agents: std::collections::HashSet<_> = [first, second, third]
        .iter()
        .map(|s| attr(s, "agent").expect("agent attribute"))
        .collect();
    assert_eq!(agents.len(), 3, "three different agents: {agents:?}");
}

#[test]
fn a_request_is_handled_in_a_child_of_the_requesting_span() {
    let (_env, h) = env(true);
    let (hop, _seen) = last(&h);
    let root = Root::new("ask");
    let reply = root.run(|| hop.request::<u32, u32>(21, DEADLINE));
    assert_eq!(reply, Ok(42));
    let spans = spans_of(root.trace_id(), 2);
    let handle = child_of(&spans, root.span_id());
    assert!(
        attr(handle, "message").is_some_and(|m| m.contains("Request")),
        "{handle:?}"
    );
}

#[test]
fn timer_messages_carry_the_context_of_their_scheduling() {
    let (_env, h) = env(true);
    let (hop, seen) = last(&h);
    let root = Root::new("schedule");
    let (delayed, periodic) = root.run(|| {
        (
            h.send_delayed(&hop, Duration::from_millis(5), Token),
            h.send_periodic(
                &hop,
                Duration::from_millis(5),
                Duration::from_millis(5),
                Token,
            ),
        )
    });
    // Outside the span now: the timer thread still sends in the scheduling span's name.
    for _ in 0..4 {
        let inside = seen.recv_timeout(DEADLINE).expect("a timer message");
        assert_eq!(
            inside.map(|c| c.trace_id()),
            Some(root.trace_id().to_bytes())
        );
    }
    periodic.cancel();
    drop(delayed);
    let spans = spans_of(root.trace_id(), 5);
    let timed: Vec<_> = spans
        .iter()
        .filter(|s| s.parent_span_id == root.span_id())
        .collect();
    assert!(timed.len() >= 4, "{} children", timed.len());
    assert!(
        timed
            .iter()
            .all(|s| attr(s, "timer") == Some("true".into()))
    );
}

#[test]
fn without_the_hook_or_outside_a_span_nothing_is_attached() {
    let (_env, h) = env(false);
    let (hop, seen) = last(&h);
    let root = Root::new("unhooked");
    root.run(|| hop.send(Token));
    assert_eq!(seen.recv_timeout(DEADLINE).expect("handled"), None);
    // The handler ran; no span joined the root's trace (the root itself is still open).
    std::thread::sleep(Duration::from_millis(50));
    assert!(support::all_of(root.trace_id()).is_empty());

    let (_env, h) = env(true);
    let (hop, seen) = last(&h);
    hop.send(Token);
    assert_eq!(seen.recv_timeout(DEADLINE).expect("handled"), None);
}
