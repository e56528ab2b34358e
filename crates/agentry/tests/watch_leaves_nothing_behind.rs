//! No watch outlives its use: a watch is removed when it fires, when its watcher unwatches it,
//! and when the incarnation that made it ends (its coop leaves, or its supervisor restarts it)
//! — `EnvStats::watches` goes back to zero, and a target leaving later sends nothing to a dead
//! watcher. Unwatching twice, or another agent's watch, is `WatchError::UnknownWatch`.

mod common;

use agentry::supervision::{Strategy, Supervision};
use agentry::{
    Agent, CoopId, Ctx, Define, DefineError, DeregReason, Env, Mbox, WatchError, WatchId,
    watch::Terminated,
};
use common::{DEADLINE, EXPECTED, SHORT, quiet_expected_panics, wait_until};
use std::sync::mpsc;

enum Cmd {
    Watch(Mbox),
    WatchCoop(CoopId),
    Unwatch(WatchId),
    Boom,
}

/// Carries out commands; forwards what it hears.
struct Watcher {
    events: mpsc::Sender<Terminated>,
}

impl Agent for Watcher {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Watcher, _: &mut Ctx<Watcher>, t: Terminated| {
            let _ = w.events.send(t);
        })?;
        def.on_request(
            |_: &mut Watcher, ctx: &mut Ctx<Watcher>, cmd: Cmd| match cmd {
                Cmd::Watch(m) => ctx.watch(&m),
                Cmd::WatchCoop(c) => ctx.watch_coop(c),
                Cmd::Unwatch(id) => ctx.unwatch(id).map(|()| id),
                Cmd::Boom => panic!("{EXPECTED}: boom"),
            },
        )?;
        Ok(())
    }
}

struct Idle;
impl Agent for Idle {}

fn run(watcher: &Mbox, cmd: Cmd) -> Result<WatchId, WatchError> {
    watcher
        .request::<Cmd, Result<WatchId, WatchError>>(cmd, DEADLINE)
        .expect("the watcher answers")
}

fn idle(env: &Env) -> (Mbox, CoopId) {
    let mut coop = env.handle().new_coop();
    let mbox = coop.add(Idle);
    (mbox, env.handle().register_coop(coop).expect("registered"))
}

#[test]
fn unwatched_watches_never_fire() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (tx, events) = mpsc::channel();
    let watcher = env
        .handle()
        .register_agent(Watcher { events: tx })
        .expect("registered");
    let (target, coop) = idle(&env);
    for _ in 0..100 {
        let id = run(&watcher, Cmd::Watch(target.clone())).expect("watchable");
        assert_eq!(run(&watcher, Cmd::Unwatch(id)), Ok(id));
        assert_eq!(
            run(&watcher, Cmd::Unwatch(id)),
            Err(WatchError::UnknownWatch(id))
        );
    }
    let kept = run(&watcher, Cmd::WatchCoop(coop)).expect("watchable");
    assert_eq!(env.handle().stats().watches, 1);

    // Another agent cannot remove it.
    let (tx2, _events2) = mpsc::channel();
    let other = env
        .handle()
        .register_agent(Watcher { events: tx2 })
        .expect("registered");
    assert_eq!(
        run(&other, Cmd::Unwatch(kept)),
        Err(WatchError::UnknownWatch(kept))
    );

    env.handle()
        .deregister_coop(coop, DeregReason::Normal)
        .expect("registered");
    assert_eq!(events.recv_timeout(DEADLINE).map(|t| t.watch), Ok(kept));
    assert!(
        events.recv_timeout(SHORT).is_err(),
        "only the kept watch fired"
    );
    assert_eq!(env.handle().stats().watches, 0);
    env.handle().stop();
    env.run();
}

#[test]
fn a_dead_watchers_watches_are_dropped() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (tx, _events) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    let watcher = coop.add(Watcher { events: tx });
    let watcher_coop = env.handle().register_coop(coop).expect("registered");
    let (target, target_coop) = idle(&env);
    for _ in 0..10 {
        run(&watcher, Cmd::Watch(target.clone())).expect("watchable");
    }
    run(&watcher, Cmd::WatchCoop(target_coop)).expect("watchable");
    assert_eq!(env.handle().stats().watches, 11);

    env.handle()
        .deregister_coop(watcher_coop, DeregReason::Normal)
        .expect("registered");
    wait_until("the watcher is gone", || env.handle().stats().coops == 1);
    assert_eq!(env.handle().stats().watches, 0);

    let dead_letters = env.handle().stats().dead_letters;
    env.handle()
        .deregister_coop(target_coop, DeregReason::Normal)
        .expect("registered");
    wait_until("the target is gone", || env.handle().stats().coops == 0);
    assert_eq!(
        env.handle().stats().dead_letters,
        dead_letters,
        "nothing was sent to the dead watcher"
    );
    env.handle().stop();
    env.run();
}

#[test]
fn a_restart_drops_the_watches_of_the_old_incarnation() {
    quiet_expected_panics();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (tx, events) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne));
    let watcher = coop.add_supervised(move || Watcher { events: tx.clone() });
    env.handle().register_coop(coop).expect("registered");
    let (target, target_coop) = idle(&env);
    run(&watcher, Cmd::Watch(target.clone())).expect("watchable");
    assert_eq!(env.handle().stats().watches, 1);

    assert_eq!(
        watcher.request::<Cmd, Result<WatchId, WatchError>>(Cmd::Boom, DEADLINE),
        Err(agentry::RequestError::HandlerPanicked)
    );
    wait_until("the watcher restarted", || watcher.stats().restarts == 1);
    assert_eq!(env.handle().stats().watches, 0);
    let fresh = run(&watcher, Cmd::Watch(target.clone())).expect("watchable");
    env.handle()
        .deregister_coop(target_coop, DeregReason::Normal)
        .expect("registered");
    assert_eq!(events.recv_timeout(DEADLINE).map(|t| t.watch), Ok(fresh));
    assert!(
        events.recv_timeout(SHORT).is_err(),
        "the old watch did not fire"
    );
    assert_eq!(env.handle().stats().watches, 0);
    env.handle().stop();
    env.run();
}
