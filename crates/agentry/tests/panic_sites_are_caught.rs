//! Panics are caught wherever user code runs: `on_start`, state hooks, `on_finish`, insend
//! handlers (on the sender's thread, so `send` itself never panics), delivery filters and
//! overload transforms. Each is counted in `EnvStats::panics` (and the agent's
//! `AgentStats::panics` where there is an agent).

mod common;

use agentry::limit::Transformed;
use agentry::{
    Agent, Coop, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    MultiMbox, PanicReaction, RegisterError, StartFailure, State, UserError, limit::Overload,
};
use common::{EXPECTED, Gate, gate, quiet_expected_panics, recv, wait_stats};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};

struct Ping;
/// Switch to the agent's "other" state.
struct GoOther;
struct Where;

/// Panics where it is told to.
#[derive(Clone, Copy, PartialEq)]
enum Site {
    OnStart,
    OnEnter,
    OnExit,
    OnFinish,
    Insend,
}

struct Faulty {
    site: Site,
    reaction: PanicReaction,
    other: State,
    pings: Arc<AtomicU64>,
}

impl Agent for Faulty {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.panic_reaction(self.reaction);
        self.other = def.state("other")?;
        let site = self.site;
        def.on_enter(self.other, move |_: &mut Faulty, _: &mut Ctx<Faulty>| {
            if site == Site::OnEnter {
                panic!("{EXPECTED}: on_enter");
            }
        })?;
        def.on_exit(
            State::DEFAULT,
            move |_: &mut Faulty, _: &mut Ctx<Faulty>| {
                if site == Site::OnExit {
                    panic!("{EXPECTED}: on_exit");
                }
            },
        )?;
        def.in_states(&[State::DEFAULT, self.other])
            .on_request(|_: &mut Faulty, ctx: &mut Ctx<Faulty>, _: Where| ctx.state())?;
        def.in_states(&[State::DEFAULT, self.other]).on(
            |f: &mut Faulty, ctx: &mut Ctx<Faulty>, _: GoOther| {
                ctx.change_state(f.other).expect("known state");
            },
        )?;
        if site == Site::Insend {
            let pings = self.pings.clone();
            def.insend(move |_: &agentry::InsendCtx<'_>, _: Ping| {
                pings.fetch_add(1, Ordering::SeqCst);
                panic!("{EXPECTED}: insend");
            })?;
        }
        Ok(())
    }
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        if self.site == Site::OnStart {
            panic!("{EXPECTED}: on_start");
        }
        Ok(())
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        if self.site == Site::OnFinish {
            panic!("{EXPECTED}: on_finish");
        }
    }
}

fn env() -> (Env, EnvHandle) {
    quiet_expected_panics();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

fn listen(coop: &mut Coop) -> Receiver<CoopDeregistered> {
    let (tx, rx) = mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    rx
}

fn register(
    h: &EnvHandle,
    site: Site,
    reaction: PanicReaction,
) -> (
    Mbox,
    agentry::CoopId,
    Receiver<CoopDeregistered>,
    Arc<AtomicU64>,
) {
    let pings = Arc::new(AtomicU64::new(0));
    let mut coop = h.new_coop();
    let m = coop.add(Faulty {
        site,
        reaction,
        other: State::DEFAULT,
        pings: pings.clone(),
    });
    let gone = listen(&mut coop);
    let id = h.register_coop(coop).expect("register");
    (m, id, gone, pings)
}

fn state_of(m: &Mbox) -> State {
    m.request(Where, common::DEADLINE).expect("where")
}

#[test]
fn a_panic_in_on_start_fails_the_start() {
    let (_env, h) = env();
    // Whatever the reaction (but `Abort`), a panicking start rolls the coop back.
    for reaction in [PanicReaction::Ignore, PanicReaction::DeregisterCoop] {
        let panics = h.stats().panics;
        let mut coop = h.new_coop();
        let m = coop.add(Faulty {
            site: Site::OnStart,
            reaction,
            other: State::DEFAULT,
            pings: Arc::new(AtomicU64::new(0)),
        });
        let gone = listen(&mut coop);
        let Err(RegisterError::Start {
            index: 0,
            failure: StartFailure::Panicked(message),
            ..
        }) = h.register_coop(coop)
        else {
            panic!("{reaction:?}: the start must fail");
        };
        assert_eq!(message, format!("{EXPECTED}: on_start"), "{reaction:?}");
        assert_eq!(recv(&gone).reason, DeregReason::StartFailed, "{reaction:?}");
        assert_eq!(h.stats().panics, panics + 1, "{reaction:?}");
        assert_eq!(m.stats().panics, 1, "{reaction:?}");
        assert_eq!(h.stats().coops, 0, "{reaction:?}");
    }
}

#[test]
fn a_panic_in_a_state_hook_is_caught() {
    let (_env, h) = env();
    // on_enter of "other" panics: with Ignore the agent keeps running.
    let (m, _, gone, _) = register(&h, Site::OnEnter, PanicReaction::Ignore);
    let default = state_of(&m);
    assert_eq!(default, State::DEFAULT);
    m.send(GoOther);
    let after = state_of(&m);
    assert_eq!(m.stats().panics, 1);
    assert!(gone.try_recv().is_err());
    // The state reached when the hook panicked is kept (the transition is not rolled back).
    assert_ne!(after, State::DEFAULT);

    // on_exit of the default state panics: DeregisterCoop applies.
    let (m, id, gone, _) = register(&h, Site::OnExit, PanicReaction::DeregisterCoop);
    m.send(GoOther);
    assert_eq!(
        recv(&gone),
        CoopDeregistered {
            coop: id,
            reason: DeregReason::Panic
        }
    );
    // Once at the transition, once more when the agent finishes while still in that state.
    assert_eq!(m.stats().panics, 2);
    assert_eq!(h.stats().panics, 3);
}

#[test]
fn a_panic_in_on_finish_still_finishes_the_coop() {
    let (_env, h) = env();
    let (m, id, gone, _) = register(&h, Site::OnFinish, PanicReaction::DeregisterCoop);
    h.deregister_coop(id, DeregReason::User(5))
        .expect("deregister");
    assert_eq!(
        recv(&gone),
        CoopDeregistered {
            coop: id,
            reason: DeregReason::User(5)
        }
    );
    assert_eq!(m.stats().panics, 1);
    assert_eq!(h.stats().panics, 1);
    assert_eq!(h.stats().agents, 0);
}

#[test]
fn a_panic_in_an_insend_handler_stays_on_the_senders_side() {
    let (_env, h) = env();
    let (m, _, gone, pings) = register(&h, Site::Insend, PanicReaction::Ignore);
    // `send` returns normally although the insend handler panicked on this thread.
    m.send(Ping);
    m.send(Ping);
    assert_eq!(pings.load(Ordering::SeqCst), 2);
    assert_eq!(m.stats().panics, 2);
    // The handler took the messages (it panicked, as a panicking queued handler's message
    // counts as handled).
    assert_eq!(m.stats().insend_handled, 2);
    assert!(gone.try_recv().is_err());
    assert_eq!(state_of(&m), State::DEFAULT);

    let (m, id, gone, _) = register(&h, Site::Insend, PanicReaction::DeregisterCoop);
    m.send(Ping);
    assert_eq!(
        recv(&gone),
        CoopDeregistered {
            coop: id,
            reason: DeregReason::Panic
        }
    );
    assert_eq!(h.stats().panics, 3);
}

/// Subscribes to `Arc<u32>` from a multi mbox through a filter that panics on 13.
struct Picky {
    topic: MultiMbox,
    got: Vec<u32>,
}
struct Got;

impl Agent for Picky {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let topic = self.topic.clone();
        def.from(&topic)
            .filter(|n: &u32| {
                if *n == 13 {
                    panic!("{EXPECTED}: filter");
                }
                true
            })
            .on(|p: &mut Picky, _: &mut Ctx<Picky>, n: Arc<u32>| p.got.push(*n))?;
        def.on_request(|p: &mut Picky, _: &mut Ctx<Picky>, _: Got| p.got.clone())?;
        Ok(())
    }
}

/// Subscribes to `Arc<u32>` without a filter.
struct Plain {
    topic: MultiMbox,
    got: Vec<u32>,
}

impl Agent for Plain {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|p: &mut Plain, _: &mut Ctx<Plain>, n: Arc<u32>| p.got.push(*n))?;
        def.on_request(|p: &mut Plain, _: &mut Ctx<Plain>, _: Got| p.got.clone())?;
        Ok(())
    }
}

#[test]
fn a_panicking_filter_rejects_only_for_its_subscriber() {
    let (_env, h) = env();
    let topic = h.create_mbox();
    let picky = h
        .register_agent(Picky {
            topic: topic.clone(),
            got: Vec::new(),
        })
        .expect("picky");
    let plain = h
        .register_agent(Plain {
            topic: topic.clone(),
            got: Vec::new(),
        })
        .expect("plain");
    for n in [12u32, 13, 14] {
        topic.send(n);
    }
    let got = |m: &Mbox| m.request::<Got, Vec<u32>>(Got, common::DEADLINE);
    assert_eq!(got(&picky), Ok(vec![12, 14]));
    assert_eq!(got(&plain), Ok(vec![12, 13, 14]));
    assert_eq!(picky.stats().panics, 1);
    assert_eq!(h.stats().panics, 1);
    assert_eq!(
        h.stats().filtered_out,
        0,
        "a panic is not a filtered-out delivery"
    );
}

/// Holds on `Hold`; limited to one queued `u64`, overflow goes through a transform that
/// panics.
struct Limited {
    gate: Gate,
    sink: Mbox,
}
struct Hold;

impl Agent for Limited {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let sink = self.sink.clone();
        def.limit::<u64>(
            1,
            Overload::transform(move |n: u64| {
                if n == 13 {
                    panic!("{EXPECTED}: transform");
                }
                Transformed::to(&sink, n)
            }),
        )?;
        def.on(|_: &mut Limited, _: &mut Ctx<Limited>, _: u64| {})?;
        def.on(|l: &mut Limited, _: &mut Ctx<Limited>, _: Hold| l.gate.pass())?;
        Ok(())
    }
}

struct Sink;
impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Sink, _: &mut Ctx<Sink>, _: u64| {})?;
        Ok(())
    }
}

#[test]
fn a_panicking_transform_does_not_panic_the_sender() {
    let (_env, h) = env();
    let sink = h.register_agent(Sink).expect("sink");
    let (g, key) = gate();
    let limited = h
        .register_agent(Limited {
            gate: g,
            sink: sink.clone(),
        })
        .expect("limited");
    limited.send(Hold);
    key.wait_entered();
    limited.send(1u64); // queued: the limit is full
    let sent = std::panic::catch_unwind(AssertUnwindSafe(|| limited.send(13u64)));
    assert!(sent.is_ok(), "Mbox::send panicked");
    limited.send(2u64); // transformed: the sender's thread is still sound
    key.open();
    let stats = wait_stats(&h, "the sink handled the transformed message", |_| {
        sink.stats().handled == 1
    });
    assert_eq!(stats.panics, 1);
    assert_eq!(stats.limit_transformed, 1);
    assert_eq!(limited.stats().panics, 1);
    // The thread's redirect depth was not left raised by the panic: many more transforms work.
    limited.send(Hold);
    key.wait_entered();
    limited.send(1u64);
    for _ in 0..100 {
        limited.send(2u64);
    }
    key.open();
    let stats = wait_stats(&h, "the sink handled every transformed message", |_| {
        sink.stats().handled == 101
    });
    assert_eq!(stats.redirect_loops, 0);
    assert_eq!(stats.limit_transformed, 101);
}

/// Requests a state change, then panics: the change is discarded.
struct Fickle {
    other: State,
}
struct ChangeThenPanic;

impl Agent for Fickle {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.panic_reaction(PanicReaction::Ignore);
        self.other = def.state("other")?;
        def.on(
            |f: &mut Fickle, ctx: &mut Ctx<Fickle>, _: ChangeThenPanic| {
                ctx.change_state(f.other).expect("known");
                panic!("{EXPECTED}: after change_state");
            },
        )?;
        def.in_states(&[State::DEFAULT, self.other])
            .on_request(|_: &mut Fickle, ctx: &mut Ctx<Fickle>, _: Where| ctx.state())?;
        def.on(|f: &mut Fickle, ctx: &mut Ctx<Fickle>, _: GoOther| {
            ctx.change_state(f.other).expect("known");
        })?;
        Ok(())
    }
}

#[test]
fn a_panicking_handlers_state_change_is_discarded() {
    let (_env, h) = env();
    let m = h
        .register_agent(Fickle {
            other: State::DEFAULT,
        })
        .expect("register");
    m.send(ChangeThenPanic);
    assert_eq!(state_of(&m), State::DEFAULT);
    m.send(GoOther);
    assert_ne!(
        state_of(&m),
        State::DEFAULT,
        "the positive path changes state"
    );
    assert_eq!(m.stats().panics, 1);
}
