//! A plain thread and an agent talk through chains: an agent sends to a chain exactly as to
//! an mbox (a `Destination`), a chain subscribes to a multi mbox for one type, and timers send
//! to chains with the cancel guarantee.

use agentry::mchain::{Close, Mchain};
use agentry::testing::TestEnv;
use agentry::{Agent, Ctx, Define, DefineError, Destination, Env, MchainError};
use std::sync::Arc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(10);

/// Doubles a number and answers wherever the request says.
struct Doubler;
struct Double(u32, Arc<dyn Destination<u32>>);

impl Agent for Doubler {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Doubler, _: &mut Ctx<Doubler>, Double(n, to): Double| to.send(n * 2))?;
        Ok(())
    }
}

#[test]
fn an_agent_answers_a_thread_through_a_chain_and_an_agent_through_an_mbox() {
    /// Passes every number it gets on to a chain (so the test can see it).
    struct Relay(Mchain);
    impl Agent for Relay {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            def.on(|r: &mut Relay, _: &mut Ctx<Relay>, n: u32| r.0.send(("relayed", n)))?;
            Ok(())
        }
    }
    let env = Env::new().expect("env");
    let doubler = env.handle().register_agent(Doubler).expect("registered");
    let relayed = Mchain::unbounded();
    let relay = env
        .handle()
        .register_agent(Relay(relayed.clone()))
        .expect("registered");
    let replies = Mchain::unbounded();
    doubler.send(Double(21, Arc::new(replies.clone())));
    doubler.send(Double(4, Arc::new(relay)));
    let answer = replies.recv(DEADLINE).expect("answered").downcast::<u32>();
    assert_eq!(answer.ok(), Some(42));
    let through_the_agent = relayed.recv(DEADLINE).expect("relayed");
    assert_eq!(
        through_the_agent.downcast::<(&str, u32)>().ok(),
        Some(("relayed", 8))
    );
    env.handle().stop();
    env.run();
}

#[test]
fn a_chain_subscribed_to_a_multi_mbox_gets_its_type_as_arcs() {
    struct Price(u32);
    struct Volume;
    let env = Env::new().expect("env");
    let market = env.handle().create_mbox();
    let prices = Mchain::unbounded();
    prices.subscribe::<Price>(&market).expect("subscribed");
    assert_eq!(
        prices.subscribe::<Price>(&market),
        Err(MchainError::AlreadySubscribed(
            std::any::type_name::<Price>()
        ))
    );
    assert_eq!(market.subscriber_count::<Price>(), 1);

    market.send(Price(10));
    market.send(Volume); // not subscribed: counted by the multi mbox
    market.send(Price(11));
    let got: Vec<u32> = (0..2)
        .map(|_| {
            let price = prices.recv(Duration::ZERO).expect("published");
            price.downcast::<Arc<Price>>().expect("an Arc<Price>").0
        })
        .collect();
    assert_eq!(got, [10, 11]);
    assert!(prices.is_empty());
    assert_eq!(env.handle().stats().no_subscribers, 1);

    assert!(prices.unsubscribe::<Price>(&market));
    assert!(!prices.unsubscribe::<Price>(&market));
    market.send(Price(12));
    assert!(prices.is_empty());

    prices.subscribe::<Price>(&market).expect("again");
    prices.close(Close::DropContent);
    assert_eq!(
        market.subscriber_count::<Price>(),
        0,
        "closing ends the subscriptions"
    );
    assert_eq!(prices.subscribe::<Price>(&market), Err(MchainError::Closed));

    let dropped = Mchain::unbounded();
    dropped.subscribe::<Price>(&market).expect("subscribed");
    drop(dropped);
    assert_eq!(
        market.subscriber_count::<Price>(),
        0,
        "dropping the last handle ends them too"
    );
    env.handle().stop();
    env.run();
}

#[test]
fn timers_reach_chains_and_cancel_revokes_a_queued_message() {
    let mut env = TestEnv::new().expect("test env");
    let chain = Mchain::unbounded();
    let kept = env
        .handle()
        .send_delayed(&chain, Duration::from_secs(1), 1u32);
    let cancelled = env
        .handle()
        .send_delayed(&chain, Duration::from_secs(1), 2u32);
    let periodic =
        env.handle()
            .send_periodic(&chain, Duration::from_secs(2), Duration::from_secs(1), 3u32);
    env.jump(Duration::from_secs(1));
    assert_eq!(chain.len(), 2, "both one-shot messages are queued");
    cancelled.cancel();
    assert_eq!(env.expect_message::<u32>(&chain, Duration::ZERO), Ok(1));
    env.expect_no_message(&chain, Duration::from_millis(999))
        .expect("the cancelled one is never received");
    assert_eq!(chain.stats().revoked, 1);
    for _ in 0..3 {
        assert_eq!(
            env.expect_message::<u32>(&chain, Duration::from_secs(1)),
            Ok(3)
        );
    }
    periodic.cancel();
    env.expect_no_message(&chain, Duration::from_secs(10))
        .expect("nothing after cancel");
    drop(kept);
}
