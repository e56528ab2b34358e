//! With `OtelPropagation` installed, a TCP channel's read runs in a root span (`read`): the
//! owner's handler of the `Received` data is its child, and the reply the owner sends to the
//! channel is handled by the channel in a grandchild — one trace per request over a real
//! connection on 127.0.0.1.

mod support;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use agentry_net::{Accepted, ConnOwner, IoDispatcher, ListenerConfig, Received, SendBytes};
use agentry_otel::OtelPropagation;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use support::{DEADLINE, attr, exporter};

/// Echoes what it receives.
#[derive(Default)]
struct Echo {
    channel: Option<Mbox>,
}
impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|e: &mut Echo, _: &mut Ctx<Echo>, a: Accepted| {
            e.channel = Some(a.channel);
        })?
        .on(|e: &mut Echo, _: &mut Ctx<Echo>, r: Received| {
            if let Some(channel) = &e.channel {
                channel.send(SendBytes(r.data));
            }
        })?;
        Ok(())
    }
}

#[test]
fn a_read_is_the_root_of_the_owners_handling_and_of_the_reply() {
    exporter();
    let env = Env::builder()
        .autoshutdown(false)
        .trace_context(OtelPropagation::new())
        .build()
        .expect("env");
    let h = env.handle();
    let io = IoDispatcher::builder("io").build(h).expect("io");
    let mut coop = h.new_coop();
    let echo = coop.add_with(Echo::default(), &io.binder());
    h.register_coop(coop).expect("echo");
    let listener = io
        .listen(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            ListenerConfig::default(),
            ConnOwner::Mbox(echo),
        )
        .expect("listening");
    let mut client = TcpStream::connect(listener.local_addr()).expect("connected");
    client.set_read_timeout(Some(DEADLINE)).expect("timeout");
    client.write_all(b"hello").expect("written");
    let mut back = [0; 5];
    client.read_exact(&mut back).expect("echoed");
    assert_eq!(&back, b"hello");

    // The read span, the owner's span under it, the channel's span under that.
    let start = std::time::Instant::now();
    let (read, owner, reply) = loop {
        let spans = exporter().get_finished_spans().expect("exporter");
        let found = spans.iter().find_map(|read| {
            (read.name == "read").then_some(())?;
            let owner = spans.iter().find(|s| {
                s.parent_span_id == read.span_context.span_id()
                    && attr(s, "message").is_some_and(|m| m.ends_with("Received"))
            })?;
            let reply = spans
                .iter()
                .find(|s| s.parent_span_id == owner.span_context.span_id())?;
            Some((read.clone(), owner.clone(), reply.clone()))
        });
        if let Some(found) = found {
            break found;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "no read → owner → reply chain: {spans:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(owner.span_context.trace_id(), read.span_context.trace_id());
    assert_eq!(reply.span_context.trace_id(), read.span_context.trace_id());
    assert_eq!(reply.name, "handle");
    assert_ne!(attr(&reply, "agent"), attr(&owner, "agent"));
}
