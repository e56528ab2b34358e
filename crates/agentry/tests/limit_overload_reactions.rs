//! Message limits: at most `max` messages of a type wait in an agent's queue; the next one
//! meets the limit's reaction, and every reaction is counted: `Drop` (`limit_dropped`, and
//! `try_send` gives the message back), `Redirect` (`limit_redirected`), `Transform`
//! (`limit_transformed`). A place is freed as soon as the agent takes a message.

mod common;

use agentry::limit::Transformed;
use agentry::{
    Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox, RequestError, SendError, limit::Overload,
};
use common::{Gate, GateKey, gate, wait_stats};

#[derive(Debug, PartialEq)]
struct Work(u32);
struct Hold;
struct Seen;

/// Records the work it handles; limited to `max` queued `Work`; can be held in a handler.
struct Limited {
    max: usize,
    reaction: Option<Overload<Work>>,
    gate: Option<Gate>,
    seen: Vec<u32>,
}

impl Agent for Limited {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        if let Some(r) = self.reaction.take() {
            def.limit::<Work>(self.max, r)?;
        }
        def.on(|l: &mut Limited, _: &mut Ctx<Limited>, Work(n): Work| l.seen.push(n))?;
        def.on(|l: &mut Limited, _: &mut Ctx<Limited>, _: Hold| {
            if let Some(g) = &l.gate {
                g.pass();
            }
        })?;
        def.on_request(|l: &mut Limited, _: &mut Ctx<Limited>, _: Seen| l.seen.clone())?;
        Ok(())
    }
}

/// Receives redirected work and transformed reports.
#[derive(Default)]
struct Overflow {
    seen: Vec<u32>,
}
struct Report(String);

impl Agent for Overflow {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|o: &mut Overflow, _: &mut Ctx<Overflow>, Work(n): Work| o.seen.push(n))?;
        def.on(
            |o: &mut Overflow, _: &mut Ctx<Overflow>, Report(r): Report| {
                o.seen.push(r.len() as u32)
            },
        )?;
        def.on_request(|o: &mut Overflow, _: &mut Ctx<Overflow>, _: Seen| o.seen.clone())?;
        Ok(())
    }
}

fn env() -> (Env, EnvHandle) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

/// Registers a held limited agent: it sits in its `Hold` handler until the key opens it.
fn held(h: &EnvHandle, max: usize, reaction: Overload<Work>) -> (Mbox, GateKey) {
    let (g, key) = gate();
    let m = h
        .register_agent(Limited {
            max,
            reaction: Some(reaction),
            gate: Some(g),
            seen: Vec::new(),
        })
        .expect("register limited");
    m.send(Hold);
    key.wait_entered();
    (m, key)
}

fn seen(m: &Mbox) -> Vec<u32> {
    m.request(Seen, common::DEADLINE).expect("seen")
}

#[test]
fn drop_counts_and_try_send_gives_the_message_back() {
    let (_env, h) = env();
    let (m, key) = held(&h, 3, Overload::Drop);
    for n in 0..3 {
        assert_eq!(m.try_send(Work(n)), Ok(()));
    }
    match m.try_send(Work(3)) {
        Err(SendError::Overloaded(w)) => assert_eq!(w, Work(3)),
        other => panic!("expected Overloaded, got {other:?}"),
    }
    m.send(Work(4));
    m.send(Work(5));
    let stats = h.stats();
    assert_eq!(stats.limit_dropped, 3);
    assert_eq!(m.stats().limit_dropped, 3);
    assert_eq!(stats.dead_letters, 0);
    key.open();
    assert_eq!(seen(&m), vec![0, 1, 2]);

    // The queue drained: the limit admits three more.
    m.send(Hold);
    key.wait_entered();
    for n in 10..14 {
        m.send(Work(n));
    }
    key.open();
    assert_eq!(seen(&m), vec![0, 1, 2, 10, 11, 12]);
    assert_eq!(h.stats().limit_dropped, 4);
}

#[test]
fn a_request_over_its_limit_is_overloaded() {
    struct Asker;
    impl Agent for Asker {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            // No request of this type may wait at all.
            def.limit::<agentry::Request<u32, u32>>(0, Overload::Drop)?;
            def.on_request(|_: &mut Asker, _: &mut Ctx<Asker>, n: u32| n + 1)?;
            def.on_request(|_: &mut Asker, _: &mut Ctx<Asker>, n: u64| n + 1)?;
            Ok(())
        }
    }
    let (_env, h) = env();
    let m = h.register_agent(Asker).expect("register");
    assert_eq!(
        m.request::<u32, u32>(1, common::DEADLINE),
        Err(RequestError::Overloaded)
    );
    assert_eq!(m.request::<u64, u64>(1, common::DEADLINE), Ok(2));
    assert_eq!(h.stats().limit_dropped, 1);
}

#[test]
fn redirect_hands_overflow_to_another_agent() {
    let (_env, h) = env();
    let overflow = h.register_agent(Overflow::default()).expect("overflow");
    let (m, key) = held(&h, 2, Overload::Redirect(overflow.clone()));
    for n in 0..5 {
        assert_eq!(m.try_send(Work(n)), Ok(()), "redirected, not refused");
    }
    key.open();
    assert_eq!(seen(&m), vec![0, 1]);
    assert_eq!(seen(&overflow), vec![2, 3, 4]);
    let stats = h.stats();
    assert_eq!(stats.limit_redirected, 3);
    assert_eq!(stats.limit_dropped, 0);
}

#[test]
fn transform_turns_overflow_into_another_message() {
    let (_env, h) = env();
    let overflow = h.register_agent(Overflow::default()).expect("overflow");
    let to = overflow.clone();
    let (m, key) = held(
        &h,
        1,
        Overload::transform(move |Work(n): Work| {
            Transformed::to(&to, Report("x".repeat(n as usize)))
        }),
    );
    for n in 0..4 {
        m.send(Work(n));
    }
    key.open();
    assert_eq!(seen(&m), vec![0]);
    assert_eq!(seen(&overflow), vec![1, 2, 3]);
    let stats = wait_stats(&h, "transforms counted", |s| s.limit_transformed == 3);
    assert_eq!(stats.limit_dropped, 0);
}

#[test]
fn transform_may_publish_to_a_multi_mbox() {
    struct Subscriber {
        topic: agentry::MultiMbox,
        seen: Vec<u32>,
    }
    impl Agent for Subscriber {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            let topic = self.topic.clone();
            def.from(&topic).on(
                |s: &mut Subscriber, _: &mut Ctx<Subscriber>, n: std::sync::Arc<u32>| {
                    s.seen.push(*n)
                },
            )?;
            def.on_request(|s: &mut Subscriber, _: &mut Ctx<Subscriber>, _: Seen| s.seen.clone())?;
            Ok(())
        }
    }
    let (_env, h) = env();
    let topic = h.create_mbox();
    let sub = h
        .register_agent(Subscriber {
            topic: topic.clone(),
            seen: Vec::new(),
        })
        .expect("subscriber");
    let t = topic.clone();
    let (m, key) = held(
        &h,
        1,
        Overload::transform(move |Work(n): Work| Transformed::to_multi(&t, n * 10)),
    );
    for n in 0..3 {
        m.send(Work(n));
    }
    key.open();
    assert_eq!(seen(&m), vec![0]);
    assert_eq!(seen(&sub), vec![10, 20]);
    assert_eq!(h.stats().limit_transformed, 2);
}

#[test]
fn abort_kills_the_process() {
    const TEST: &str = "abort_kills_the_process";
    if common::child_mode().as_deref() == Some("limit_abort") {
        let (_env, h) = env();
        let (m, _key) = held(&h, 1, Overload::Abort);
        m.send(Work(1));
        m.send(Work(2)); // over the limit: aborts on this thread
        return;
    }
    let outcome = common::run_child(TEST, "limit_abort");
    common::assert_aborted(&outcome, "agentry: message limit 1 for");
    assert!(
        outcome
            .stderr
            .contains("reached (reaction Abort): aborting")
    );
}
