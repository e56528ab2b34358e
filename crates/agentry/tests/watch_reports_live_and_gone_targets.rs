//! Death watch: an agent watching another agent or a coop receives `Terminated` with the reason
//! when the target is gone — and at once if it was gone already (an agent's mbox keeps its real
//! reason; a coop gone before the watch reports `Unknown`). A supervised agent's restart is not
//! a departure: its watchers hear only of its last incarnation. Wrong uses are typed errors.

mod common;

use agentry::supervision::{Strategy, Supervision};
use agentry::{
    Agent, CoopId, Ctx, Define, DefineError, DeregReason, Env, Mbox, WatchError, WatchId,
    watch::ExitReason, watch::Terminated, watch::WatchTarget,
};
use common::{DEADLINE, EXPECTED, quiet_expected_panics, recv, wait_until};
use std::sync::mpsc;

/// Watch requests, answered with the outcome.
struct WatchAgent(Mbox);
struct WatchCoop(CoopId);
struct Boom;

struct Watcher {
    events: mpsc::Sender<Terminated>,
}

impl Agent for Watcher {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Watcher, _: &mut Ctx<Watcher>, t: Terminated| {
            w.events.send(t).expect("the test listens")
        })?;
        def.on_request(
            |_: &mut Watcher, ctx: &mut Ctx<Watcher>, WatchAgent(m): WatchAgent| ctx.watch(&m),
        )?;
        def.on_request(
            |_: &mut Watcher, ctx: &mut Ctx<Watcher>, WatchCoop(c): WatchCoop| ctx.watch_coop(c),
        )?;
        Ok(())
    }
}

struct Worker;

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Worker, _: &mut Ctx<Worker>, _: Boom| panic!("{EXPECTED}: boom"))?;
        Ok(())
    }
}

fn watcher(env: &Env) -> (Mbox, mpsc::Receiver<Terminated>) {
    let (tx, rx) = mpsc::channel();
    let mbox = env
        .handle()
        .register_agent(Watcher { events: tx })
        .expect("registered");
    (mbox, rx)
}

fn watch(watcher: &Mbox, target: &Mbox) -> Result<WatchId, WatchError> {
    watcher
        .request::<WatchAgent, Result<WatchId, WatchError>>(WatchAgent(target.clone()), DEADLINE)
        .expect("the watcher answers")
}

fn watch_coop(watcher: &Mbox, coop: CoopId) -> WatchId {
    watcher
        .request::<WatchCoop, Result<WatchId, WatchError>>(WatchCoop(coop), DEADLINE)
        .expect("the watcher answers")
        .expect("a coop can always be watched")
}

/// A coop holding one worker.
fn worker(env: &Env) -> (Mbox, CoopId) {
    let mut coop = env.handle().new_coop();
    let mbox = coop.add(Worker);
    (mbox, env.handle().register_coop(coop).expect("registered"))
}

#[test]
fn a_live_agent_and_coop_report_their_departure_with_the_reason() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (w, events) = watcher(&env);
    let (target, coop) = worker(&env);
    let on_agent = watch(&w, &target).expect("watchable");
    let on_coop = watch_coop(&w, coop);
    assert_eq!(env.handle().stats().watches, 2);
    env.handle()
        .deregister_coop(coop, DeregReason::User(7))
        .expect("registered");
    let mut got = vec![recv(&events), recv(&events)];
    got.sort_by_key(|t| t.watch);
    let mut want = vec![
        Terminated {
            watch: on_agent,
            target: WatchTarget::Agent(target.id()),
            reason: ExitReason::User(7),
        },
        Terminated {
            watch: on_coop,
            target: WatchTarget::Coop(coop),
            reason: ExitReason::User(7),
        },
    ];
    want.sort_by_key(|t| t.watch);
    assert_eq!(got, want);
    assert_eq!(env.handle().stats().watches, 0, "a fired watch is removed");
    env.handle().stop();
    env.run();
}

#[test]
fn targets_already_gone_report_at_once() {
    quiet_expected_panics();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (w, events) = watcher(&env);
    let (target, coop) = worker(&env);
    target.send(Boom);
    wait_until("the panicking coop is gone", || {
        env.handle().stats().coops == 1
    });

    let on_agent = watch(&w, &target).expect("a gone agent can be watched");
    assert_eq!(
        recv(&events),
        Terminated {
            watch: on_agent,
            target: WatchTarget::Agent(target.id()),
            reason: ExitReason::Panic,
        },
        "the mbox keeps the agent's reason"
    );
    let on_coop = watch_coop(&w, coop);
    assert_eq!(
        recv(&events),
        Terminated {
            watch: on_coop,
            target: WatchTarget::Coop(coop),
            reason: ExitReason::Unknown,
        }
    );
    assert_eq!(env.handle().stats().watches, 0, "nothing is kept for them");
    env.handle().stop();
    env.run();
}

#[test]
fn a_restart_is_not_a_departure() {
    quiet_expected_panics();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (w, events) = watcher(&env);
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne));
    let target = coop.add_supervised(|| Worker);
    let coop = env.handle().register_coop(coop).expect("registered");
    let watch_id = watch(&w, &target).expect("watchable");
    target.send(Boom);
    wait_until("the worker restarted", || target.stats().restarts == 1);
    assert_eq!(env.handle().stats().watches, 1, "still watched");
    env.handle()
        .deregister_coop(coop, DeregReason::Normal)
        .expect("registered");
    assert_eq!(
        recv(&events),
        Terminated {
            watch: watch_id,
            target: WatchTarget::Agent(target.id()),
            reason: ExitReason::Normal,
        }
    );
    assert!(events.try_recv().is_err(), "one message for the watch");
    env.handle().stop();
    env.run();
}

/// Tries to watch from `on_finish`.
struct LateWatcher {
    target: Mbox,
    result: mpsc::Sender<Result<WatchId, WatchError>>,
}

impl Agent for LateWatcher {
    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        self.result
            .send(ctx.watch(&self.target))
            .expect("the test listens");
    }
}

#[test]
fn wrong_uses_are_typed_errors() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (w, _events) = watcher(&env);
    assert_eq!(watch(&w, &w), Err(WatchError::SelfWatch));
    let mut never = env.handle().new_coop();
    let unregistered = never.add(Worker);
    assert_eq!(
        watch(&w, &unregistered),
        Err(WatchError::NotRegistered(unregistered.id()))
    );
    let other = Env::builder().autoshutdown(false).build().expect("env");
    let (elsewhere, _) = worker(&other);
    assert_eq!(watch(&w, &elsewhere), Err(WatchError::OtherEnv));
    let (tx, late) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    coop.add(LateWatcher {
        target: w.clone(),
        result: tx,
    });
    let coop = env.handle().register_coop(coop).expect("registered");
    env.handle()
        .deregister_coop(coop, DeregReason::Normal)
        .expect("registered");
    assert_eq!(recv(&late), Err(WatchError::WatcherFinishing));
    assert_eq!(env.handle().stats().watches, 0);
    other.handle().stop();
    other.run();
    env.handle().stop();
    env.run();
}
