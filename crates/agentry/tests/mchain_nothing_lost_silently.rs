//! Every message sent to a chain is in exactly one place that can be observed: received (of
//! which unhandled are counted too), revoked, queued, dropped or refused.

use agentry::mchain::{Close, Handlers, Mchain, Overflow};
use agentry::testing::TestEnv;
use std::time::Duration;

#[test]
fn every_send_ends_in_exactly_one_counter() {
    let mut env = TestEnv::new().expect("test env");
    let chain = Mchain::builder()
        .bounded(3, Overflow::RemoveOldest)
        .build()
        .expect("chain");

    chain.send(0u32);
    // Two timer messages; the first is cancelled while queued.
    let cancelled = env
        .handle()
        .send_delayed(&chain, Duration::from_secs(1), "first timer");
    env.handle()
        .send_delayed(&chain, Duration::from_secs(1), "second timer")
        .detach();
    env.jump(Duration::from_secs(1));
    cancelled.cancel();
    chain.send(1u32); // full: evicts 0 (dropped)

    let mut on_u32 = Handlers::new();
    on_u32.on(|n: u32| n).expect("one handler");
    // Takes messages until a u32: the cancelled timer's is revoked, the other one has no
    // handler (unhandled).
    let got = chain.receive(Duration::ZERO, &mut on_u32).expect("a u32");
    assert_eq!(got, 1);

    chain.send(2u32);
    chain.send(3u32);
    chain.close(Close::RetainContent);
    chain.send(4u32); // refused: closed
    let sent = 7;

    let s = chain.stats();
    assert_eq!(
        (
            s.received,
            s.unhandled,
            s.revoked,
            s.queued,
            s.dropped,
            s.refused
        ),
        (2, 1, 1, 2, 1, 1),
        "{s:?}"
    );
    assert_eq!(
        s.received + s.revoked + s.queued as u64 + s.dropped + s.refused,
        sent
    );
    assert_eq!(
        s.pushed,
        s.received + s.revoked + s.queued as u64 + s.dropped
    );
    assert_eq!(s.overflow, 1);
}
