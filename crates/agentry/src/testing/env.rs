//! `TestEnv`: an environment run by the test's own thread, on virtual time.

use super::observer::{Event, Recorder};
use super::scenario::{Pending, Scenario, ScenarioReport, StepReport};
use crate::disp::Driver;
use crate::env::{Env, EnvBuilder, EnvHandle};
use crate::error::{BuildError, StepFailure, TestError, TryRecvError};
use crate::mbox::Mbox;
use crate::mchain::{Envelope, Mchain};
use crate::panic_reaction::PanicReaction;
use crate::stats::{EnvStats, HandlerSampling};
use crate::timer::{Clock, EngineKind, ManualClock};
use crate::trace::{TraceFilter, Tracer};
use parking_lot::{Condvar, Mutex};
use std::any::TypeId;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a shutdown waits (real time) for agents on other dispatchers' threads.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// Settings of a [`TestEnv`].
///
/// ```
/// use agentry::testing::TestEnv;
/// use agentry::timer::EngineKind;
///
/// let env = TestEnv::builder()
///     .timer_engine(EngineKind::Wheel)
///     .max_steps(1_000)
///     .build()
///     .expect("test env");
/// # drop(env);
/// ```
#[derive(Debug)]
pub struct TestEnvBuilder {
    env: EnvBuilder,
    max_steps: usize,
}

impl Default for TestEnvBuilder {
    fn default() -> Self {
        let mut env = Env::builder();
        env.autoshutdown(false);
        TestEnvBuilder {
            env,
            max_steps: 100_000,
        }
    }
}

impl TestEnvBuilder {
    /// The panic reaction of coops and agents that set none (default: `DeregisterCoop`).
    pub fn panic_reaction(&mut self, reaction: PanicReaction) -> &mut Self {
        self.env.panic_reaction(reaction);
        self
    }

    /// Stop when the last coop is deregistered (default: **false** in a test environment, so
    /// that a test may register and deregister coops freely).
    pub fn autoshutdown(&mut self, on: bool) -> &mut Self {
        self.env.autoshutdown(on);
        self
    }

    /// The timer engine (default: the indexed heap).
    pub fn timer_engine(&mut self, engine: EngineKind) -> &mut Self {
        self.env.timer_engine(engine);
        self
    }

    /// Message delivery tracing, as [`EnvBuilder::msg_tracing`]: the tracer sees every fate
    /// of every message on virtual time too.
    pub fn msg_tracing(&mut self, tracer: impl Tracer) -> &mut Self {
        self.env.msg_tracing(tracer);
        self
    }

    /// The initial filter of message tracing, as [`EnvBuilder::msg_trace_filter`].
    pub fn msg_trace_filter(&mut self, filter: TraceFilter) -> &mut Self {
        self.env.msg_trace_filter(filter);
        self
    }

    /// Measures every agent's handler time, as [`EnvBuilder::handler_time`].
    pub fn handler_time(&mut self, on: bool) -> &mut Self {
        self.env.handler_time(on);
        self
    }

    /// How many handler runs are timed, as [`EnvBuilder::handler_time_sampling`].
    pub fn handler_time_sampling(&mut self, sampling: HandlerSampling) -> &mut Self {
        self.env.handler_time_sampling(sampling);
        self
    }

    /// Tracks every agent's queue depth, as [`EnvBuilder::queue_depth`].
    pub fn queue_depth(&mut self, on: bool) -> &mut Self {
        self.env.queue_depth(on);
        self
    }

    /// `tracing` spans around every handler, as [`EnvBuilder::tracing_spans`].
    pub fn tracing_spans(&mut self, on: bool) -> &mut Self {
        self.env.tracing_spans(on);
        self
    }

    /// The most demands (and timer deadlines) one call may go through before it gives up
    /// with [`TestError::NotIdle`] — what turns an endless message loop into a failure
    /// (default: 100 000).
    pub fn max_steps(&mut self, steps: usize) -> &mut Self {
        self.max_steps = steps;
        self
    }

    /// Builds the environment. Fails with [`BuildError::ThreadBusy`] if the calling thread
    /// already runs a test environment (or drives a dispatcher).
    pub fn build(&mut self) -> Result<TestEnv, BuildError> {
        let clock = ManualClock::new();
        self.env.clock(Clock::Manual(clock.clone()));
        let wakeup = Arc::new(Wakeup::default());
        let w = Arc::clone(&wakeup);
        let (env, driver) = self.env.build_driven(move || w.wake())?;
        Ok(TestEnv {
            handle: env.handle().clone(),
            env: Some(env),
            driver,
            clock,
            recorder: Recorder::default(),
            max_steps: self.max_steps,
            wakeup,
        })
    }
}

/// An environment for deterministic tests: its default dispatcher runs on the test's own
/// thread, only when the test says so, and its timers run on virtual time (see the
/// [module docs](super)).
///
/// ```
/// use agentry::testing::TestEnv;
/// use agentry::{Agent, Ctx, Define, DefineError, mchain::Mchain};
/// use std::time::Duration;
///
/// /// Answers every `Ping` with a `Pong` to the chain it carries, a second later.
/// struct Ponger;
/// struct Ping(Mchain);
/// struct Pong;
///
/// impl Agent for Ponger {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|_: &mut Ponger, ctx: &mut Ctx<Ponger>, Ping(to): Ping| {
///             ctx.send_delayed(&to, Duration::from_secs(1), Pong).detach();
///         })?;
///         Ok(())
///     }
/// }
///
/// let mut env = TestEnv::new()?;
/// let ponger = env.handle().register_agent(Ponger)?;
/// let replies = Mchain::unbounded();
/// ponger.send(Ping(replies.clone()));
/// env.expect_no_message(&replies, Duration::from_millis(999))?;
/// env.expect_message::<Pong>(&replies, Duration::from_millis(1))?;
/// assert_eq!(env.now(), Duration::from_secs(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TestEnv {
    /// `None` once shut down.
    env: Option<Env>,
    handle: EnvHandle,
    driver: Driver,
    clock: ManualClock,
    recorder: Recorder,
    max_steps: usize,
    wakeup: Arc<Wakeup>,
}

/// A message's arrival at an agent, as seen by [`TestEnv::expect_delivery`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivery {
    /// When (virtual time since the environment was created).
    pub at: Duration,
    /// True if a handler ran; false if the agent had none in its state (unhandled).
    pub handled: bool,
    /// The agent's state after it.
    pub state: Option<String>,
}

/// What a drive loop's check is shown.
enum Seen<'e> {
    /// Before anything runs.
    Start,
    /// A demand just ran.
    Demand(&'e Event),
    /// Virtual time just moved (and due timers sent their messages).
    Clock,
}

impl TestEnv {
    /// A test environment with the default settings.
    pub fn new() -> Result<TestEnv, BuildError> {
        TestEnv::builder().build()
    }

    /// A builder for a test environment with custom settings.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// The environment's handle: register agents, create mboxes, schedule timers. Agents
    /// registered without a binder run on the test's thread.
    pub fn handle(&self) -> &EnvHandle {
        &self.handle
    }

    /// Virtual time since the environment was created.
    pub fn now(&self) -> Duration {
        self.clock.now()
    }

    /// Runs the next queued demand (a start, a message, a finish); false if none was queued.
    pub fn step(&mut self) -> bool {
        let ran = self.driver.step_observed(&mut self.recorder);
        self.recorder.last = None;
        ran
    }

    /// Runs demands until none is queued (without moving time); returns how many ran. Fails
    /// with [`TestError::NotIdle`] after `max_steps` demands.
    pub fn run_until_idle(&mut self) -> Result<usize, TestError> {
        let mut ran = 0;
        while self.step() {
            ran += 1;
            if ran > self.max_steps {
                return Err(TestError::NotIdle {
                    steps: self.max_steps,
                });
            }
        }
        Ok(ran)
    }

    /// Lets `by` of virtual time pass: runs what is queued, then moves the clock from one
    /// timer deadline to the next, each time sending the due messages (in deadline order) and
    /// running until idle — so what handlers schedule meanwhile fires on time too. Returns the
    /// number of demands run.
    pub fn advance(&mut self, by: Duration) -> Result<usize, TestError> {
        let until = self.now().saturating_add(by);
        let mut ran = 0;
        self.drive(until, |seen, _| {
            if let Seen::Demand(_) = seen {
                ran += 1;
            }
            None::<()>
        })?;
        Ok(ran)
    }

    /// Moves virtual time by `by` in one jump, as a stalled machine would see it: every timer
    /// due by then sends its messages (a periodic timer all its missed periods, in a burst),
    /// in deadline order, into the agents' queues — and nothing runs until
    /// [`step`](Self::step) or [`run_until_idle`](Self::run_until_idle).
    pub fn jump(&mut self, by: Duration) {
        self.move_clock(by);
    }

    /// Moves the clock; the messages the timer thread sent (and anything else other threads
    /// queued) are put behind what is queued, ahead of what the test sends next.
    fn move_clock(&mut self, by: Duration) {
        self.clock.advance(by);
        self.driver.absorb_remote();
    }

    /// The name of the state the agent behind `agent` was in after its last demand (`None`
    /// before it started and after it finished).
    pub fn state_of(&self, agent: &Mbox) -> Option<&str> {
        let id = agent.agent_id()?;
        self.recorder.states.get(&id).map(String::as_str)
    }

    /// Sends the request `query` to `agent` and runs demands (in queue order, without moving
    /// time) until the reply is there. [`TestError::NoReply`] if the queue runs dry first;
    /// a refused or failed request is [`TestError::Request`].
    pub fn request<Q: Send + 'static, R: Send + 'static>(
        &mut self,
        agent: &Mbox,
        query: Q,
    ) -> Result<R, TestError> {
        let slot = agent.send_request::<Q, R>(query)?;
        let now = self.now();
        self.drive(now, |_, _| slot.is_done().then_some(()))?;
        if !slot.is_done() {
            return Err(TestError::NoReply);
        }
        Ok(slot.wait(Duration::ZERO)?)
    }

    /// Waits (virtual time, at most `within`) until a message arrives in `chain`, takes it
    /// and checks that it is an `M`. Time stops at the arrival.
    pub fn expect_message<M: 'static>(
        &mut self,
        chain: &Mchain,
        within: Duration,
    ) -> Result<M, TestError> {
        let expected = std::any::type_name::<M>();
        let until = self.now().saturating_add(within);
        let found = self.drive(until, |_, _| match chain.try_recv() {
            Ok(envelope) => Some(Some(envelope)),
            Err(TryRecvError::Closed) => Some(None),
            Err(TryRecvError::Empty) => None,
        })?;
        match found {
            Some(Some(envelope)) => {
                envelope
                    .downcast::<M>()
                    .map_err(|e: Envelope| TestError::WrongMessage {
                        expected,
                        got: e.type_name(),
                    })
            }
            Some(None) => Err(TestError::ChainClosed { expected }),
            None => Err(TestError::NoMessage { expected, within }),
        }
    }

    /// Lets `within` of virtual time pass and checks that no message arrived in `chain`
    /// meanwhile (one that did is taken and named in [`TestError::UnexpectedMessage`]).
    pub fn expect_no_message(&mut self, chain: &Mchain, within: Duration) -> Result<(), TestError> {
        let until = self.now().saturating_add(within);
        let found = self.drive(until, |_, at| {
            chain.try_recv().ok().map(|e| TestError::UnexpectedMessage {
                got: e.type_name(),
                at,
            })
        })?;
        found.map_or(Ok(()), Err)
    }

    /// Waits (virtual time, at most `within`) until a message of type `M` (or an `Arc<M>`
    /// from a multi mbox) reaches the agent behind `agent` — handled or not. Time stops at
    /// the delivery.
    pub fn expect_delivery<M: 'static>(
        &mut self,
        agent: &Mbox,
        within: Duration,
    ) -> Result<Delivery, TestError> {
        let types = [TypeId::of::<M>(), TypeId::of::<Arc<M>>()];
        let until = self.now().saturating_add(within);
        let found = self.drive(until, |seen, at| match seen {
            Seen::Demand(e)
                if e.delivered()
                    && agent.agent_id() == Some(e.agent)
                    && e.message.is_some_and(|(t, _)| types.contains(&t)) =>
            {
                Some(Delivery {
                    at,
                    handled: e.outcome == crate::disp::execute::DemandOutcome::Handled,
                    state: e.state.clone(),
                })
            }
            _ => None,
        })?;
        found.ok_or(TestError::NoMessage {
            expected: std::any::type_name::<M>(),
            within,
        })
    }

    /// Lets `within` of virtual time pass and checks that no message reached the agent
    /// behind `agent` meanwhile.
    pub fn expect_no_delivery(&mut self, agent: &Mbox, within: Duration) -> Result<(), TestError> {
        let until = self.now().saturating_add(within);
        let found = self.drive(until, |seen, at| match seen {
            Seen::Demand(e) if e.delivered() && agent.agent_id() == Some(e.agent) => {
                Some(TestError::UnexpectedMessage {
                    got: e.message.map_or("?", |(_, name)| name),
                    at,
                })
            }
            _ => None,
        })?;
        found.map_or(Ok(()), Err)
    }

    /// Runs `scenario` step by step (see [`Scenario`]); every step must complete within
    /// `within` of virtual time from now. Returns when each step completed.
    pub fn run_scenario(
        &mut self,
        scenario: Scenario<'_>,
        within: Duration,
    ) -> Result<ScenarioReport, TestError> {
        let deadline = self.now().saturating_add(within);
        let mut report = ScenarioReport::default();
        for step in scenario.steps {
            let failed = |why| TestError::Step {
                step: step.name.clone(),
                why,
            };
            let started = self.now();
            let Some(mut pending) = Pending::new(step.triggers) else {
                return Err(failed(StepFailure::NoTrigger));
            };
            if let Some(impact) = step.impact {
                impact();
            }
            let limit = step
                .not_after
                .map_or(deadline, |d| deadline.min(started.saturating_add(d)));
            let completed = self
                .drive(limit, |seen, at| match seen {
                    Seen::Demand(event) if pending.feed(event) => Some(at),
                    _ => None,
                })
                .map_err(|e| match e {
                    TestError::NotIdle { steps } => failed(StepFailure::NotIdle { steps }),
                    other => other,
                })?;
            let Some(completed) = completed else {
                return Err(failed(StepFailure::NotTriggered {
                    waited: limit.saturating_sub(started),
                    waiting_for: pending.waiting_for(),
                }));
            };
            if let Some(not_before) = step.not_before
                && completed.saturating_sub(started) < not_before
            {
                return Err(failed(StepFailure::TooEarly {
                    after: completed.saturating_sub(started),
                    not_before,
                }));
            }
            report.steps.push(StepReport {
                name: step.name,
                started,
                completed,
            });
        }
        Ok(report)
    }

    /// Stops the environment, runs every agent's finish, and returns the final counters.
    /// [`TestError::NotStopped`] if it has not stopped after 10 s of real time (a stop guard
    /// that stays, agents on other dispatchers that do not finish); the environment is then
    /// leaked rather than waited for.
    pub fn shutdown(mut self) -> Result<EnvStats, TestError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<EnvStats, TestError> {
        let Some(env) = self.env.take() else {
            return Ok(self.handle.stats());
        };
        self.handle.stop();
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        while !self.handle.is_stopped() {
            if Instant::now() >= deadline {
                tracing::error!("a test environment could not stop; it is leaked");
                std::mem::forget(env);
                return Err(TestError::NotStopped);
            }
            if !self.step() && self.driver.prepare_to_block() {
                // Agents on other dispatchers finish on their threads; wake on a demand.
                self.wakeup.wait(Duration::from_millis(1));
                self.driver.woke_up();
            }
        }
        Ok(env.run())
    }

    /// Runs demands and moves virtual time from one timer deadline to the next, never past
    /// `until`, calling `check` first, after each demand and after each move of the clock;
    /// returns what `check` returned as soon as it returns `Some`. Once nothing is left to run
    /// before `until`, moves the clock to `until` and returns `None`.
    fn drive<T>(
        &mut self,
        until: Duration,
        mut check: impl FnMut(Seen<'_>, Duration) -> Option<T>,
    ) -> Result<Option<T>, TestError> {
        if let Some(found) = check(Seen::Start, self.now()) {
            return Ok(Some(found));
        }
        let until_ns = nanos(until);
        let mut work = 0usize;
        loop {
            if work == self.max_steps {
                return Err(TestError::NotIdle {
                    steps: self.max_steps,
                });
            }
            work += 1;
            if self.driver.step_observed(&mut self.recorder) {
                let event = self.recorder.last.take();
                if let Some(event) = event
                    && let Some(found) = check(Seen::Demand(&event), self.now())
                {
                    return Ok(Some(found));
                }
                continue;
            }
            let now = nanos(self.now());
            let to = match self.handle.inner().timers.next_deadline() {
                Some(deadline) if deadline <= until_ns => deadline.max(now),
                _ if now < until_ns => until_ns,
                _ => return Ok(None),
            };
            self.move_clock(Duration::from_nanos(to - now));
            if let Some(found) = check(Seen::Clock, self.now()) {
                return Ok(Some(found));
            }
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // Errors are logged by `finish`; a drop cannot report them.
        let _ = self.finish();
    }
}

impl fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestEnv")
            .field("now", &self.now())
            .field("driver", &self.driver)
            .finish_non_exhaustive()
    }
}

/// The driven dispatcher's wake-up: set by senders on other threads while the test
/// environment waits for them (only at shutdown).
#[derive(Debug, Default)]
struct Wakeup {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wakeup {
    fn wake(&self) {
        *self.woken.lock() = true;
        self.cv.notify_one();
    }

    fn wait(&self, at_most: Duration) {
        let mut woken = self.woken.lock();
        if !*woken {
            self.cv.wait_for(&mut woken, at_most);
        }
        *woken = false;
    }
}
