//! A bounded chain meets overflow with the reaction it was built with — drop the newest,
//! remove the oldest, fail with the message given back, or block the sender until there is
//! room (then fail) — and counts every overflow.

use agentry::mchain::{Mchain, Overflow};
use agentry::{ChainSendError, MchainError};
use std::sync::mpsc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(10);

fn bounded(capacity: usize, overflow: Overflow) -> Mchain {
    Mchain::builder()
        .bounded(capacity, overflow)
        .build()
        .expect("valid capacity")
}

fn drain(chain: &Mchain) -> Vec<u32> {
    let mut got = Vec::new();
    while let Ok(e) = chain.try_recv() {
        got.push(e.downcast::<u32>().expect("only u32 sent"));
    }
    got
}

#[test]
fn drop_newest_keeps_what_was_queued() {
    let chain = bounded(2, Overflow::DropNewest);
    for n in 0..5u32 {
        assert!(
            chain.try_send(n).is_ok(),
            "dropping the newest is not an error"
        );
    }
    assert_eq!(drain(&chain), [0, 1]);
    let s = chain.stats();
    assert_eq!((s.pushed, s.dropped, s.overflow, s.refused), (2, 3, 3, 0));
}

#[test]
fn remove_oldest_keeps_the_latest() {
    let chain = bounded(2, Overflow::RemoveOldest);
    for n in 0..5u32 {
        chain.send(n);
    }
    assert_eq!(drain(&chain), [3, 4]);
    let s = chain.stats();
    assert_eq!((s.pushed, s.dropped, s.overflow, s.refused), (5, 3, 3, 0));
}

#[test]
fn fail_gives_the_message_back() {
    let chain = bounded(1, Overflow::Fail);
    chain.try_send(1u32).expect("room for one");
    match chain.try_send(2u32) {
        Err(ChainSendError::Full(n)) => assert_eq!(n, 2, "the refused message comes back"),
        other => panic!("expected Full, got {other:?}"),
    }
    chain.send(3u32); // fire-and-forget: refused, dropped, counted
    assert_eq!(drain(&chain), [1]);
    let s = chain.stats();
    assert_eq!((s.pushed, s.refused, s.overflow, s.dropped), (1, 2, 2, 0));
}

#[test]
fn block_waits_for_room() {
    let chain = bounded(
        1,
        Overflow::Block {
            timeout: Duration::from_secs(3600),
        },
    );
    chain.send(1u32);
    let (sent_tx, sent_rx) = mpsc::channel();
    {
        let chain = chain.clone();
        std::thread::spawn(move || {
            let _ = sent_tx.send(chain.try_send(2u32));
        });
    }
    // Once the sender is blocked (it counted the overflow), a receiver makes room.
    let deadline = std::time::Instant::now() + DEADLINE;
    while chain.stats().overflow == 0 {
        assert!(std::time::Instant::now() < deadline, "sender never blocked");
        std::thread::yield_now();
    }
    assert!(sent_rx.try_recv().is_err(), "still blocked");
    let first = chain.recv(DEADLINE).expect("queued").downcast::<u32>();
    assert_eq!(first.ok(), Some(1));
    let sent = sent_rx
        .recv_timeout(DEADLINE)
        .expect("the blocked sender got room");
    assert!(sent.is_ok());
    assert_eq!(drain(&chain), [2]);
    let s = chain.stats();
    assert_eq!((s.pushed, s.overflow, s.refused), (2, 1, 0));
}

#[test]
fn block_gives_up_after_its_timeout() {
    let chain = bounded(
        1,
        Overflow::Block {
            timeout: Duration::from_millis(1),
        },
    );
    chain.send(1u32);
    assert!(matches!(chain.try_send(2u32), Err(ChainSendError::Full(2))));
    let s = chain.stats();
    assert_eq!((s.pushed, s.overflow, s.refused), (1, 1, 1));
}

#[test]
fn a_zero_capacity_is_refused() {
    let built = Mchain::builder().bounded(0, Overflow::Fail).build();
    assert_eq!(built.err(), Some(MchainError::ZeroCapacity));
}
