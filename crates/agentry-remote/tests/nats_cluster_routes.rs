//! A 2-server NATS cluster (routes): agents attached to different servers exchange
//! messages and requests.

mod common;

use agentry_remote::RequestError;
use common::*;

#[test]
fn agents_on_different_servers_of_a_cluster_talk() {
    let Some(bin) = nats_or_skip("agents_on_different_servers_of_a_cluster_talk") else {
        return;
    };
    let a = NatsServer::start_cluster_seed(&bin);
    let b = NatsServer::start_cluster_member(&bin, &a);
    let env = env();
    let h = env.handle();
    let gw_a = nats_gateway(h, &a.url, "cluster");
    let gw_b = nats_gateway(h, &b.url, "cluster");
    // Subscribe first: the route forwards interest in order, so once a sees `calc` it has
    // seen `events` too.
    let (c, seen) = Collector::<Ping>::new(None);
    gw_b.subscribe::<Ping>("events", &register(h, c))
        .expect("subscribe");
    gw_b.serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");

    // The route carries b's interest to a asynchronously: until it has, a request from a
    // finds no responders.
    let calc = gw_a.mbox("calc").expect("name");
    let mut outcome = Err(RequestError::NoResponders);
    assert!(eventually(|| {
        outcome = calc.request::<Add, Sum>(Add { a: 20, b: 22 }, WAIT);
        outcome != Err(RequestError::NoResponders)
    }));
    assert_eq!(outcome, Ok(Sum(42)));
    for i in 0..100 {
        assert_eq!(
            calc.request::<Add, Sum>(Add { a: i, b: 1 }, WAIT),
            Ok(Sum(i + 1))
        );
    }
    // Messages published on a reach the subscriber on b, in order.
    let events = gw_a.mbox("events").expect("name");
    for i in 0..1000 {
        events.send(Ping(i)).expect("buffered");
    }
    assert!(eventually(|| len(&seen) == 1000));
    assert_eq!(
        *seen.lock().expect("lock"),
        (0..1000).map(Ping).collect::<Vec<_>>()
    );
    assert_eq!(gw_a.stats().lost(), 0);
    h.stop();
    env.run();
}
