//! After a handler panics with the reaction `DeregisterCoop` or `ShutdownEnv`, the failed
//! agent handles nothing more: what was queued behind the failing message is dropped and
//! counted (`dead_letters`, the agent's `refused` and `dropped`; a request gets `AgentGone`),
//! and its `on_finish` runs once. With `Ignore` it goes on handling.

mod common;

use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, Mbox, PanicReaction,
    RequestError, Tracked,
};
use common::{EXPECTED, Gate, gate, on_every_dispatcher, quiet_expected_panics, recv};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Hold the agent at its gate.
struct Hold;
/// Panics on 0.
struct Msg(u64);
struct Probe;

/// Counts how often its `Msg` handler and its `on_finish` run.
struct Fragile {
    reaction: PanicReaction,
    gate: Option<Gate>,
    runs: Arc<AtomicU64>,
    finishes: Arc<AtomicU64>,
}

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.panic_reaction(self.reaction).track_queue_depth();
        def.on(|f: &mut Fragile, _: &mut Ctx<Fragile>, _: Hold| {
            if let Some(gate) = f.gate.take() {
                gate.pass();
            }
        })?;
        def.on(|f: &mut Fragile, _: &mut Ctx<Fragile>, Msg(n): Msg| {
            f.runs.fetch_add(1, Ordering::SeqCst);
            assert!(n != 0, "{EXPECTED}: message 0");
        })?;
        def.on_request(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Probe| ())?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.finishes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Messages queued behind the failing one.
const BEHIND: u64 = 300;

struct Run {
    mbox: Mbox,
    runs: Arc<AtomicU64>,
    finishes: Arc<AtomicU64>,
    gone: mpsc::Receiver<CoopDeregistered>,
    /// What a request queued behind the failing message got.
    probe: std::thread::JoinHandle<Result<(), RequestError>>,
}

/// Registers a `Fragile` agent, holds it at its gate, queues `Msg(0)` then `BEHIND` more
/// messages and a request, then lets it go.
fn fail_with_a_queue(env: &Env, reaction: PanicReaction, binder: &agentry::disp::Binder) -> Run {
    let h = env.handle();
    let (g, key) = gate();
    let runs = Arc::new(AtomicU64::new(0));
    let finishes = Arc::new(AtomicU64::new(0));
    let mut coop = h.new_coop();
    let mbox = coop.add_with(
        Fragile {
            reaction,
            gate: Some(g),
            runs: Arc::clone(&runs),
            finishes: Arc::clone(&finishes),
        },
        binder,
    );
    let (tx, gone) = mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    h.register_coop(coop).expect("registered");
    mbox.send(Hold);
    key.wait_entered();
    mbox.send(Msg(0));
    for n in 1..=BEHIND {
        mbox.send(Msg(n));
    }
    let probe = {
        let mbox = mbox.clone();
        std::thread::spawn(move || mbox.request::<Probe, ()>(Probe, common::DEADLINE))
    };
    // Msg(0), the messages behind it and the request wait in the queue.
    common::wait_until("the request is queued", || {
        mbox.stats().queue_depth == Tracked::Value(BEHIND + 2)
    });
    key.open();
    Run {
        mbox,
        runs,
        finishes,
        gone,
        probe,
    }
}

#[test]
fn deregister_coop_stops_the_failed_agent_on_every_dispatcher() {
    quiet_expected_panics();
    on_every_dispatcher(
        || Env::builder().autoshutdown(false).build().expect("env"),
        |env, disp| {
            let run = fail_with_a_queue(&env, PanicReaction::DeregisterCoop, &disp.binder(0));
            assert_eq!(recv(&run.gone).reason, DeregReason::Panic, "{}", disp.name);
            assert_eq!(
                run.probe.join().expect("prober"),
                Err(RequestError::AgentGone),
                "{}: a request queued behind the failure is answered AgentGone",
                disp.name
            );
            assert_eq!(
                run.runs.load(Ordering::SeqCst),
                1,
                "{}: only the failing message's handler ran",
                disp.name
            );
            assert_eq!(run.finishes.load(Ordering::SeqCst), 1, "{}", disp.name);
            let stats = run.mbox.stats();
            // Hold and the failing message were handled; the rest dropped and counted.
            assert_eq!(stats.handled, 2, "{}", disp.name);
            assert_eq!(stats.panics, 1, "{}", disp.name);
            assert_eq!(stats.dropped, BEHIND + 1, "{}", disp.name);
            assert_eq!(stats.refused, BEHIND + 1, "{}", disp.name);
            assert_eq!(
                env.handle().stats().dead_letters,
                BEHIND + 1,
                "{}",
                disp.name
            );
        },
    );
}

#[test]
fn shutdown_env_stops_the_failed_agent_too() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let run = fail_with_a_queue(
        &env,
        PanicReaction::ShutdownEnv,
        &env.handle().default_binder(),
    );
    let h = env.handle().clone();
    common::run_env(env);
    assert_eq!(recv(&run.gone).reason, DeregReason::Shutdown);
    assert_eq!(
        run.probe.join().expect("prober"),
        Err(RequestError::AgentGone)
    );
    assert_eq!(run.runs.load(Ordering::SeqCst), 1);
    assert_eq!(run.finishes.load(Ordering::SeqCst), 1);
    assert_eq!(run.mbox.stats().dropped, BEHIND + 1);
    assert_eq!(h.stats().dead_letters, BEHIND + 1);
}

#[test]
fn ignore_goes_on_handling() {
    quiet_expected_panics();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let run = fail_with_a_queue(&env, PanicReaction::Ignore, &env.handle().default_binder());
    assert_eq!(run.probe.join().expect("prober"), Ok(()));
    assert_eq!(run.runs.load(Ordering::SeqCst), BEHIND + 1);
    assert_eq!(run.mbox.stats().dropped, 0);
    assert!(run.gone.try_recv().is_err());
}
