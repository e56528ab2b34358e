//! `Mchain::recv_as::<T>` (and its future, `recv_future_as`) receives the next message as a
//! `T` without a downcast, signals included; a message of another type is taken and given
//! back in `RecvAsError::OtherType` — never dropped, never left to block the chain — and
//! timeouts and closing are reported as by `recv`.

mod common;

use agentry::mchain::{Close, Handlers, Mchain};
use agentry::{RecvAsError, RecvError};
use common::DEADLINE;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

#[derive(Debug, PartialEq)]
struct Reading(u32);
#[derive(Debug, PartialEq)]
struct Stop; // a signal
#[derive(Debug, PartialEq)]
struct Noise(&'static str);

#[test]
fn messages_of_the_type_come_in_send_order() {
    let chain = Mchain::unbounded();
    for n in 1..=3 {
        chain.send(Reading(n));
    }
    let got: Vec<Reading> = (0..3)
        .map(|_| chain.recv_as::<Reading>(Duration::ZERO).expect("queued"))
        .collect();
    assert_eq!(got, [Reading(1), Reading(2), Reading(3)]);
    assert_eq!(chain.stats().received, 3);
}

#[test]
fn a_signal_is_received_like_any_type() {
    let chain = Mchain::unbounded();
    chain.send(Stop);
    assert_eq!(chain.recv_as::<Stop>(Duration::ZERO).ok(), Some(Stop));
}

#[test]
fn a_message_of_another_type_is_given_back_and_the_next_stays_queued() {
    let chain = Mchain::unbounded();
    chain.send(Noise("hum"));
    chain.send(Reading(7));
    match chain.recv_as::<Reading>(Duration::ZERO) {
        Err(RecvAsError::OtherType { expected, got }) => {
            assert!(expected.ends_with("Reading"), "{expected}");
            assert_eq!(got.downcast::<Noise>().ok(), Some(Noise("hum")));
        }
        other => panic!("a Noise came first: {other:?}"),
    }
    assert_eq!(
        chain.recv_as::<Reading>(Duration::ZERO).ok(),
        Some(Reading(7))
    );
    let stats = chain.stats();
    assert_eq!((stats.received, stats.unhandled, stats.queued), (2, 0, 0));
}

#[test]
fn a_given_back_message_can_go_to_handlers() {
    let chain = Mchain::unbounded();
    chain.send(Noise("buzz"));
    let Err(RecvAsError::OtherType { got, .. }) = chain.recv_as::<Reading>(Duration::ZERO) else {
        panic!("a Noise came");
    };
    let mut handlers = Handlers::new();
    handlers.on(|Noise(what): Noise| what).expect("one closure");
    assert_eq!(handlers.handle(got).ok(), Some("buzz"));
}

#[test]
fn it_waits_up_to_its_timeout_and_reports_a_closed_chain() {
    let chain = Mchain::unbounded();
    assert!(matches!(
        chain.recv_as::<Reading>(Duration::from_millis(1)),
        Err(RecvAsError::Timeout)
    ));
    let sender = {
        let chain = chain.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            chain.send(Reading(9));
            chain.send(Reading(10));
            chain.close(Close::RetainContent);
        })
    };
    assert_eq!(chain.recv_as::<Reading>(DEADLINE).ok(), Some(Reading(9)));
    sender.join().expect("sender");
    assert_eq!(chain.recv_as::<Reading>(DEADLINE).ok(), Some(Reading(10)));
    assert!(matches!(
        chain.recv_as::<Reading>(DEADLINE),
        Err(RecvAsError::Closed)
    ));
    // The same outcome as the untyped receive.
    assert_eq!(chain.recv(Duration::ZERO).err(), Some(RecvError::Closed));
}

#[test]
fn the_future_has_the_same_outcomes() {
    let chain = Mchain::unbounded();
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut next = pin!(chain.recv_future_as::<Reading>());
        assert!(next.as_mut().poll(&mut cx).is_pending());
        chain.send(Reading(1));
        assert!(matches!(
            next.as_mut().poll(&mut cx),
            Poll::Ready(Ok(Reading(1)))
        ));
    }
    chain.send(Noise("hiss"));
    let mut next = pin!(chain.recv_future_as::<Reading>());
    match next.as_mut().poll(&mut cx) {
        Poll::Ready(Err(RecvAsError::OtherType { got, .. })) => assert!(got.is::<Noise>()),
        other => panic!("a Noise came: {other:?}"),
    }
    chain.close(Close::RetainContent);
    let mut next = pin!(chain.recv_future_as::<Stop>());
    assert!(matches!(
        next.as_mut().poll(&mut cx),
        Poll::Ready(Err(RecvAsError::Closed))
    ));
}
