//! Closing a gateway (directly, or by stopping the environment, which deregisters the
//! gateway agent) accounts for everything: buffered envelopes are counted as dropped on
//! close and reported, pending requests fail with `Closed`, later sends are refused.

mod common;

use agentry_remote::{LossReason, RemoteEvent, RequestError, SendError, SubscribeError};
use common::*;
use std::time::Duration;

#[test]
fn close_counts_what_was_left_and_refuses_what_comes_after() {
    let Some(bin) = nats_or_skip("close_counts_what_was_left") else {
        return;
    };
    let mut server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let gw = agentry_remote::Gateway::builder(&registry())
        .namespace("close")
        .events(&events)
        .close_timeout(Duration::from_millis(100))
        .connect_nats(h, &server.url)
        .expect("gateway");
    server.kill();
    assert!(eventually(|| !gw.is_connected()));
    let m = gw.mbox("x").expect("name");
    for i in 0..25 {
        m.send(Ping(i)).expect("buffered");
    }
    let calc = gw.mbox("calc").expect("name");
    let waiting = std::thread::spawn(move || calc.request::<Add, Sum>(Add { a: 1, b: 2 }, WAIT));
    assert!(eventually(|| gw.stats().pending_requests == 1));

    gw.close();
    assert_eq!(
        waiting.join().expect("requester"),
        Err(RequestError::Closed)
    );
    let s = gw.stats();
    assert_eq!(
        (s.dropped_on_close, s.buffered, s.pending_requests),
        (26, 0, 0)
    );
    assert!(matches!(m.send(Ping(99)), Err(SendError::Closed(Ping(99)))));
    assert_eq!(
        gw.mbox("calc")
            .expect("name")
            .request::<Add, Sum>(Add { a: 1, b: 2 }, WAIT),
        Err(RequestError::Closed)
    );
    assert!(matches!(
        gw.subscribe::<Ping>("x", &register(h, Adder)),
        Err(SubscribeError::Closed)
    ));
    assert!(eventually(|| {
        log.lock()
            .expect("lock")
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    RemoteEvent::Lost {
                        reason: LossReason::Closed,
                        ..
                    }
                )
            })
            .count()
            == 26
    }));
    gw.close(); // idempotent
    h.stop();
    env.run();
}

#[test]
fn stopping_the_environment_closes_the_gateway() {
    let Some(bin) = nats_or_skip("stopping_the_environment_closes_the_gateway") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let env = env();
    let gw = nats_gateway(env.handle(), &server.url, "close-env");
    assert!(gw.coop().is_some());
    let (c, seen) = Collector::<Ping>::new(None);
    gw.subscribe::<Ping>("x", &register(env.handle(), c))
        .expect("subscribe");
    let m = gw.mbox("x").expect("name");
    m.send(Ping(1)).expect("sent");
    assert!(eventually(|| len(&seen) == 1));
    env.handle().stop();
    env.run();
    assert!(!gw.is_connected());
    assert!(matches!(m.send(Ping(2)), Err(SendError::Closed(_))));
    assert_eq!(gw.stats().lost(), 0);
}
