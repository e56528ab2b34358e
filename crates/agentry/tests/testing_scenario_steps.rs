//! A scenario runs its steps in order — each starts with its impact and completes when its
//! triggers have fired — and a failing step is a typed error naming the step and why.

use agentry::testing::{Scenario, StepFailure, TestEnv, TestError, Trigger};
use agentry::{Agent, Ctx, Define, DefineError, Mbox, State};
use std::time::Duration;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

struct Ping;
struct Pong;
struct Unknown;
struct Forever;

/// Answers `Ping` with `Pong` to its peer after a second; `Unknown` has no handler.
struct Player {
    peer: Option<Mbox>,
    waiting: State,
}

impl Agent for Player {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.waiting = def.state("waiting")?;
        def.on(|p: &mut Player, ctx: &mut Ctx<Player>, _: Ping| {
            if let Some(peer) = &p.peer {
                ctx.send_delayed(peer, secs(1), Pong).detach();
            }
            ctx.change_state(p.waiting).expect("own state");
        })?;
        def.in_state(self.waiting)
            .on(|_: &mut Player, ctx: &mut Ctx<Player>, _: Pong| {
                ctx.change_state(State::DEFAULT).expect("own state")
            })?;
        def.on(|_: &mut Player, ctx: &mut Ctx<Player>, _: Forever| ctx.mbox().send(Forever))?;
        Ok(())
    }
}

fn players(env: &TestEnv) -> (Mbox, Mbox) {
    let mut coop = env.handle().new_coop();
    let pinger = coop.add(Player {
        peer: None,
        waiting: State::DEFAULT,
    });
    let ponger = coop.add(Player {
        peer: Some(pinger.clone()),
        waiting: State::DEFAULT,
    });
    env.handle().register_coop(coop).expect("registered");
    (pinger, ponger)
}

#[test]
fn steps_complete_in_order_and_report_when() {
    let mut env = TestEnv::new().expect("test env");
    let (pinger, ponger) = players(&env);
    let mut scenario = Scenario::new();
    scenario
        .step("ping")
        .impact(|| ponger.send(Ping))
        .when(Trigger::reacts_to::<Ping>(&ponger).in_state("waiting"));
    scenario
        .step("pong comes back a second later")
        .when(Trigger::ignores::<Pong>(&pinger))
        .not_before(secs(1))
        .not_after(secs(1));
    scenario
        .step("ponger ends waiting")
        .impact(|| ponger.send(Pong))
        .when(Trigger::ends_in(&ponger, "default"));
    let report = env.run_scenario(scenario, secs(10)).expect("passes");
    let times: Vec<_> = report
        .steps
        .iter()
        .map(|s| (s.started, s.completed))
        .collect();
    assert_eq!(
        times,
        [
            (Duration::ZERO, Duration::ZERO),
            (Duration::ZERO, secs(1)),
            (secs(1), secs(1))
        ]
    );
    assert_eq!(
        report.completed_at("pong comes back a second later"),
        Some(secs(1))
    );
}

#[test]
fn any_and_all_combine_triggers() {
    let mut env = TestEnv::new().expect("test env");
    let (pinger, ponger) = players(&env);
    let mut scenario = Scenario::new();
    scenario
        .step("both get a message")
        .impact(|| {
            pinger.send(Unknown);
            ponger.send(Ping);
        })
        .when(Trigger::all([
            Trigger::ignores::<Unknown>(&pinger),
            Trigger::reacts_to::<Ping>(&ponger),
        ]));
    scenario
        .step("either one")
        .impact(|| ponger.send(Unknown))
        .when(Trigger::any([
            Trigger::reacts_to::<Ping>(&pinger),
            Trigger::ignores::<Unknown>(&ponger),
        ]));
    env.run_scenario(scenario, secs(1)).expect("passes");
}

#[test]
fn a_step_that_is_not_triggered_in_time_names_itself_and_what_it_waited_for() {
    let mut env = TestEnv::new().expect("test env");
    let (pinger, ponger) = players(&env);
    let mut scenario = Scenario::new();
    scenario
        .step("ping")
        .impact(|| ponger.send(Ping))
        .when(Trigger::reacts_to::<Ping>(&ponger));
    scenario
        .step("pong too soon")
        .when(Trigger::ignores::<Pong>(&pinger))
        .not_after(Duration::from_millis(999));
    match env.run_scenario(scenario, secs(10)) {
        Err(TestError::Step {
            step,
            why:
                StepFailure::NotTriggered {
                    waited,
                    waiting_for,
                },
        }) => {
            assert_eq!(step, "pong too soon");
            assert_eq!(waited, Duration::from_millis(999));
            assert_eq!(waiting_for.len(), 1);
            assert!(waiting_for[0].contains("ignores"), "{waiting_for:?}");
            assert!(waiting_for[0].ends_with("Pong"), "{waiting_for:?}");
        }
        other => panic!("expected NotTriggered, got {other:?}"),
    }
}

#[test]
fn a_step_completed_too_early_fails() {
    let mut env = TestEnv::new().expect("test env");
    let (_pinger, ponger) = players(&env);
    let mut scenario = Scenario::new();
    scenario
        .step("ping answered at once")
        .impact(|| ponger.send(Ping))
        .when(Trigger::reacts_to::<Ping>(&ponger))
        .not_before(Duration::from_millis(1));
    let error = env.run_scenario(scenario, secs(10)).expect_err("too early");
    assert_eq!(
        error,
        TestError::Step {
            step: "ping answered at once".into(),
            why: StepFailure::TooEarly {
                after: Duration::ZERO,
                not_before: Duration::from_millis(1),
            },
        }
    );
}

#[test]
fn a_step_without_trigger_and_a_runaway_step_fail_typed() {
    let mut env = TestEnv::builder().max_steps(50).build().expect("test env");
    let (pinger, _ponger) = players(&env);
    let mut scenario = Scenario::new();
    scenario
        .step("nothing to wait for")
        .impact(|| pinger.send(Ping));
    assert!(matches!(
        env.run_scenario(scenario, secs(1)),
        Err(TestError::Step { step, why: StepFailure::NoTrigger }) if step == "nothing to wait for"
    ));

    let mut scenario = Scenario::new();
    scenario
        .step("endless")
        .impact(|| pinger.send(Forever))
        .when(Trigger::reacts_to::<Ping>(&pinger));
    assert!(matches!(
        env.run_scenario(scenario, secs(1)),
        Err(TestError::Step { step, why: StepFailure::NotIdle { steps: 50 } }) if step == "endless"
    ));
}
