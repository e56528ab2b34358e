//! Closing a chain refuses later sends, wakes waiting receivers (with `Closed` once the chain
//! is empty) and blocked senders (refused), and either keeps or drops the queued content.

use agentry::mchain::{Close, Mchain, Overflow};
use agentry::{ChainSendError, RecvError};
use std::sync::mpsc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(10);

#[test]
fn retained_content_is_received_then_closed() {
    let chain = Mchain::unbounded();
    chain.send(1u32);
    chain.send(2u32);
    chain.close(Close::RetainContent);
    assert!(chain.is_closed());
    assert!(matches!(
        chain.try_send(3u32),
        Err(ChainSendError::Closed(3))
    ));
    for n in [1u32, 2] {
        let got = chain.recv(DEADLINE).expect("retained").downcast::<u32>();
        assert_eq!(got.ok(), Some(n));
    }
    assert_eq!(chain.recv(DEADLINE).err(), Some(RecvError::Closed));
    let s = chain.stats();
    assert_eq!((s.received, s.refused, s.dropped), (2, 1, 0));
}

#[test]
fn dropped_content_is_counted_and_receivers_see_closed_at_once() {
    let chain = Mchain::unbounded();
    chain.send(1u32);
    chain.send(2u32);
    chain.close(Close::DropContent);
    assert_eq!(chain.recv(DEADLINE).err(), Some(RecvError::Closed));
    assert_eq!(chain.stats().dropped, 2);
}

#[test]
fn a_later_drop_close_drops_what_a_retain_close_kept() {
    let chain = Mchain::unbounded();
    chain.send(1u32);
    chain.close(Close::RetainContent);
    chain.close(Close::DropContent);
    assert!(chain.is_empty());
    assert_eq!(chain.stats().dropped, 1);
}

#[test]
fn a_waiting_receiver_wakes_with_closed() {
    let chain = Mchain::unbounded();
    let (result_tx, result_rx) = mpsc::channel();
    {
        let chain = chain.clone();
        std::thread::spawn(move || {
            // Waits far longer than the test's deadline: only the close can end it in time.
            let _ = result_tx.send(chain.recv(Duration::from_secs(3600)).err());
        });
    }
    chain.close(Close::RetainContent);
    assert_eq!(
        result_rx
            .recv_timeout(DEADLINE)
            .expect("the close woke the receiver"),
        Some(RecvError::Closed)
    );
}

#[test]
fn a_blocked_sender_wakes_refused() {
    let chain = Mchain::builder()
        .bounded(
            1,
            Overflow::Block {
                timeout: Duration::from_secs(3600),
            },
        )
        .build()
        .expect("chain");
    chain.send(1u32);
    let (result_tx, result_rx) = mpsc::channel();
    {
        let chain = chain.clone();
        std::thread::spawn(move || {
            let _ = result_tx.send(chain.try_send(2u32));
        });
    }
    // Wait until the sender is blocked (it counted the overflow), then close.
    let deadline = std::time::Instant::now() + DEADLINE;
    while chain.stats().overflow == 0 {
        assert!(std::time::Instant::now() < deadline, "sender never blocked");
        std::thread::yield_now();
    }
    chain.close(Close::RetainContent);
    assert!(matches!(
        result_rx
            .recv_timeout(DEADLINE)
            .expect("the close woke the sender"),
        Err(ChainSendError::Closed(2))
    ));
}
