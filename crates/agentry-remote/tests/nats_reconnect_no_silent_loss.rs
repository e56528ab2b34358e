//! nats-server killed and restarted: what was buffered is delivered after the reconnection,
//! what did not fit is refused or dropped *and counted*, requests in flight fail with
//! `Disconnected` — nothing vanishes.

mod common;

use agentry::{Agent, Ctx, Define, DefineError};
use agentry_remote::{
    Gateway, LossReason, Overflow, RemoteEvent, RemoteReply, RequestError, SendError,
};
use common::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn gateway(
    env: &agentry::EnvHandle,
    url: &str,
    capacity: usize,
    policy: Overflow,
    events: &agentry::MultiMbox,
) -> Gateway {
    Gateway::builder(&registry())
        .namespace("reconnect")
        .outbound_capacity(capacity)
        .overflow(policy)
        .events(events)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(100))
        .connect_nats(env, url)
        .expect("gateway")
}

#[test]
fn buffered_sends_arrive_after_the_server_restarts_and_overflow_is_refused() {
    let Some(bin) = nats_or_skip("buffered_sends_arrive_after_the_server_restarts") else {
        return;
    };
    let mut server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let gw = gateway(h, &server.url, 100, Overflow::RejectNew, &events);
    let (c, seen) = Collector::<Ping>::new(None);
    gw.subscribe::<Ping>("r", &register(h, c))
        .expect("subscribe");
    gw.serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");
    gw.serve::<Add, Sum>("slow", &register(h, Holder(Vec::new())))
        .expect("serve");
    let r = gw.mbox("r").expect("name");
    for i in 0..10 {
        r.send(Ping(i)).expect("buffered");
    }
    assert!(eventually(|| len(&seen) == 10));

    // A request in flight when the server dies fails with Disconnected.
    let replies: Arc<Mutex<Vec<RemoteReply<Sum>>>> = Arc::default();
    let sink = register(h, Sink(Arc::clone(&replies)));
    gw.mbox("slow")
        .expect("name")
        .send_request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT, &sink)
        .expect("sent");
    assert!(eventually(|| gw.stats().requests_served == 1));

    server.kill();
    assert!(eventually(|| !gw.is_connected()));
    assert!(eventually(|| replies.lock().expect("lock").len() == 1));
    assert_eq!(
        replies.lock().expect("lock")[0].result,
        Err(RequestError::Disconnected)
    );

    // While disconnected: a request and 99 messages fill the buffer of 100; the rest are
    // given back.
    let calc = gw.mbox("calc").expect("name");
    let requester = std::thread::spawn(move || calc.request::<Add, Sum>(Add { a: 40, b: 2 }, WAIT));
    assert!(eventually(|| gw.stats().buffered == 1));
    let mut refused = Vec::new();
    for i in 10..160 {
        match r.send(Ping(i)) {
            Ok(()) => {}
            Err(SendError::BufferFull(p)) => refused.push(p.0),
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(refused, (109..160).collect::<Vec<_>>());
    assert_eq!(gw.stats().overflow_rejected, 51);

    server.restart();
    assert!(gw.wait_connected(WAIT));
    assert_eq!(requester.join().expect("requester"), Ok(Sum(42)));
    assert!(eventually(|| len(&seen) == 109), "got {}", len(&seen));
    assert_eq!(
        *seen.lock().expect("lock"),
        (0..109).map(Ping).collect::<Vec<_>>()
    );

    let s = gw.stats();
    assert_eq!(
        (s.lost(), s.disconnected_requests, s.disconnects),
        (0, 1, 1)
    );
    assert!(s.connects >= 2);
    let log = log.lock().expect("lock").clone();
    assert!(log.contains(&RemoteEvent::Disconnected) && log.contains(&RemoteEvent::Connected));
    h.stop();
    env.run();
}

#[test]
fn drop_oldest_evicts_and_reports_every_loss() {
    let Some(bin) = nats_or_skip("drop_oldest_evicts_and_reports_every_loss") else {
        return;
    };
    let mut server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let gw = gateway(h, &server.url, 10, Overflow::DropOldest, &events);
    let (c, seen) = Collector::<Ping>::new(None);
    gw.subscribe::<Ping>("r", &register(h, c))
        .expect("subscribe");
    server.kill();
    assert!(eventually(|| !gw.is_connected()));
    let r = gw.mbox("r").expect("name");
    for i in 0..30 {
        r.send(Ping(i)).expect("DropOldest never refuses");
    }
    assert_eq!(gw.stats().overflow_dropped, 20);
    server.restart();
    assert!(gw.wait_connected(WAIT));
    assert!(eventually(|| len(&seen) == 10));
    assert_eq!(
        *seen.lock().expect("lock"),
        (20..30).map(Ping).collect::<Vec<_>>()
    );
    assert!(eventually(|| {
        log.lock()
            .expect("lock")
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    RemoteEvent::Lost {
                        reason: LossReason::Overflow,
                        ..
                    }
                )
            })
            .count()
            == 20
    }));
    assert_eq!(gw.stats().lost(), 20);
    h.stop();
    env.run();
}

#[test]
fn child_process() {
    let Some(_role) = child_role() else { return };
    let url = std::env::var("NATS_URL").expect("NATS_URL");
    let env = env();
    let gw = nats_gateway(env.handle(), &url, "reconnect-x");
    let out = gw.mbox("to-parent").expect("name");
    struct Echo(agentry_remote::RemoteMbox);
    impl Agent for Echo {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            def.on(|e: &mut Echo, _: &mut Ctx<Echo>, Ping(n): Ping| {
                e.0.send(Pong(n)).expect("buffered")
            })?
            .on(|_: &mut Echo, ctx: &mut Ctx<Echo>, _: Stop| ctx.stop_env())?;
            Ok(())
        }
    }
    let echo = register(env.handle(), Echo(out));
    gw.subscribe::<Ping>("to-child", &echo).expect("subscribe");
    gw.subscribe::<Stop>("to-child", &echo).expect("subscribe");
    say("READY");
    // After the server restarts: reconnected, and (one PING/PONG) re-subscribed.
    assert!(eventually(|| gw.stats().connects >= 2));
    gw.flush(WAIT).expect("flushed");
    say("RESUBSCRIBED");
    env.run();
}

#[test]
fn two_processes_talk_again_after_the_server_restarts() {
    if child_role().is_some() {
        return;
    }
    let Some(bin) = nats_or_skip("two_processes_talk_again_after_the_server_restarts") else {
        return;
    };
    let mut server = NatsServer::start(&bin);
    let child = ChildProc::spawn("child_process", "echo", &[("NATS_URL", &server.url)]);
    assert_eq!(child.expect_line(), "READY");
    let env = env();
    let h = env.handle();
    let gw = nats_gateway(h, &server.url, "reconnect-x");
    let (c, pongs) = Collector::<Pong>::new(None);
    gw.subscribe::<Pong>("to-parent", &register(h, c))
        .expect("subscribe");
    let to_child = gw.mbox("to-child").expect("name");
    for i in 0..100 {
        to_child.send(Ping(i)).expect("buffered");
    }
    assert!(eventually(|| len(&pongs) == 100));

    server.kill();
    assert!(eventually(|| !gw.is_connected()));
    server.restart();
    assert!(gw.wait_connected(WAIT));
    assert_eq!(child.expect_line(), "RESUBSCRIBED");
    gw.flush(WAIT).expect("our subscription is back too");
    for i in 100..200 {
        to_child.send(Ping(i)).expect("buffered");
    }
    assert!(eventually(|| len(&pongs) == 200));
    assert_eq!(
        *pongs.lock().expect("lock"),
        (0..200).map(Pong).collect::<Vec<_>>()
    );
    to_child.send(Stop).expect("buffered");
    assert!(child.wait_success());
    h.stop();
    env.run();
}
