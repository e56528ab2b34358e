//! Insend handlers run on the sender's thread before `send` returns, in every state, bypassing
//! message limits (counted in `AgentStats::insend_handled`). An insend request handler answers
//! even requests made from the agent's own dispatcher thread. A message type cannot have both
//! an insend and a queued handler on the same mbox (`DefineError::InsendConflict`).

mod common;

use agentry::{
    Agent, Ctx, Define, DefineError, DeregReason, Env, InsendCtx, Mbox, MultiMbox, RegisterError,
    Request, RequestError, State, limit::Overload,
};
use common::recv;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

struct Mark;
struct Forwarded(ThreadId);
struct Queued;
struct Seen;
/// Asks for a number through the insend request handler.
struct Ask(u32);

/// Records where its insend handlers run; spends its life in a state without queued handlers
/// for `Mark`.
struct Fast {
    marks: Arc<AtomicU64>,
    threads: Arc<Mutex<Vec<ThreadId>>>,
    topic: MultiMbox,
    forwarded: Vec<ThreadId>,
    queued: u32,
}

impl Agent for Fast {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let stuck = def.state("stuck")?;
        def.start_in(stuck)?;
        // No message of this type may wait: only insend delivery can get through.
        def.limit::<Mark>(0, Overload::Drop)?;
        def.limit::<Queued>(0, Overload::Drop)?;
        let (marks, threads) = (self.marks.clone(), self.threads.clone());
        def.insend(move |ctx: &InsendCtx<'_>, _: Mark| {
            marks.fetch_add(1, Ordering::SeqCst);
            threads
                .lock()
                .expect("lock")
                .push(std::thread::current().id());
            ctx.mbox().send(Forwarded(std::thread::current().id()));
        })?;
        let threads = self.threads.clone();
        let topic = self.topic.clone();
        def.from(&topic)
            .insend(move |_: &InsendCtx<'_>, n: Arc<u32>| {
                assert_eq!(*n, 7);
                threads
                    .lock()
                    .expect("lock")
                    .push(std::thread::current().id());
            })?;
        def.insend(|_: &InsendCtx<'_>, r: Request<Ask, u32>| {
            let (Ask(n), reply) = r.into_parts();
            let _ = reply.reply(n * 2);
        })?;
        def.in_states(&[State::DEFAULT, stuck])
            .on(|f: &mut Fast, _: &mut Ctx<Fast>, Forwarded(t): Forwarded| f.forwarded.push(t))?;
        def.in_states(&[State::DEFAULT, stuck])
            .on(|f: &mut Fast, _: &mut Ctx<Fast>, _: Queued| f.queued += 1)?;
        def.in_states(&[State::DEFAULT, stuck]).on_request(
            |f: &mut Fast, _: &mut Ctx<Fast>, _: Seen| (f.forwarded.clone(), f.queued),
        )?;
        Ok(())
    }
}

fn fast(topic: &MultiMbox) -> (Fast, Arc<AtomicU64>, Arc<Mutex<Vec<ThreadId>>>) {
    let marks = Arc::new(AtomicU64::new(0));
    let threads = Arc::new(Mutex::new(Vec::new()));
    (
        Fast {
            marks: marks.clone(),
            threads: threads.clone(),
            topic: topic.clone(),
            forwarded: Vec::new(),
            queued: 0,
        },
        marks,
        threads,
    )
}

#[test]
fn insend_runs_on_the_senders_thread_before_send_returns() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let (agent, marks, threads) = fast(&topic);
    let (gone_tx, gone) = mpsc::channel();
    let mut c = h.new_coop();
    let m = c.add(agent);
    c.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let coop = h.register_coop(c).expect("register");
    let me = std::thread::current().id();

    for i in 1..=5 {
        m.send(Mark);
        assert_eq!(
            marks.load(Ordering::SeqCst),
            i,
            "not handled before send returned"
        );
    }
    let helper = {
        let m = m.clone();
        std::thread::spawn(move || {
            m.send(Mark);
            std::thread::current().id()
        })
    };
    let helper_id = helper.join().expect("helper");
    topic.send(7u32);

    let ran_on = threads.lock().expect("lock").clone();
    assert_eq!(ran_on, vec![me, me, me, me, me, helper_id, me]);
    assert_eq!(m.stats().insend_handled, 7);

    // Limits do not apply to insend delivery; they do to the queued type.
    m.send(Queued);
    let (forwarded, queued) = m
        .request::<Seen, (Vec<ThreadId>, u32)>(Seen, common::DEADLINE)
        .expect("seen");
    assert_eq!(queued, 0);
    assert_eq!(h.stats().limit_dropped, 1);
    // Work forwarded through `InsendCtx::mbox` reached the queued handler (in its state
    // "stuck", where `Mark` itself has no queued handler).
    assert_eq!(forwarded.len(), 6);
    assert_eq!(h.stats().unhandled, 0);

    // Once the agent is gone, its insend handler no longer runs: the send is a dead letter.
    h.deregister_coop(coop, DeregReason::Normal)
        .expect("deregister");
    recv(&gone);
    m.send(Mark);
    assert_eq!(marks.load(Ordering::SeqCst), 6);
    assert_eq!(h.stats().dead_letters, 1);
}

/// Runs on the same dispatcher as `Fast` and asks it for numbers from its handlers.
struct Neighbour {
    fast: Mbox,
    out: Sender<Result<u32, RequestError>>,
}
struct AskNow(u32);

impl Agent for Neighbour {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |n: &mut Neighbour, _: &mut Ctx<Neighbour>, AskNow(k): AskNow| {
                let _ = n.out.send(n.fast.request(Ask(k), common::DEADLINE));
            },
        )?;
        Ok(())
    }
}

/// Answers `Ask` through its own insend handler, and asks itself from a queued handler.
struct SelfAsker {
    out: Sender<Result<u32, RequestError>>,
}
impl Agent for SelfAsker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.insend(|_: &InsendCtx<'_>, r: Request<Ask, u32>| {
            let (Ask(n), reply) = r.into_parts();
            let _ = reply.reply(n + 1);
        })?;
        def.on(
            |s: &mut SelfAsker, ctx: &mut Ctx<SelfAsker>, AskNow(k): AskNow| {
                let _ = s.out.send(ctx.mbox().request(Ask(k), common::DEADLINE));
            },
        )?;
        Ok(())
    }
}

#[test]
fn an_insend_request_handler_answers_from_any_thread() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let (agent, ..) = fast(&topic);
    let f = h.register_agent(agent).expect("fast");
    assert_eq!(f.request::<Ask, u32>(Ask(21), common::DEADLINE), Ok(42));

    // From an agent on the same dispatcher: a queued request would be SameThread.
    let (tx, rx) = mpsc::channel();
    let n = h
        .register_agent(Neighbour {
            fast: f.clone(),
            out: tx.clone(),
        })
        .expect("neighbour");
    n.send(AskNow(5));
    assert_eq!(recv(&rx), Ok(10));

    // From the agent itself: a queued request would be SelfRequest.
    let s = h.register_agent(SelfAsker { out: tx }).expect("self asker");
    s.send(AskNow(1));
    assert_eq!(recv(&rx), Ok(2));
}

/// Subscribes `Mark` both ways, in the order given.
struct Conflicted {
    insend_first: bool,
    multi: Option<MultiMbox>,
}
impl Agent for Conflicted {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        if let Some(topic) = self.multi.clone() {
            if self.insend_first {
                def.from(&topic)
                    .insend(|_: &InsendCtx<'_>, _: Arc<Mark>| {})?;
                def.from(&topic)
                    .on(|_: &mut Conflicted, _: &mut Ctx<Conflicted>, _: Arc<Mark>| {})?;
            } else {
                def.from(&topic)
                    .on(|_: &mut Conflicted, _: &mut Ctx<Conflicted>, _: Arc<Mark>| {})?;
                def.from(&topic)
                    .insend(|_: &InsendCtx<'_>, _: Arc<Mark>| {})?;
            }
        } else if self.insend_first {
            def.insend(|_: &InsendCtx<'_>, _: Mark| {})?;
            def.on(|_: &mut Conflicted, _: &mut Ctx<Conflicted>, _: Mark| {})?;
        } else {
            def.on(|_: &mut Conflicted, _: &mut Ctx<Conflicted>, _: Mark| {})?;
            def.insend(|_: &InsendCtx<'_>, _: Mark| {})?;
        }
        Ok(())
    }
}

/// Two insend handlers for one type.
struct DoubleInsend;
impl Agent for DoubleInsend {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.insend(|_: &InsendCtx<'_>, _: Mark| {})?;
        def.insend(|_: &InsendCtx<'_>, _: Mark| {})?;
        Ok(())
    }
}

#[test]
fn insend_and_queued_handlers_for_one_type_conflict() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let conflict = |r: Result<Mbox, RegisterError>| match r {
        Err(RegisterError::Define {
            source: DefineError::InsendConflict { message, .. },
            ..
        }) => message,
        other => panic!("expected InsendConflict, got {other:?}"),
    };
    for insend_first in [true, false] {
        let m = conflict(h.register_agent(Conflicted {
            insend_first,
            multi: None,
        }));
        assert!(m.ends_with("Mark"), "{m}");
        let m = conflict(h.register_agent(Conflicted {
            insend_first,
            multi: Some(topic.clone()),
        }));
        assert!(m.ends_with("Mark"), "{m}");
    }
    conflict(h.register_agent(DoubleInsend));
    assert_eq!(h.stats().agents, 0);
    assert_eq!(topic.subscriber_count::<Mark>(), 0);
}
