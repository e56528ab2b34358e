//! `Mbox::request` blocks until the reply or a typed error: `Timeout`, `NoHandler`,
//! `AgentGone`, `SelfRequest`, `SameThread`, `HandlerPanicked`, `NoReply` (or `Overloaded`,
//! see limit_overload_reactions.rs). It works from plain threads and from agents on other
//! dispatchers; a reply may be deferred to a later handler; a reply that comes after the
//! requester gave up is counted in `EnvStats::replies_discarded`. `SameThread` is detected
//! exactly where one thread serves requester and receiver; elsewhere the request succeeds.

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::{
    Agent, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox, PanicReaction, ReplyTo,
    Request, RequestError,
};
use common::{EXPECTED, Gate, Sharing, gate, quiet_expected_panics, recv, wait_stats};
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

/// Doubles numbers.
struct Doubler;
impl Agent for Doubler {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Doubler, _: &mut Ctx<Doubler>, n: u32| n * 2)?;
        Ok(())
    }
}

fn env() -> (Env, EnvHandle) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

#[test]
fn a_plain_thread_gets_the_reply() {
    let (_env, h) = env();
    let d = h.register_agent(Doubler).expect("doubler");
    assert_eq!(d.request::<u32, u32>(21, common::DEADLINE), Ok(42));
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let d = d.clone();
            std::thread::spawn(move || {
                (0..100u32)
                    .map(|i| d.request::<u32, u32>(t * 1000 + i, common::DEADLINE))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (t, th) in threads.into_iter().enumerate() {
        let replies = th.join().expect("thread");
        let expected: Vec<_> = (0..100u32).map(|i| Ok((t as u32 * 1000 + i) * 2)).collect();
        assert_eq!(replies, expected);
    }
}

/// Forwards numbers to `to` as requests from its own handler.
struct Relay {
    to: Mbox,
    out: Sender<Result<u32, RequestError>>,
}
struct Forward(u32);
impl Agent for Relay {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|r: &mut Relay, _: &mut Ctx<Relay>, Forward(n): Forward| {
            let _ = r.out.send(r.to.request(n, common::DEADLINE));
        })?;
        Ok(())
    }
}

#[test]
fn an_agent_on_another_dispatcher_gets_the_reply() {
    let (_env, h) = env();
    let d = h.register_agent(Doubler).expect("doubler");
    let other = OneThreadDispatcher::new(&h, "relay").expect("dispatcher");
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    let relay = coop.add_with(Relay { to: d, out: tx }, &other.binder());
    h.register_coop(coop).expect("relay");
    relay.send(Forward(8));
    assert_eq!(recv(&rx), Ok(16));
}

#[test]
fn an_agent_on_the_same_dispatcher_gets_same_thread() {
    let (_env, h) = env();
    let (tx, rx) = mpsc::channel();
    // Both on the default dispatcher.
    let d = h.register_agent(Doubler).expect("doubler");
    let relay = h
        .register_agent(Relay {
            to: d.clone(),
            out: tx.clone(),
        })
        .expect("relay");
    relay.send(Forward(1));
    assert_eq!(recv(&rx), Err(RequestError::SameThread));
    // Both on one custom dispatcher.
    let shared = OneThreadDispatcher::new(&h, "shared").expect("dispatcher");
    let mut coop = h.new_coop();
    coop.set_binder(&shared.binder());
    let d2 = coop.add(Doubler);
    let relay2 = coop.add(Relay {
        to: d2.clone(),
        out: tx,
    });
    h.register_coop(coop).expect("coop");
    relay2.send(Forward(2));
    assert_eq!(recv(&rx), Err(RequestError::SameThread));
    // The doubler itself is fine.
    assert_eq!(d2.request::<u32, u32>(3, common::DEADLINE), Ok(6));
    assert_eq!(d.request::<u32, u32>(3, common::DEADLINE), Ok(6));
}

/// Requests from itself.
struct Narcissus {
    out: Sender<Result<u32, RequestError>>,
}
struct AskMyself;
impl Agent for Narcissus {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Narcissus, _: &mut Ctx<Narcissus>, n: u32| n)?;
        def.on(
            |n: &mut Narcissus, ctx: &mut Ctx<Narcissus>, _: AskMyself| {
                let _ = n.out.send(ctx.mbox().request(5u32, common::DEADLINE));
            },
        )?;
        Ok(())
    }
}

#[test]
fn an_agent_requesting_from_itself_gets_self_request() {
    let (_env, h) = env();
    let (tx, rx) = mpsc::channel();
    // On its own dispatcher, so that the answer is SelfRequest rather than SameThread.
    let alone = OneThreadDispatcher::new(&h, "alone").expect("dispatcher");
    let mut coop = h.new_coop();
    let n = coop.add_with(Narcissus { out: tx }, &alone.binder());
    h.register_coop(coop).expect("register");
    n.send(AskMyself);
    assert_eq!(recv(&rx), Err(RequestError::SelfRequest));
    assert_eq!(n.request::<u32, u32>(9, common::DEADLINE), Ok(9));
}

#[test]
fn no_handler_and_agent_gone() {
    let (_env, h) = env();
    let (gone_tx, gone_rx) = mpsc::channel();
    let mut coop = h.new_coop();
    let d = coop.add(Doubler);
    coop.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let id = h.register_coop(coop).expect("register");
    assert_eq!(
        d.request::<u64, u64>(1, common::DEADLINE),
        Err(RequestError::NoHandler),
        "u64 is not subscribed"
    );
    assert_eq!(
        d.request::<u32, u64>(1, common::DEADLINE),
        Err(RequestError::NoHandler),
        "the reply type is part of the request type"
    );
    assert_eq!(h.stats().unhandled, 2);
    assert_eq!(
        d.stats().unhandled,
        2,
        "the agent counts an unhandled request before its requester hears of it"
    );
    h.deregister_coop(id, DeregReason::Normal)
        .expect("deregister");
    recv(&gone_rx);
    assert_eq!(
        d.request::<u32, u32>(1, common::DEADLINE),
        Err(RequestError::AgentGone)
    );
    // An agent never registered is gone as well.
    let mut unregistered = h.new_coop();
    let never = unregistered.add(Doubler);
    assert_eq!(
        never.request::<u32, u32>(1, common::DEADLINE),
        Err(RequestError::AgentGone)
    );
    assert_eq!(h.stats().dead_letters, 2);
}

/// Panics on 0, drops requests for 1 unanswered, keeps requests for 2 until `Release`.
struct Tricky {
    kept: Vec<ReplyTo<u32>>,
    gate: Option<Gate>,
    late: Sender<Result<(), u32>>,
}
struct Release;
impl Agent for Tricky {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.panic_reaction(PanicReaction::Ignore);
        def.on(
            |t: &mut Tricky, _: &mut Ctx<Tricky>, r: Request<u32, u32>| match *r.query() {
                0 => panic!("{EXPECTED}: handler"),
                1 => drop(r),
                2 => t.kept.push(r.into_parts().1),
                3 => {
                    // Slow: the requester gives up first.
                    if let Some(g) = &t.gate {
                        g.pass();
                    }
                    let _ = t.late.send(r.reply(33));
                }
                n => {
                    let _ = r.reply(n * 10);
                }
            },
        )?;
        def.on(|t: &mut Tricky, _: &mut Ctx<Tricky>, _: Release| {
            for (i, reply) in t.kept.drain(..).enumerate() {
                let _ = reply.reply(200 + i as u32);
            }
        })?;
        Ok(())
    }
}

fn tricky(h: &EnvHandle, gate: Option<Gate>) -> (Mbox, mpsc::Receiver<Result<(), u32>>) {
    let (late_tx, late_rx) = mpsc::channel();
    let m = h
        .register_agent(Tricky {
            kept: Vec::new(),
            gate,
            late: late_tx,
        })
        .expect("register");
    (m, late_rx)
}

#[test]
fn handler_panicked_and_no_reply() {
    quiet_expected_panics();
    let (_env, h) = env();
    let (t, _) = tricky(&h, None);
    assert_eq!(
        t.request::<u32, u32>(0, common::DEADLINE),
        Err(RequestError::HandlerPanicked)
    );
    assert_eq!(
        t.request::<u32, u32>(1, common::DEADLINE),
        Err(RequestError::NoReply)
    );
    assert_eq!(t.request::<u32, u32>(7, common::DEADLINE), Ok(70));
    assert_eq!(h.stats().panics, 1);
}

#[test]
fn a_reply_may_come_from_a_later_handler() {
    let (_env, h) = env();
    let (t, _) = tricky(&h, None);
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || t.request::<u32, u32>(2, common::DEADLINE))
        })
        .collect();
    // Both requests are kept before `Release` is handled once their count shows.
    common::wait_until("both requests kept", || t.stats().handled == 2);
    t.send(Release);
    let mut replies: Vec<u32> = waiters
        .into_iter()
        .map(|w| w.join().expect("waiter").expect("reply"))
        .collect();
    replies.sort();
    assert_eq!(replies, vec![200, 201]);
}

#[test]
fn a_kept_reply_dropped_at_finish_is_no_reply() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let (t, _) = tricky(&h, None);
    let waiter = {
        let t = t.clone();
        std::thread::spawn(move || t.request::<u32, u32>(2, common::DEADLINE))
    };
    common::wait_until("request kept", || t.stats().handled == 1);
    h.stop();
    assert_eq!(waiter.join().expect("waiter"), Err(RequestError::NoReply));
    common::run_env(env);
}

#[test]
fn timeout_then_the_late_reply_is_discarded_and_counted() {
    let (_env, h) = env();
    let (g, key) = gate();
    let (t, late) = tricky(&h, Some(g));
    // The handler is held until after the requester gave up.
    assert_eq!(
        t.request::<u32, u32>(3, Duration::from_millis(20)),
        Err(RequestError::Timeout)
    );
    key.wait_entered();
    key.open();
    assert_eq!(
        recv(&late),
        Err(33),
        "the reply is given back to the replier"
    );
    wait_stats(&h, "the late reply counted", |s| s.replies_discarded == 1);
    // The agent is fine.
    assert_eq!(t.request::<u32, u32>(4, common::DEADLINE), Ok(40));
    assert_eq!(h.stats().replies_discarded, 1);
}

/// On every dispatcher, a doubler answers plain threads and an agent on another dispatcher,
/// and an agent requesting from itself gets `SelfRequest`.
#[test]
fn plain_threads_and_other_dispatchers_get_replies_on_every_dispatcher() {
    let (_env, h) = env();
    let other = OneThreadDispatcher::new(&h, "relay").expect("dispatcher");
    for disp in common::dispatchers(&h) {
        let name = disp.name;
        let mut coop = h.new_coop();
        let d = coop.add_with(Doubler, &disp.binder(0));
        let (tx, rx) = mpsc::channel();
        let n = coop.add_with(Narcissus { out: tx.clone() }, &disp.binder(1));
        h.register_coop(coop).expect("register");
        let threads: Vec<_> = (0..2u32)
            .map(|t| {
                let d = d.clone();
                std::thread::spawn(move || {
                    (0..20u32)
                        .map(|i| d.request::<u32, u32>(t * 100 + i, common::DEADLINE))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (t, th) in threads.into_iter().enumerate() {
            let expected: Vec<_> = (0..20u32).map(|i| Ok((t as u32 * 100 + i) * 2)).collect();
            assert_eq!(th.join().expect("thread"), expected, "{name}");
        }
        let mut coop = h.new_coop();
        let relay = coop.add_with(Relay { to: d, out: tx }, &other.binder());
        h.register_coop(coop).expect("relay");
        relay.send(Forward(8));
        assert_eq!(recv(&rx), Ok(16), "an agent on another dispatcher, {name}");
        n.send(AskMyself);
        assert_eq!(recv(&rx), Err(RequestError::SelfRequest), "{name}");
    }
}

/// A request from one agent to another bound to the same dispatcher configuration (in another
/// coop) is `SameThread` where one thread serves both — one_thread, one active group, a
/// 1-thread pool — and succeeds where another thread can serve the receiver: active_obj,
/// a group each, pools of several threads (FIFO per agent or per coop).
#[test]
fn same_thread_is_detected_exactly_where_one_thread_serves_both() {
    let (_env, h) = env();
    for disp in common::dispatchers(&h) {
        let name = disp.name;
        let mut coop = h.new_coop();
        let d = coop.add_with(Doubler, &disp.binder(0));
        h.register_coop(coop).expect("doubler");
        let (tx, rx) = mpsc::channel();
        let mut coop = h.new_coop();
        let relay = coop.add_with(Relay { to: d, out: tx }, &disp.binder(1));
        h.register_coop(coop).expect("relay");
        relay.send(Forward(5));
        let expected = match disp.sharing {
            Sharing::OneThread => Err(RequestError::SameThread),
            Sharing::PerCoop | Sharing::Parallel => Ok(10),
        };
        assert_eq!(recv(&rx), expected, "{name}");
    }
}

/// On a `Fifo::Coop` pool the agents of a coop share one queue, which the requesting thread
/// holds while its handler runs: a request to a sibling can only be served after the handler
/// returns, i.e. it deadlocks until its timeout. It should be `SameThread`.
#[test]
fn a_request_to_a_coop_sibling_on_a_fifo_coop_pool_is_same_thread() {
    use agentry::disp::{Fifo, ThreadPoolDispatcher};
    /// Requests with a short timeout, so that the deadlock shows as `Timeout`.
    struct ShortRelay {
        to: Mbox,
        out: Sender<Result<u32, RequestError>>,
    }
    impl Agent for ShortRelay {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            def.on(
                |r: &mut ShortRelay, _: &mut Ctx<ShortRelay>, Forward(n): Forward| {
                    let _ = r.out.send(r.to.request(n, Duration::from_millis(500)));
                },
            )?;
            Ok(())
        }
    }
    let (_env, h) = env();
    let pool = ThreadPoolDispatcher::builder("coop-pool")
        .threads(4)
        .fifo(Fifo::Coop)
        .build(&h)
        .expect("pool");
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    coop.set_binder(&pool.binder());
    let d = coop.add(Doubler);
    let relay = coop.add(ShortRelay { to: d, out: tx });
    h.register_coop(coop).expect("coop");
    relay.send(Forward(1));
    assert_eq!(recv(&rx), Err(RequestError::SameThread));
}
