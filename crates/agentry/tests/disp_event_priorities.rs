//! Event priorities (`Define::event_priority`, `FromMulti::event_priority`): on every
//! dispatcher, queued messages of a higher event priority are handled before the queued
//! messages of lower ones; one priority keeps FIFO order; the finish demand still comes after
//! every message queued before the deregistration; on a priority dispatcher the agent's
//! priority ranks first and event priorities order the demands inside its lane; the
//! deterministic test env honours them. (Two different priorities for one subscription are a
//! typed error: `define_errors_are_typed.rs`.)

mod common;

use agentry::disp::{Binder, PrioOneThreadDispatcher};
use agentry::testing::TestEnv;
use agentry::{
    Agent, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox, MultiMbox, Priority,
};
use common::{Gate, GateKey, gate, recv};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

/// Default priority.
struct Low(u32);
/// `P2`.
struct Mid(u32);
/// `P6`.
struct High(u32);
/// Holds the agent in its handler (default priority).
struct Hold;
/// Asks for the log (default priority: it comes after everything queued before it).
struct Report;
/// Published on the topic (subscribed at `P7`).
struct Alert(u32);
/// Asks the agent to send itself `n` `Low`s, then a `High`, then `Report` (default priority).
struct FloodSelf(u32);

/// Logs what it handles, in order; reports the log on `Report` and from `on_finish`.
struct Recorder {
    log: Vec<String>,
    gate: Option<Gate>,
    topic: Option<MultiMbox>,
    agent_priority: Priority,
    out: Sender<Vec<String>>,
}

impl Recorder {
    fn new(gate: Option<Gate>, out: Sender<Vec<String>>) -> Self {
        Recorder {
            log: Vec::new(),
            gate,
            topic: None,
            agent_priority: Priority::P0,
            out,
        }
    }
}

impl Agent for Recorder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.priority(self.agent_priority)
            .event_priority::<Mid>(Priority::P2)?
            .event_priority::<High>(Priority::P6)?;
        def.on(|r: &mut Recorder, _: &mut Ctx<Recorder>, Low(n): Low| {
            r.log.push(format!("low {n}"));
        })?
        .on(|r: &mut Recorder, _: &mut Ctx<Recorder>, Mid(n): Mid| {
            r.log.push(format!("mid {n}"));
        })?
        .on(|r: &mut Recorder, _: &mut Ctx<Recorder>, High(n): High| {
            r.log.push(format!("high {n}"));
        })?
        .on(|r: &mut Recorder, _: &mut Ctx<Recorder>, _: Hold| {
            if let Some(g) = &r.gate {
                g.pass();
            }
        })?
        .on(|r: &mut Recorder, _: &mut Ctx<Recorder>, _: Report| {
            let _ = r.out.send(std::mem::take(&mut r.log));
        })?
        .on(
            |_: &mut Recorder, ctx: &mut Ctx<Recorder>, FloodSelf(n): FloodSelf| {
                for i in 0..n {
                    ctx.mbox().send(Low(i));
                }
                ctx.mbox().send(High(0));
                ctx.mbox().send(Report);
            },
        )?;
        if let Some(topic) = self.topic.clone() {
            def.from(&topic).event_priority(Priority::P7).on(
                |r: &mut Recorder, _: &mut Ctx<Recorder>, a: Arc<Alert>| {
                    r.log.push(format!("alert {}", a.0));
                },
            )?;
        }
        Ok(())
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log.push("finish".into());
        let _ = self.out.send(std::mem::take(&mut self.log));
    }
}

fn env() -> Env {
    Env::builder().autoshutdown(false).build().expect("env")
}

fn register(h: &EnvHandle, recorder: Recorder, binder: &Binder) -> (Mbox, agentry::CoopId) {
    let mut coop = h.new_coop();
    let mbox = coop.add_with(recorder, binder);
    let id = h.register_coop(coop).expect("register recorder");
    (mbox, id)
}

/// A recorder registered on `binder` (after `customise`) and held inside its `Hold` handler:
/// what the test sends now waits in its queue until `key.open()`.
struct Held {
    mbox: Mbox,
    coop: agentry::CoopId,
    key: GateKey,
    out: Receiver<Vec<String>>,
}

impl Held {
    /// Asks for the log behind what the test queued, lets the agent go, and returns what it
    /// handled, in order.
    fn release_and_report(&self) -> Vec<String> {
        self.mbox.send(Report);
        self.key.open();
        recv(&self.out)
    }
}

fn held(h: &EnvHandle, binder: &Binder, customise: impl FnOnce(&mut Recorder)) -> Held {
    let (g, key) = gate();
    let (out_tx, out) = mpsc::channel();
    let mut recorder = Recorder::new(Some(g), out_tx);
    customise(&mut recorder);
    let (mbox, coop) = register(h, recorder, binder);
    mbox.send(Hold);
    key.wait_entered();
    Held {
        mbox,
        coop,
        key,
        out,
    }
}

/// Sends a mix of priorities while the agent is held: `low i` for every i, `mid i` for every
/// third, `high i` for every seventh.
fn send_mix(to: &Mbox, n: u32) {
    for i in 0..n {
        to.send(Low(i));
        if i % 3 == 0 {
            to.send(Mid(i));
        }
        if i % 7 == 0 {
            to.send(High(i));
        }
    }
}

/// The order `send_mix` must be handled in: by priority, FIFO within one.
fn expected_mix(n: u32) -> Vec<String> {
    let high = (0..n).filter(|i| i % 7 == 0).map(|i| format!("high {i}"));
    let mid = (0..n).filter(|i| i % 3 == 0).map(|i| format!("mid {i}"));
    let low = (0..n).map(|i| format!("low {i}"));
    high.chain(mid).chain(low).collect()
}

#[test]
fn raised_messages_overtake_queued_lower_ones_on_every_dispatcher() {
    const N: u32 = 100;
    common::on_every_dispatcher(env, |env, disp| {
        let h = env.handle();
        let r = held(h, &disp.binder(0), |_| {});
        send_mix(&r.mbox, N);
        assert_eq!(r.release_and_report(), expected_mix(N), "on {}", disp.name);
        h.stop();
        common::run_env(env);
    });
}

#[test]
fn a_raised_message_overtakes_a_backlog_longer_than_a_batch_on_every_dispatcher() {
    // More queued than a dispatcher moves from its cross-thread part at once (256): the
    // raised message still comes first.
    const N: u32 = 1_000;
    common::on_every_dispatcher(env, |env, disp| {
        let h = env.handle();
        let r = held(h, &disp.binder(0), |_| {});
        for i in 0..N {
            r.mbox.send(Low(i));
        }
        r.mbox.send(High(0));
        assert_high_then_lows(&r.release_and_report(), N, disp.name);
        h.stop();
        common::run_env(env);
    });
}

#[test]
fn a_raised_message_an_agent_sends_itself_overtakes_its_own_long_backlog_on_every_dispatcher() {
    // The backlog is in the queue the agent's worker serves while it runs the handler that
    // makes it (the local part on the one-thread dispatchers, the agent's queue on a pool).
    const N: u32 = 1_000;
    common::on_every_dispatcher(env, |env, disp| {
        let h = env.handle();
        let (out_tx, out) = mpsc::channel();
        let (recorder, _) = register(h, Recorder::new(None, out_tx), &disp.binder(0));
        recorder.send(FloodSelf(N));
        assert_high_then_lows(&recv(&out), N, disp.name);
        h.stop();
        common::run_env(env);
    });
}

#[test]
fn senders_on_the_agents_own_thread_are_ordered_by_priority_too() {
    /// Sends the mix to the recorder from a handler (the dispatcher's own thread on the
    /// one-thread dispatchers: the worker's local queue).
    struct Feeder {
        to: Mbox,
    }
    struct Go;
    impl Agent for Feeder {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            def.on(|f: &mut Feeder, _: &mut Ctx<Feeder>, _: Go| {
                send_mix(&f.to, 40);
                f.to.send(Report);
            })?;
            Ok(())
        }
    }
    common::on_every_dispatcher(env, |env, disp| {
        let h = env.handle();
        let (out_tx, out) = mpsc::channel();
        let mut coop = h.new_coop();
        let to = coop.add_with(Recorder::new(None, out_tx), &disp.binder(0));
        let feeder = coop.add_with(Feeder { to }, &disp.binder(1));
        h.register_coop(coop).expect("register");
        feeder.send(Go);
        let log = recv(&out);
        // The recorder may start on the sent messages before the feeder is done (parallel
        // dispatchers): then each priority keeps its order.
        let want = expected_mix(40);
        for kind in ["high", "mid", "low"] {
            assert_eq!(
                numbers_of(&log, kind),
                numbers_of(&want, kind),
                "{kind} on {}",
                disp.name
            );
        }
        if disp.sharing != common::Sharing::Parallel {
            // The recorder cannot run before the feeder's handler returns: all were queued
            // together.
            assert_eq!(log, want, "on {}", disp.name);
        }
        h.stop();
        common::run_env(env);
    });
}

/// `high 0`, then `low 0` to `low n - 1` in order.
fn assert_high_then_lows(log: &[String], n: u32, on: &str) {
    let high = log.iter().position(|e| e == "high 0");
    assert_eq!(high, Some(0), "high 0 handled first on {on}");
    assert_eq!(
        numbers_of(log, "low"),
        (0..n).collect::<Vec<_>>(),
        "on {on}"
    );
    assert_eq!(log.len(), n as usize + 1, "on {on}");
}

/// The numbers of the `kind` entries of a log, in log order.
fn numbers_of(log: &[String], kind: &str) -> Vec<u32> {
    log.iter()
        .filter_map(|e| e.strip_prefix(kind)?.trim().parse().ok())
        .collect()
}

#[test]
fn while_the_agent_runs_each_priority_keeps_its_order_and_nothing_is_lost() {
    // The agent handles while two threads send: queues switch between sorting and plain FIFO
    // as raised messages come and go.
    const N: u32 = 3_000;
    common::on_every_dispatcher(env, |env, disp| {
        let h = env.handle();
        let (out_tx, out) = mpsc::channel();
        let (mbox, _) = register(h, Recorder::new(None, out_tx), &disp.binder(0));
        std::thread::scope(|s| {
            s.spawn(|| send_mix(&mbox, N));
            s.spawn(|| {
                for i in 0..N {
                    mbox.send(Mid(N + i));
                }
            });
        });
        mbox.send(Report);
        let log = recv(&out);
        let want = expected_mix(N);
        for kind in ["high", "low"] {
            assert_eq!(
                numbers_of(&log, kind),
                numbers_of(&want, kind),
                "{kind} on {}",
                disp.name
            );
        }
        // Two senders of `mid`: each one's numbers in order, all of them there.
        let mids = numbers_of(&log, "mid");
        let (first, second): (Vec<u32>, Vec<u32>) = mids.iter().partition(|&&m| m < N);
        assert_eq!(first, numbers_of(&want, "mid"), "mid on {}", disp.name);
        assert_eq!(
            second,
            (N..2 * N).collect::<Vec<_>>(),
            "mid on {}",
            disp.name
        );
        h.stop();
        common::run_env(env);
    });
}

#[test]
fn finish_comes_after_every_raised_message_queued_before_the_deregistration() {
    common::on_every_dispatcher(env, |env, disp| {
        let h = env.handle();
        let r = held(h, &disp.binder(0), |_| {});
        send_mix(&r.mbox, 30);
        h.deregister_coop(r.coop, DeregReason::Normal)
            .expect("deregister");
        r.key.open();
        let mut want = expected_mix(30);
        want.push("finish".into());
        assert_eq!(recv(&r.out), want, "on {}", disp.name);
        h.stop();
        common::run_env(env);
    });
}

#[test]
fn a_multi_mbox_subscription_carries_its_own_priority() {
    common::on_every_dispatcher(env, |env, disp| {
        let h = env.handle();
        let topic = h.create_mbox();
        let r = held(h, &disp.binder(0), |r| r.topic = Some(topic.clone()));
        let mbox = &r.mbox;
        mbox.send(Low(0));
        mbox.send(High(1));
        topic.send(Alert(2));
        mbox.send(Low(3));
        topic.send(Alert(4));
        mbox.send(Report);
        r.key.open();
        assert_eq!(
            recv(&r.out),
            ["alert 2", "alert 4", "high 1", "low 0", "low 3"],
            "on {}",
            disp.name
        );
        h.stop();
        common::run_env(env);
    });
}

#[test]
fn on_a_priority_dispatcher_the_agents_priority_ranks_before_event_priorities() {
    let env = env();
    let h = env.handle();
    let prio = PrioOneThreadDispatcher::new(h, "prio").expect("dispatcher");
    let (plain_tx, plain_out) = mpsc::channel();
    let (plain, _) = register(h, Recorder::new(None, plain_tx), &prio.binder());
    // Both agents share the thread; hold it inside the urgent agent.
    let r = held(h, &prio.binder(), |r| r.agent_priority = Priority::P1);
    let urgent = &r.mbox;
    // A `P6` event of a `P0` agent does not overtake a `P0` event of a `P1` agent...
    plain.send(High(0));
    plain.send(Report);
    urgent.send(Low(1));
    urgent.send(High(2));
    urgent.send(Report);
    r.key.open();
    // ...so the urgent agent's lane empties first (its events by priority), then the plain
    // agent's.
    assert_eq!(recv(&r.out), ["high 2", "low 1"]);
    assert_eq!(recv(&plain_out), ["high 0"]);
    h.stop();
    common::run_env(env);
}

#[test]
fn the_test_env_serves_event_priorities_in_order() {
    let mut env = TestEnv::new().expect("test env");
    let (out_tx, out) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    let mbox = coop.add(Recorder::new(None, out_tx));
    env.handle().register_coop(coop).expect("register");
    env.run_until_idle().expect("start");
    send_mix(&mbox, 20);
    mbox.send(Report);
    env.run_until_idle().expect("run");
    assert_eq!(out.try_recv().expect("report"), expected_mix(20));
}
