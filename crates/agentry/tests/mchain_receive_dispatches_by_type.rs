//! A chain carries messages of any types in send order; a `Handlers` receive runs the closure
//! for each message's type, counts and drops messages without one (or gives them to the
//! catch-all), and its timeout bounds the whole call.

use agentry::mchain::{Envelope, Handlers, Mchain};
use agentry::{MchainError, RecvError, TryRecvError};
use std::time::Duration;

#[derive(Debug)]
struct Add(i64);
#[derive(Debug)]
struct Sub(i64);
struct Noise;

#[derive(Debug, PartialEq)]
enum Op {
    Add(i64),
    Sub(i64),
    Other(&'static str),
}

#[test]
fn each_message_goes_to_the_closure_of_its_type_in_send_order() {
    let chain = Mchain::unbounded();
    chain.send(Add(1));
    chain.send(Sub(2));
    chain.send(Add(3));
    let mut handlers = Handlers::new();
    handlers
        .on(|Add(n): Add| Op::Add(n))
        .expect("first")
        .on(|Sub(n): Sub| Op::Sub(n))
        .expect("second");
    let got: Vec<Op> = (0..3)
        .map(|_| {
            chain
                .receive(Duration::ZERO, &mut handlers)
                .expect("queued")
        })
        .collect();
    assert_eq!(got, [Op::Add(1), Op::Sub(2), Op::Add(3)]);
    assert_eq!(chain.stats().received, 3);
}

#[test]
fn messages_without_a_closure_are_counted_not_lost_silently() {
    let chain = Mchain::unbounded();
    chain.send(Noise);
    chain.send(Noise);
    chain.send(Add(5));
    let mut handlers = Handlers::new();
    handlers.on(|Add(n): Add| n).expect("one closure");
    assert_eq!(chain.receive(Duration::ZERO, &mut handlers), Ok(5));
    let s = chain.stats();
    assert_eq!((s.received, s.unhandled), (3, 2));
    // Nothing else is queued: the timeout bounds the call.
    assert_eq!(
        chain.receive(Duration::from_millis(1), &mut handlers),
        Err(RecvError::Timeout)
    );
}

#[test]
fn the_catch_all_gets_the_others() {
    let chain = Mchain::unbounded();
    chain.send(Noise);
    chain.send(Sub(1));
    let mut handlers = Handlers::new();
    handlers
        .on(|Sub(n): Sub| Op::Sub(n))
        .expect("one closure")
        .otherwise(|e: Envelope| Op::Other(e.type_name()));
    let first = chain
        .receive(Duration::ZERO, &mut handlers)
        .expect("queued");
    assert!(matches!(first, Op::Other(name) if name.ends_with("Noise")));
    assert_eq!(chain.receive(Duration::ZERO, &mut handlers), Ok(Op::Sub(1)));
    assert_eq!(chain.stats().unhandled, 0);
}

#[test]
fn a_second_closure_for_a_type_is_a_typed_error() {
    let mut handlers = Handlers::new();
    handlers.on(|_: Add| ()).expect("first");
    assert!(matches!(
        handlers.on(|_: Add| ()).err(),
        Some(MchainError::DuplicateHandler(name)) if name.ends_with("Add")
    ));
}

#[test]
fn an_envelope_downcasts_or_comes_back() {
    let chain = Mchain::unbounded();
    chain.send(Add(7));
    let envelope = chain.recv(Duration::ZERO).expect("queued");
    let envelope = envelope.downcast::<Sub>().expect_err("not a Sub");
    let mut handlers = Handlers::new();
    handlers.on(|Add(n): Add| n).expect("one closure");
    assert_eq!(handlers.handle(envelope).ok(), Some(7));
    assert_eq!(chain.try_recv().err(), Some(TryRecvError::Empty));
}
