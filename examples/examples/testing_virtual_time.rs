//! `testing_virtual_time` — testing an agent with the testing kit, on virtual time.
//!
//! The agent under test is a watchdog: it expects a heartbeat at least every 15 s; after 15 s
//! of silence it reports `PeerLost` (once) and goes to state `lost`; a heartbeat then brings
//! it back to `alive` and it reports `PeerBack`.
//!
//! The test runs it in a `TestEnv`: the watchdog runs on the test's thread, and time is
//! virtual — it passes only when the test says so, from one timer to the next, so a test of
//! "15 s of silence" takes microseconds and asserts the exact second.
//!
//! - `expect_no_message(&chain, d)` / `expect_message::<M>(&chain, d)`: what the agent sends
//!   to a chain (its report address), and when (`env.now()`).
//! - A `Scenario`: steps, each with an impact (here: a heartbeat) and triggers (the watchdog
//!   reacts to it, ends in a state); a failing step names itself and what it waited for.
//! - `state_of(&mbox)`: the state an agent is in.
//!
//! ```text
//! cargo run -p agentry-examples --example testing_virtual_time
//! ```

use agentry::testing::{Scenario, TestEnv, TestError, Trigger};
use agentry::{
    Agent, Ctx, Define, DefineError, State, UserError, mchain::Mchain, timer::TimerHandle,
};
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(15);

struct Heartbeat;
/// The watchdog's own timer message: no heartbeat for `PATIENCE`.
struct Silence;
struct PeerLost;
struct PeerBack;

/// Reports to `reports` when heartbeats stop and when they come back.
struct Watchdog {
    alive: State,
    lost: State,
    reports: Mchain,
    /// Dropping it (re-arming) cancels the previous deadline.
    deadline: Option<TimerHandle>,
}

impl Watchdog {
    fn new(reports: Mchain) -> Self {
        Watchdog {
            alive: State::DEFAULT,
            lost: State::DEFAULT,
            reports,
            deadline: None,
        }
    }

    fn arm(&mut self, ctx: &mut Ctx<Self>) {
        let me = ctx.mbox().clone();
        self.deadline = Some(ctx.send_delayed(&me, PATIENCE, Silence));
    }
}

impl Agent for Watchdog {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.alive = def.state("alive")?;
        self.lost = def.state("lost")?;
        def.start_in(self.alive)?;
        def.in_state(self.alive)
            .on(|w: &mut Watchdog, ctx: &mut Ctx<Watchdog>, _: Heartbeat| w.arm(ctx))?
            .in_state(self.alive)
            .on(|w: &mut Watchdog, ctx: &mut Ctx<Watchdog>, _: Silence| {
                w.reports.send(PeerLost);
                ctx.change_state(w.lost).expect("own state");
            })?;
        def.in_state(self.lost)
            .on(|w: &mut Watchdog, ctx: &mut Ctx<Watchdog>, _: Heartbeat| {
                w.reports.send(PeerBack);
                ctx.change_state(w.alive).expect("own state");
                w.arm(ctx);
            })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.arm(ctx);
        Ok(())
    }
}

/// What the test observed.
#[derive(Debug, PartialEq)]
struct Observed {
    /// When `PeerLost` was reported (virtual time).
    lost_at: Duration,
    /// The watchdog's state right after.
    state_when_lost: Option<String>,
    /// When the step "comes back" completed.
    back_at: Option<Duration>,
    /// Reports left over at the end (there should be none).
    leftover: usize,
}

/// The test, as a function returning what it saw (the `#[test]` below asserts it).
fn run() -> Result<Observed, TestError> {
    let mut env = TestEnv::new().expect("a test environment on this thread");
    let reports = Mchain::unbounded();
    let dog = env
        .handle()
        .register_agent(Watchdog::new(reports.clone()))
        .expect("registered");

    // Heartbeats every 10 s keep it quiet: nothing is reported for 30 s.
    for _ in 0..3 {
        dog.send(Heartbeat);
        env.expect_no_message(&reports, Duration::from_secs(10))?;
    }
    // Silence: reported exactly 15 s after the last heartbeat (sent at 20 s).
    env.expect_message::<PeerLost>(&reports, Duration::from_secs(60))?;
    let lost_at = env.now();
    let state_when_lost = env.state_of(&dog).map(str::to_owned);

    let mut scenario = Scenario::new();
    scenario
        .step("comes back")
        .impact(|| dog.send(Heartbeat))
        .when(Trigger::reacts_to::<Heartbeat>(&dog).in_state("alive"));
    scenario
        .step("lost again after 15 s")
        .when(Trigger::reacts_to::<Silence>(&dog).in_state("lost"))
        .not_before(PATIENCE)
        .not_after(PATIENCE);
    let report = env.run_scenario(scenario, Duration::from_secs(60))?;
    env.expect_message::<PeerBack>(&reports, Duration::ZERO)?;
    env.expect_message::<PeerLost>(&reports, Duration::ZERO)?;
    Ok(Observed {
        lost_at,
        state_when_lost,
        back_at: report.completed_at("comes back"),
        leftover: reports.len(),
    })
}

fn main() {
    match run() {
        Ok(observed) => println!("{observed:#?}"),
        Err(e) => println!("the test failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{Observed, run};
    use agentry_examples::{TEST_DEADLINE, within};
    use std::time::Duration;

    #[test]
    fn the_watchdog_reports_silence_after_exactly_15_s() {
        let observed = within(TEST_DEADLINE, run).expect("every expectation held");
        assert_eq!(
            observed,
            Observed {
                lost_at: Duration::from_secs(35),
                state_when_lost: Some("lost".to_owned()),
                back_at: Some(Duration::from_secs(35)),
                leftover: 0,
            }
        );
    }
}
