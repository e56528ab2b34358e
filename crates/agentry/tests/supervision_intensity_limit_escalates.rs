//! Restart intensity: a supervisor restarts at most `max_restarts` times within any window of
//! `within` (on the environment's timer clock); the failure beyond escalates — its coop is
//! deregistered with `DeregReason::Escalation` and counted in `EnvStats::escalations`.
//! Restarts older than the window no longer count.

mod common;

use agentry::supervision::{Strategy, Supervision};
use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, Mbox, timer::Clock,
    timer::ManualClock,
};
use common::{EXPECTED, quiet_expected_panics, recv, wait_until};
use std::sync::mpsc;
use std::time::Duration;

struct Boom;

struct Fragile;

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Boom| panic!("{EXPECTED}: boom"))?;
        Ok(())
    }
}

fn manual_env() -> (Env, ManualClock) {
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env");
    (env, clock)
}

/// Registers a coop supervising one `Fragile` worker; returns the worker and a channel that
/// gets the coop's deregistration.
fn supervised(
    env: &Env,
    policy: Supervision,
) -> (Mbox, agentry::CoopId, mpsc::Receiver<CoopDeregistered>) {
    let (tx, rx) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    coop.supervise(policy).on_dereg(move |gone| {
        let _ = tx.send(gone);
    });
    let worker = coop.add_supervised(|| Fragile);
    let id = env.handle().register_coop(coop).expect("registered");
    (worker, id, rx)
}

/// Makes the worker fail and waits for its restart number `n`.
fn fail_and_wait_restart(worker: &Mbox, n: u64) {
    worker.send(Boom);
    wait_until(&format!("restart {n}"), || worker.stats().restarts == n);
}

#[test]
fn the_failure_beyond_the_intensity_escalates() {
    quiet_expected_panics();
    let (env, _clock) = manual_env();
    let policy = Supervision::new(Strategy::OneForOne).intensity(2, Duration::from_secs(1));
    let (worker, id, gone) = supervised(&env, policy);

    fail_and_wait_restart(&worker, 1);
    fail_and_wait_restart(&worker, 2);
    assert_eq!(env.handle().stats().escalations, 0);

    worker.send(Boom);
    let gone = recv(&gone);
    assert_eq!(gone.coop, id);
    assert_eq!(gone.reason, DeregReason::Escalation);
    let stats = env.handle().stats();
    assert_eq!(stats.escalations, 1);
    assert_eq!(stats.restarts, 2);
    assert_eq!(worker.stats().restarts, 2);
    assert!(!worker.is_alive(), "the escalated coop is gone");
    assert!(env.handle().supervisor_stats(id).is_none());
    env.handle().stop();
    env.run();
}

#[test]
fn zero_restarts_escalates_the_first_failure() {
    quiet_expected_panics();
    let (env, _clock) = manual_env();
    let policy = Supervision::new(Strategy::OneForOne).intensity(0, Duration::from_secs(1));
    let (worker, _, gone) = supervised(&env, policy);
    worker.send(Boom);
    assert_eq!(recv(&gone).reason, DeregReason::Escalation);
    assert_eq!(worker.stats().restarts, 0);
    env.handle().stop();
    env.run();
}

#[test]
fn restarts_older_than_the_window_no_longer_count() {
    quiet_expected_panics();
    let (env, clock) = manual_env();
    let policy = Supervision::new(Strategy::OneForOne).intensity(1, Duration::from_secs(1));
    let (worker, _, gone) = supervised(&env, policy);

    fail_and_wait_restart(&worker, 1);
    clock.advance(Duration::from_millis(999));
    worker.send(Boom);
    assert_eq!(
        recv(&gone).reason,
        DeregReason::Escalation,
        "999 ms later the first restart still counts"
    );

    let (worker, _, gone) = supervised(&env, policy);
    fail_and_wait_restart(&worker, 1);
    clock.advance(Duration::from_secs(1));
    fail_and_wait_restart(&worker, 2);
    clock.advance(Duration::from_secs(1));
    fail_and_wait_restart(&worker, 3);
    worker.send(Boom);
    assert_eq!(
        recv(&gone).reason,
        DeregReason::Escalation,
        "two failures in the same instant exceed one restart per second"
    );
    assert_eq!(env.handle().stats().escalations, 2);
    env.handle().stop();
    env.run();
}
