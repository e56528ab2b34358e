//! A state's time limit switches the agent to another state after a given time in it —
//! counted from entering it (its substates included), cancelled by leaving it, restarted by
//! entering it again; a change to the state the agent is already in is no transition and
//! does not restart it.
//!
//! Run in a `TestEnv` (the testing kit): the door runs on the test's thread and virtual time
//! passes only in `advance`, so "when the agent entered the state" is exact: a message the
//! test sends is handled by the next `advance` (or `run_until_idle`) before time moves.

use agentry::testing::{Scenario, TestEnv, Trigger};
use agentry::{Agent, Ctx, Define, DefineError, Mbox, State};
use std::time::Duration;

/// A door: `Open` opens it (for at most 10 s, then it closes itself); while open it may be
/// `Held` (a substate, still under the open limit); `Shut` closes it early.
#[derive(Default)]
struct Door {
    closed: State,
    open: State,
    held: State,
    visits: Vec<String>,
}

struct Open;
struct Hold;
struct Shut;
/// Asks the open door to change to `open` again: a change to the current state.
struct Reopen;
struct Where;

impl Agent for Door {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.closed = def.state("closed")?;
        self.open = def.state("open")?;
        self.held = def.substate(self.open, "held")?;
        def.start_in(self.closed)?;
        def.time_limit(self.open, Duration::from_secs(10), self.closed)?;
        for s in [self.closed, self.open, self.held] {
            def.on_enter(s, |d: &mut Door, ctx: &mut Ctx<Door>| {
                d.visits.push(ctx.state_name().to_owned());
            })?;
        }
        def.in_state(self.closed)
            .on(|d: &mut Door, ctx: &mut Ctx<Door>, _: Open| {
                ctx.change_state(d.open).expect("own state")
            })?;
        def.in_state(self.open)
            .on(|d: &mut Door, ctx: &mut Ctx<Door>, _: Hold| {
                ctx.change_state(d.held).expect("own state")
            })?;
        def.in_state(self.open)
            .on(|d: &mut Door, ctx: &mut Ctx<Door>, _: Shut| {
                ctx.change_state(d.closed).expect("own state")
            })?;
        def.in_state(self.open)
            .on(|d: &mut Door, ctx: &mut Ctx<Door>, _: Reopen| {
                ctx.change_state(d.open).expect("own state")
            })?;
        def.in_states(&[self.closed, self.open])
            .on_request(|d: &mut Door, _: &mut Ctx<Door>, _: Where| d.visits.clone())?;
        Ok(())
    }
}

fn setup() -> (TestEnv, Mbox) {
    let env = TestEnv::new().expect("test env");
    let door = env
        .handle()
        .register_agent(Door::default())
        .expect("registered");
    (env, door)
}

fn visits(env: &mut TestEnv, door: &Mbox) -> Vec<String> {
    env.request::<Where, Vec<String>>(door, Where)
        .expect("door answers")
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn the_limit_switches_state_when_it_expires_and_not_before() {
    let (mut env, door) = setup();
    let mut scenario = Scenario::new();
    scenario
        .step("opened")
        .impact(|| door.send(Open))
        .when(Trigger::reacts_to::<Open>(&door).in_state("open"));
    scenario
        .step("closes itself")
        .when(Trigger::ends_in(&door, "closed"))
        .not_before(secs(10))
        .not_after(secs(10));
    let report = env
        .run_scenario(scenario, secs(60))
        .expect("the door closes at 10 s");
    assert_eq!(report.completed_at("closes itself"), Some(secs(10)));
    // The expiry reaches the door as a message to its own mbox: `Open` and the expiry.
    let stats = door.stats();
    assert_eq!((stats.handled, stats.unhandled), (2, 0));
    assert_eq!(visits(&mut env, &door), ["closed", "open", "closed"]);
    assert_eq!(
        env.handle().stats().timers,
        0,
        "the limit's timer is gone once it fired"
    );
}

#[test]
fn leaving_the_state_cancels_the_limit() {
    let (mut env, door) = setup();
    door.send(Open);
    env.run_until_idle().expect("opened");
    assert_eq!(
        env.handle().stats().timers,
        1,
        "the limit's timer runs while the door is open"
    );
    env.advance(secs(5)).expect("advance");
    door.send(Shut);
    env.run_until_idle().expect("shut");
    assert_eq!(env.state_of(&door), Some("closed"));
    assert_eq!(
        env.handle().stats().timers,
        0,
        "the limit's timer was cancelled"
    );
    env.advance(secs(60)).expect("advance");
    assert_eq!(
        visits(&mut env, &door),
        ["closed", "open", "closed"],
        "no late switch"
    );
}

#[test]
fn entering_again_restarts_the_limit() {
    let (mut env, door) = setup();
    door.send(Open);
    env.advance(secs(8)).expect("advance");
    door.send(Shut);
    door.send(Open);
    env.advance(secs(8)).expect("advance"); // 16 s after the first opening, 8 s after the second
    assert_eq!(
        env.state_of(&door),
        Some("open"),
        "the second visit has its own 10 s"
    );
    env.advance(secs(2)).expect("advance");
    assert_eq!(env.state_of(&door), Some("closed"));
    assert_eq!(
        visits(&mut env, &door),
        ["closed", "open", "closed", "open", "closed"]
    );
}

#[test]
fn the_limit_covers_substates() {
    let (mut env, door) = setup();
    door.send(Open);
    env.advance(secs(4)).expect("advance");
    door.send(Hold);
    env.advance(secs(5)).expect("advance");
    assert_eq!(
        env.state_of(&door),
        Some("held"),
        "9 s after entering `open`"
    );
    env.advance(secs(1)).expect("advance");
    assert_eq!(
        visits(&mut env, &door),
        ["closed", "open", "held", "closed"],
        "10 s after entering `open`"
    );
}

#[test]
fn a_change_to_the_current_state_does_not_restart_the_limit() {
    let (mut env, door) = setup();
    door.send(Open);
    env.run_until_idle().expect("opened");
    env.advance(secs(6)).expect("advance");
    door.send(Reopen);
    env.run_until_idle().expect("reopened");
    assert_eq!(env.state_of(&door), Some("open"));
    env.advance(secs(4)).expect("advance");
    assert_eq!(
        env.state_of(&door),
        Some("closed"),
        "the limit still counts from the first entry"
    );
    assert_eq!(
        visits(&mut env, &door),
        ["closed", "open", "closed"],
        "no hook ran for the change to the current state"
    );
}
