//! A typed address (`Addr<A>`) delivers the message types of the agent's protocol exactly as
//! its untyped mbox does: sends, `try_send`, requests (the reply type taken from the
//! protocol), a `Recipient` (as a timer's destination too); it is obtained from a coop, the
//! env, the agent's own `Ctx` and `Ctx::spawn_addr`, and gives its `Mbox` back. Whether an
//! undeclared type compiles is proved by the `compile_fail` doctests of `agentry::protocol`.

mod common;

use agentry::mchain::Mchain;
use agentry::{
    Addr, Agent, Ctx, Define, DefineError, Env, Mbox, Recipient, Request, RequestError, SendError,
    UserError, protocol::Protocol,
};
use common::DEADLINE;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

struct Add(u64);
struct Reset; // a signal
struct Total;
struct Halve(u64);

/// Adds what it is sent; reports each new sum on `out`.
struct Adder {
    sum: u64,
    out: Mchain,
}

impl Agent for Adder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Adder, _: &mut Ctx<Adder>, Add(n): Add| {
            a.sum += n;
            a.out.send(a.sum);
        })?
        .on(|a: &mut Adder, _: &mut Ctx<Adder>, _: Reset| a.sum = 0)?
        .on_request(|a: &mut Adder, _: &mut Ctx<Adder>, _: Total| a.sum)?
        .on_request(|_: &mut Adder, _: &mut Ctx<Adder>, Halve(n): Halve| format!("{}", n / 2))?;
        Ok(())
    }
}

impl Protocol for Adder {
    type Messages = (Add, Reset, Request<Total, u64>, Request<Halve, String>);
}

fn adder(out: &Mchain) -> Adder {
    Adder {
        sum: 0,
        out: out.clone(),
    }
}

fn sum(out: &Mchain) -> u64 {
    out.recv_as::<u64>(DEADLINE).expect("a sum")
}

#[test]
fn sends_through_a_typed_address_reach_the_agent_in_order() {
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let addr: Addr<Adder> = env
        .handle()
        .register_agent_addr(adder(&out))
        .expect("registered");
    addr.send(Add(1));
    addr.send(Add(2));
    addr.send(Reset);
    addr.try_send(Add(10)).expect("running");
    assert_eq!([sum(&out), sum(&out), sum(&out)], [1, 3, 10]);
    env.handle().stop();
    common::run_env(env);
    let stats = addr.mbox().stats();
    assert_eq!((stats.handled, stats.unhandled), (4, 0));
}

#[test]
fn a_typed_request_takes_its_reply_type_from_the_protocol() {
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let addr = env
        .handle()
        .register_agent_addr(adder(&out))
        .expect("registered");
    addr.send(Add(40));
    addr.send(Add(2));
    // No turbofish: `Request<Total, u64>` is the only request of `Total` in the protocol.
    let total = addr.request(Total, DEADLINE);
    assert_eq!(total, Ok(42));
    let half = addr.request(Halve(9), DEADLINE);
    assert_eq!(half.as_deref(), Ok("4"));

    let mut reply = pin!(addr.request_future(Total));
    let mut cx = Context::from_waker(Waker::noop());
    let deadline = std::time::Instant::now() + DEADLINE;
    let answer = loop {
        if let Poll::Ready(answer) = reply.as_mut().poll(&mut cx) {
            break answer;
        }
        assert!(std::time::Instant::now() < deadline, "no reply");
        std::thread::yield_now();
    };
    assert_eq!(answer, Ok(42));
    env.handle().stop();
    common::run_env(env);
}

#[test]
fn a_typed_send_to_a_gone_agent_is_refused_like_an_untyped_one() {
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let addr = env
        .handle()
        .register_agent_addr(adder(&out))
        .expect("registered");
    env.handle().stop();
    common::run_env(env);
    match addr.try_send(Add(7)) {
        Err(SendError::AgentGone(Add(n))) => assert_eq!(n, 7),
        other => panic!("the agent is gone: {other:?}"),
    }
    assert_eq!(addr.request(Total, DEADLINE), Err(RequestError::AgentGone));
    assert_eq!(addr.mbox().stats().refused, 2);
}

#[test]
fn a_recipient_sends_one_declared_type_and_serves_as_a_timer_destination() {
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let addr = env
        .handle()
        .register_agent_addr(adder(&out))
        .expect("registered");
    let adds: Recipient<Add> = addr.recipient();
    adds.send(Add(5));
    assert_eq!(sum(&out), 5);
    let _timer = env
        .handle()
        .send_delayed(&adds, Duration::from_millis(1), Add(6));
    assert_eq!(sum(&out), 11);
    assert_eq!(adds.mbox(), addr.mbox());
    env.handle().stop();
    common::run_env(env);
}

#[test]
fn a_typed_address_is_an_mbox_in_size_and_gives_it_back() {
    assert_eq!(size_of::<Addr<Adder>>(), size_of::<Mbox>());
    assert_eq!(size_of::<Recipient<Add>>(), size_of::<Mbox>());
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let mut coop = env.handle().new_coop();
    let addr = coop.add_addr(adder(&out));
    let untyped = addr.mbox().clone();
    env.handle().register_coop(coop).expect("registered");
    assert_eq!(Mbox::from(addr.clone()), untyped);
    untyped.send(Add(3)); // the same agent, reached untyped
    addr.send(Add(4));
    assert_eq!([sum(&out), sum(&out)], [3, 7]);
    env.handle().stop();
    common::run_env(env);
}

/// Spawns an `Adder` child with its typed address and gives it to itself, typed, in a message.
struct Parent {
    out: Mchain,
}

/// A message carrying a typed address.
struct Child(Addr<Adder>);
/// The parent's own address, as the parent's `on_start` saw it.
struct Me(Addr<Parent>);

impl Agent for Parent {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Parent, _: &mut Ctx<Parent>, Child(child): Child| {
            child.send(Add(100));
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let child = ctx.spawn_addr(adder(&self.out))?;
        self.out.send(Me(ctx.addr()));
        ctx.addr().send(Child(child));
        Ok(())
    }
}

impl Protocol for Parent {
    type Messages = (Child,);
}

#[test]
fn an_agent_reaches_itself_and_its_spawned_child_through_typed_addresses() {
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let parent = env
        .handle()
        .register_agent_addr(Parent { out: out.clone() })
        .expect("registered");
    let Me(seen) = out.recv_as::<Me>(DEADLINE).expect("the parent's address");
    assert_eq!(seen, parent);
    assert_eq!(sum(&out), 100, "the child got the parent's message");
    env.handle().stop();
    common::run_env(env);
    assert_eq!(parent.mbox().stats().handled, 1);
}
