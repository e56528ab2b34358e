//! A state's time limit switches the agent to another state after a given time in it —
//! counted from entering it (its substates included), cancelled by leaving it, restarted by
//! entering it again. Driven by a manual clock.
//!
//! Sends are asynchronous: a test waits (`visits`) until a state change has happened before it
//! moves virtual time, since a limit counts from the moment the agent enters the state.

mod common;

use agentry::{Agent, Clock, Ctx, Define, DefineError, Env, ManualClock, Mbox, State};
use common::DEADLINE;
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
struct Where;

impl Agent for Door {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.closed = def.state("closed")?;
        self.open = def.state("open")?;
        self.held = def.substate(self.open, "held")?;
        def.start_in(self.closed)?;
        def.time_limit(self.open, Duration::from_secs(10), self.closed)?;
        for s in [self.closed, self.open, self.held] {
            def.on_enter(s, move |d: &mut Door, ctx: &mut Ctx<Door>| {
                let name = if ctx.state() == d.closed {
                    "closed"
                } else if ctx.state() == d.open {
                    "open"
                } else {
                    "held"
                };
                d.visits.push(name.to_owned());
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
        def.in_states(&[self.closed, self.open])
            .on_request(|d: &mut Door, _: &mut Ctx<Door>, _: Where| d.visits.clone())?;
        Ok(())
    }
}

fn setup() -> (Env, ManualClock, Mbox) {
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env");
    let door = env
        .handle()
        .register_agent(Door::default())
        .expect("registered");
    (env, clock, door)
}

fn visits(door: &Mbox) -> Vec<String> {
    door.request::<Where, Vec<String>>(Where, DEADLINE)
        .expect("door answers")
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn the_limit_switches_state_when_it_expires_and_not_before() {
    let (env, clock, door) = setup();
    door.send(Open);
    assert_eq!(visits(&door), ["closed", "open"]);
    assert_eq!(
        env.handle().stats().timers,
        1,
        "the limit's timer runs while the door is open"
    );
    clock.advance(secs(9));
    assert_eq!(visits(&door), ["closed", "open"], "still open at 9 s");
    clock.advance(secs(1));
    assert_eq!(
        visits(&door),
        ["closed", "open", "closed"],
        "closed itself at 10 s"
    );
    env.handle().stop();
}

#[test]
fn leaving_the_state_cancels_the_limit() {
    let (env, clock, door) = setup();
    door.send(Open);
    assert_eq!(visits(&door), ["closed", "open"]);
    clock.advance(secs(5));
    door.send(Shut);
    assert_eq!(visits(&door), ["closed", "open", "closed"]);
    assert_eq!(
        env.handle().stats().timers,
        0,
        "the limit's timer was cancelled"
    );
    clock.advance(secs(60));
    assert_eq!(
        visits(&door),
        ["closed", "open", "closed"],
        "no late switch"
    );
    env.handle().stop();
}

#[test]
fn entering_again_restarts_the_limit() {
    let (env, clock, door) = setup();
    door.send(Open);
    assert_eq!(visits(&door), ["closed", "open"]);
    clock.advance(secs(8));
    door.send(Shut);
    door.send(Open);
    assert_eq!(visits(&door), ["closed", "open", "closed", "open"]);
    clock.advance(secs(8)); // 16 s after the first opening, 8 s after the second
    assert_eq!(
        visits(&door),
        ["closed", "open", "closed", "open"],
        "the second visit has its own 10 s"
    );
    clock.advance(secs(2));
    assert_eq!(
        visits(&door),
        ["closed", "open", "closed", "open", "closed"]
    );
    env.handle().stop();
}

#[test]
fn the_limit_covers_substates() {
    let (env, clock, door) = setup();
    door.send(Open);
    assert_eq!(visits(&door), ["closed", "open"]);
    clock.advance(secs(4));
    door.send(Hold);
    assert_eq!(visits(&door), ["closed", "open", "held"]);
    clock.advance(secs(6));
    assert_eq!(
        visits(&door),
        ["closed", "open", "held", "closed"],
        "10 s after entering `open`"
    );
    env.handle().stop();
}
