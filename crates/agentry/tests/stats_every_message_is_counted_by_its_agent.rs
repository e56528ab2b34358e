//! Every message sent to an agent is counted by that agent, exactly: `handled + unhandled +
//! insend_handled + redirected + dropped == sent` — whatever its fate, and also for a message
//! that races the agent's deregistration (read "accepting" just before the agent stopped,
//! queued behind its finish demand, discarded when its turn came), as long as its mbox is
//! held. Such a message is also in `EnvStats::dead_letters`, and the agent's `refused` is its
//! share of them.

mod common;

use agentry::limit::Transformed;
use agentry::{
    Agent, AgentStats, Ctx, Define, DefineError, DeregReason, Env, InsendCtx, Mbox, PanicReaction,
    State, Tracked, limit::Overload,
};
use common::{EXPECTED, gate, on_every_dispatcher, quiet_expected_panics, recv};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

struct Work;

struct Worker;

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Worker, _: &mut Ctx<Worker>, _: Work| {})?;
        Ok(())
    }
}

/// Rounds per dispatcher configuration.
const ROUNDS: usize = 40;

/// Sends `Work` to `mbox` until told to stop, then a few more; returns how many it sent.
fn sender(mbox: Mbox, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut sent = 0;
        let mut after = 0;
        while after < 16 {
            mbox.send(Work);
            sent += 1;
            if stop.load(Ordering::Relaxed) {
                after += 1;
            }
        }
        sent
    })
}

#[test]
fn a_send_racing_the_deregistration_is_counted_by_the_agent_on_every_dispatcher() {
    let make_env = || Env::builder().autoshutdown(false).build().expect("env");
    on_every_dispatcher(make_env, |env, disp| {
        let h = env.handle().clone();
        for round in 0..ROUNDS {
            let base = h.stats().dead_letters;
            let mut coop = h.new_coop();
            let mbox = coop.add_with(Worker, &disp.binder(0));
            let (tx, gone) = mpsc::channel();
            coop.on_dereg(move |e| {
                let _ = tx.send(e);
            });
            let id = h.register_coop(coop).expect("registered");
            let stop = Arc::new(AtomicBool::new(false));
            let sending = sender(mbox.clone(), Arc::clone(&stop));
            // Deregister while the sender is in full flow.
            common::wait_until("some work handled", || mbox.stats().handled > 0);
            h.deregister_coop(id, DeregReason::Normal)
                .expect("deregister");
            stop.store(true, Ordering::Relaxed);
            let sent = sending.join().expect("sender");
            recv(&gone);
            // A raced message is discarded when the dispatcher reaches it, after the finish.
            let deadline = std::time::Instant::now() + common::DEADLINE;
            loop {
                let s = mbox.stats();
                if accounted(&s) == sent {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{} round {round}: sent {sent}, the agent counted {s:?}; env {:?}",
                    disp.name,
                    h.stats()
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let s = mbox.stats();
            assert_eq!(
                s.dropped, s.refused,
                "{} round {round}: every drop here is a refusal",
                disp.name
            );
            assert_eq!(
                h.stats().dead_letters - base,
                s.refused,
                "{} round {round}: the agent's refusals are the env's dead letters",
                disp.name
            );
        }
    });
}

/// Every message the agent took care of, whatever its fate.
fn accounted(s: &AgentStats) -> u64 {
    s.handled + s.unhandled + s.insend_handled + s.redirected + s.dropped
}

/// Handled.
struct Plain;
/// Handled only in the default state.
struct DefaultOnly;
/// Go to the state where `DefaultOnly` has no handler.
struct Away;
/// Limited to one waiting, overflow dropped.
struct Dropped;
/// Limited to one waiting, overflow redirected.
struct Redirected;
/// Limited to one waiting, overflow transformed.
struct Transformed1;
/// Handled by an insend handler, which panics on `true`.
struct Insend(bool);
/// A handler that panics (reaction `Ignore`).
struct Boom;
/// Hold the agent at its gate.
struct Hold;

struct Everything {
    gate: Option<common::Gate>,
    away: State,
    sink: Mbox,
}

impl Agent for Everything {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.away = def.state("away")?;
        def.panic_reaction(PanicReaction::Ignore)
            .track_queue_depth();
        def.in_states(&[State::DEFAULT, self.away]).on(
            |e: &mut Everything, _: &mut Ctx<Everything>, _: Hold| {
                if let Some(g) = e.gate.take() {
                    g.pass();
                }
            },
        )?;
        def.in_states(&[State::DEFAULT, self.away])
            .on(|_: &mut Everything, _: &mut Ctx<Everything>, _: Plain| {})?;
        def.on(|_: &mut Everything, _: &mut Ctx<Everything>, _: DefaultOnly| {})?;
        def.on(|e: &mut Everything, ctx: &mut Ctx<Everything>, _: Away| {
            ctx.change_state(e.away).expect("known state");
        })?;
        def.in_states(&[State::DEFAULT, self.away]).on(
            |_: &mut Everything, _: &mut Ctx<Everything>, _: Boom| panic!("{EXPECTED}: boom"),
        )?;
        for s in [State::DEFAULT, self.away] {
            def.in_states(&[s])
                .on(|_: &mut Everything, _: &mut Ctx<Everything>, _: Dropped| {})?;
            def.in_states(&[s])
                .on(|_: &mut Everything, _: &mut Ctx<Everything>, _: Redirected| {})?;
            def.in_states(&[s])
                .on(|_: &mut Everything, _: &mut Ctx<Everything>, _: Transformed1| {})?;
        }
        def.limit::<Dropped>(1, Overload::Drop)?;
        def.limit::<Redirected>(1, Overload::Redirect(self.sink.clone()))?;
        let sink = self.sink.clone();
        def.limit::<Transformed1>(
            1,
            Overload::transform(move |_: Transformed1| Transformed::to(&sink, Plain)),
        )?;
        def.insend(|_: &InsendCtx<'_>, Insend(panics): Insend| {
            assert!(!panics, "{EXPECTED}: insend");
        })?;
        Ok(())
    }
}

/// Takes anything it is sent.
struct Sink;

impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Sink, _: &mut Ctx<Sink>, _: Plain| {})?;
        def.on(|_: &mut Sink, _: &mut Ctx<Sink>, _: Redirected| {})?;
        Ok(())
    }
}

#[test]
fn every_fate_of_a_message_is_counted_by_its_agent_exactly_once() {
    quiet_expected_panics();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let sink = h.register_agent(Sink).expect("sink");
    let (g, key) = gate();
    let mut coop = h.new_coop();
    let mbox = coop.add(Everything {
        gate: Some(g),
        away: State::DEFAULT,
        sink,
    });
    let coop = h.register_coop(coop).expect("registered");
    let mut sent = 0;
    macro_rules! send {
        ($message:expr) => {{
            mbox.send($message);
            sent += 1;
        }};
    }
    send!(Hold);
    key.wait_entered();
    // While it is held: one of each limited type waits, the second meets its reaction.
    for _ in 0..2 {
        send!(Dropped);
        send!(Redirected);
        send!(Transformed1);
    }
    send!(Insend(false));
    send!(Insend(true));
    send!(Plain);
    send!(Boom);
    send!(Away);
    send!(DefaultOnly);
    // A timer's message cancelled while it waits in the queue.
    let depth = mbox.stats().queue_depth.value().expect("tracked");
    let timer = h.send_delayed(&mbox, Duration::ZERO, Plain);
    sent += 1;
    common::wait_until("the timer's message is queued", || {
        mbox.stats().queue_depth == Tracked::Value(depth + 1)
    });
    timer.cancel();
    key.open();
    common::wait_until("everything taken", || accounted(&mbox.stats()) == sent);
    let s = mbox.stats();
    assert_eq!(s.insend_handled, 2, "{s:?}");
    assert_eq!(s.unhandled, 1, "{s:?}");
    assert_eq!(s.redirected, 2, "{s:?}");
    assert_eq!(s.limit_dropped, 1, "{s:?}");
    assert_eq!(s.panics, 2, "{s:?}");
    // Refused once it is gone.
    h.deregister_coop(coop, DeregReason::Normal)
        .expect("deregister");
    common::wait_until("gone", || !mbox.is_alive());
    send!(Plain);
    assert_eq!(accounted(&mbox.stats()), sent);
    assert_eq!(mbox.stats().refused, 1);
}
