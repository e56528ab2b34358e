//! Backoff: the children of a restart start again only after the policy's delay, measured on
//! the environment's timer clock — `Fixed(d)` every time, `Exponential { first, max }` doubling
//! with each restart within the intensity window up to `max`. Driven by a manual clock: the
//! fresh incarnation starts when the clock reaches the delay, not a tick before.

mod common;

use agentry::supervision::{Backoff, Strategy, Supervision};
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, timer::Clock, timer::ManualClock};
use common::{EXPECTED, quiet_expected_panics, wait_stats, wait_until};
use std::time::Duration;

struct Boom;

struct Fragile;

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Boom| panic!("{EXPECTED}: boom"))?;
        Ok(())
    }
}

const MS: Duration = Duration::from_millis(1);

fn supervised(backoff: Backoff) -> (Env, ManualClock, Mbox) {
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env");
    let mut coop = env.handle().new_coop();
    coop.supervise(
        Supervision::new(Strategy::OneForOne)
            .intensity(10, Duration::from_secs(3600))
            .backoff(backoff),
    );
    let worker = coop.add_supervised(|| Fragile);
    env.handle().register_coop(coop).expect("registered");
    (env, clock, worker)
}

/// Fails the worker, then checks that its restart number `n` comes after exactly `delay`.
fn restarts_after(env: &Env, clock: &ManualClock, worker: &Mbox, n: u64, delay: Duration) {
    worker.send(Boom);
    // The worker stopped and the supervisor armed its backoff timer.
    wait_stats(env.handle(), "the backoff timer is scheduled", |s| {
        s.timers == 1
    });
    clock.advance(delay - MS);
    assert_eq!(
        worker.stats().restarts,
        n - 1,
        "restart {n} must wait {delay:?}"
    );
    clock.advance(MS);
    wait_until(&format!("restart {n} after {delay:?}"), || {
        worker.stats().restarts == n
    });
    assert_eq!(env.handle().stats().timers, 0);
}

#[test]
fn a_fixed_backoff_delays_every_restart_by_the_same_time() {
    quiet_expected_panics();
    let (env, clock, worker) = supervised(Backoff::Fixed(50 * MS));
    for n in 1..=3 {
        restarts_after(&env, &clock, &worker, n, 50 * MS);
    }
    env.handle().stop();
    env.run();
}

#[test]
fn an_exponential_backoff_doubles_up_to_its_cap() {
    quiet_expected_panics();
    let (env, clock, worker) = supervised(Backoff::Exponential {
        first: 100 * MS,
        max: 300 * MS,
    });
    for (n, delay) in [(1, 100), (2, 200), (3, 300), (4, 300)] {
        restarts_after(&env, &clock, &worker, n, delay * MS);
    }
    env.handle().stop();
    env.run();
}
