//! Two processes attached to one nats-server exchange messages (in order, none lost) and
//! requests (blocking and non-blocking) through global mboxes.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Mbox};
use agentry_remote::{RemoteMbox, RemoteReply};
use common::*;

/// Child: answers every Ping with a Pong to the parent, serves Add, stops on Stop.
struct Forwarder {
    out: RemoteMbox,
}

impl Agent for Forwarder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|f: &mut Forwarder, _: &mut Ctx<Forwarder>, Ping(n): Ping| {
            f.out.send(Pong(n)).expect("buffered");
        })?
        .on(|_: &mut Forwarder, ctx: &mut Ctx<Forwarder>, _: Stop| ctx.stop_env())?;
        Ok(())
    }
}

#[test]
fn child_process() {
    let Some(_role) = child_role() else { return };
    let url = std::env::var("NATS_URL").expect("NATS_URL");
    let env = env();
    let gw = nats_gateway(env.handle(), &url, "twoproc");
    let out = gw.mbox("to-parent").expect("name");
    let fwd = register(env.handle(), Forwarder { out });
    gw.subscribe::<Ping>("to-child", &fwd).expect("subscribe");
    gw.subscribe::<Stop>("to-child", &fwd).expect("subscribe");
    let adder = register(env.handle(), Adder);
    gw.serve::<Add, Sum>("calc", &adder).expect("serve");
    say("READY");
    env.run();
    let s = gw.stats();
    say(&format!(
        "DONE delivered={} rejected={} lost={}",
        s.delivered,
        s.rejected(),
        s.lost()
    ));
}

#[test]
fn two_processes_exchange_messages_and_requests() {
    if child_role().is_some() {
        return;
    }
    let Some(bin) = nats_or_skip("two_processes_exchange_messages_and_requests") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let child = ChildProc::spawn("child_process", "peer", &[("NATS_URL", &server.url)]);
    assert_eq!(child.expect_line(), "READY");

    let env = env();
    let gw = nats_gateway(env.handle(), &server.url, "twoproc");
    let (c, pongs) = Collector::<Pong>::new(None);
    let col = register(env.handle(), c);
    gw.subscribe::<Pong>("to-parent", &col).expect("subscribe");

    // Messages: every one arrives, in send order.
    let to_child = gw.mbox("to-child").expect("name");
    const N: u32 = 3000;
    for i in 0..N {
        to_child.send(Ping(i)).expect("buffered");
    }
    assert!(
        eventually(|| len(&pongs) == N as usize),
        "got {}",
        len(&pongs)
    );
    assert_eq!(
        *pongs.lock().expect("lock"),
        (0..N).map(Pong).collect::<Vec<_>>()
    );

    // Blocking requests.
    let calc = gw.mbox("calc").expect("name");
    for i in 0..200 {
        assert_eq!(
            calc.request::<Add, Sum>(Add { a: i, b: 1 }, WAIT),
            Ok(Sum(i + 1))
        );
    }

    // Non-blocking requests: exactly one RemoteReply per request, matched by id.
    let (c, replies) = Collector::<ReplyRecord>::new(None);
    let sink = register(env.handle(), ReplySink(c));
    let mut ids = Vec::new();
    for i in 0..500 {
        ids.push(
            calc.send_request::<Add, Sum>(Add { a: i, b: i }, WAIT, &sink)
                .expect("sent"),
        );
    }
    assert!(eventually(|| len(&replies) == 500));
    let mut got = replies.lock().expect("lock").clone();
    got.sort_by_key(|r| r.0);
    let mut want: Vec<ReplyRecord> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| ReplyRecord(id.get(), Ok(Sum(2 * i as i64))))
        .collect();
    want.sort_by_key(|r| r.0);
    assert_eq!(got, want);

    to_child.send(Stop).expect("buffered");
    let done = child.expect_line();
    assert_eq!(done, format!("DONE delivered={} rejected=0 lost=0", N + 1));
    assert!(child.wait_success());
    let s = gw.stats();
    assert_eq!((s.rejected(), s.lost(), s.timed_out), (0, 0, 0));
    assert_eq!(s.delivered, u64::from(N));
    assert_eq!(s.replies_received, 700);
    env.handle().stop();
    env.run();
}

#[derive(Clone, Debug, PartialEq)]
struct ReplyRecord(u64, Result<Sum, agentry_remote::RequestError>);

/// Turns `RemoteReply<Sum>` into records for a collector.
struct ReplySink(Collector<ReplyRecord>);

impl Agent for ReplySink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |s: &mut ReplySink, _: &mut Ctx<ReplySink>, r: RemoteReply<Sum>| {
                s.0.seen
                    .lock()
                    .expect("lock")
                    .push(ReplyRecord(r.id.get(), r.result));
            },
        )?;
        Ok(())
    }
}

#[allow(dead_code)]
fn _mbox(_: Mbox) {}
