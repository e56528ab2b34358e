//! A supervision that cannot work is refused at registration with a typed error, and nothing
//! of the coop is registered: a zero intensity window, an exponential backoff capped below its
//! first delay, supervised children in a coop without a policy.

use agentry::supervision::{Backoff, Strategy, Supervision};
use agentry::{Agent, Coop, Env, RegisterError, SupervisionError};
use std::time::Duration;

struct Worker;
impl Agent for Worker {}

fn register(env: &Env, build: impl FnOnce(&mut Coop)) -> Result<agentry::CoopId, RegisterError> {
    let mut coop = env.handle().new_coop();
    build(&mut coop);
    env.handle().register_coop(coop)
}

fn supervision_error(result: Result<agentry::CoopId, RegisterError>) -> SupervisionError {
    match result {
        Err(RegisterError::Supervision(e)) => e,
        other => panic!("expected a supervision error, got {other:?}"),
    }
}

#[test]
fn misconfigured_supervision_registers_nothing() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let mut mboxes = Vec::new();

    let zero_window = register(&env, |coop| {
        coop.supervise(Supervision::new(Strategy::OneForOne).intensity(3, Duration::ZERO));
        mboxes.push(coop.add_supervised(|| Worker));
    });
    assert_eq!(supervision_error(zero_window), SupervisionError::ZeroWindow);

    let (first, max) = (Duration::from_secs(2), Duration::from_secs(1));
    let low_cap = register(&env, |coop| {
        coop.supervise(
            Supervision::new(Strategy::OneForAll).backoff(Backoff::Exponential { first, max }),
        );
        mboxes.push(coop.add_supervised(|| Worker));
    });
    assert_eq!(
        supervision_error(low_cap),
        SupervisionError::BackoffCapBelowFirst { first, max }
    );

    let no_policy = register(&env, |coop| {
        mboxes.push(coop.add_supervised(|| Worker));
        coop.add_supervised_coop(|child| {
            child.add(Worker);
        });
    });
    assert_eq!(
        supervision_error(no_policy),
        SupervisionError::NotSupervising
    );

    let stats = env.handle().stats();
    assert_eq!((stats.coops, stats.agents), (0, 0));
    assert!(
        mboxes
            .iter()
            .all(|m| !m.is_alive() && m.agent_id().is_none())
    );

    let fine = register(&env, |coop| {
        coop.supervise(Supervision::new(Strategy::RestForOne).intensity(0, Duration::from_secs(1)));
        mboxes.push(coop.add_supervised(|| Worker));
    });
    assert!(fine.is_ok(), "zero restarts is a valid intensity");
    assert_eq!(
        env.handle().stats().agents,
        2,
        "the worker and the coop's supervisor"
    );
    env.handle().stop();
    env.run();
}
