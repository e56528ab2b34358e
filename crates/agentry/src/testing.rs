//! The testing kit: deterministic, single-threaded tests of agents on virtual time.
//!
//! A [`TestEnv`] is an environment whose default dispatcher is driven by the test's own
//! thread and whose timers run on a [`ManualClock`](crate::timer::ManualClock) only it moves. Nothing
//! runs behind the test's back: a demand runs when the test calls [`step`](TestEnv::step),
//! [`run_until_idle`](TestEnv::run_until_idle) or one of the waiting helpers, and virtual time
//! passes only in [`advance`](TestEnv::advance) (or [`jump`](TestEnv::jump)), so a test
//! asserts exact counts, orders, states and times — and never sleeps.
//!
//! ```
//! use agentry::testing::TestEnv;
//! use agentry::{Agent, Ctx, Define, DefineError, State};
//! use std::time::Duration;
//!
//! /// Turns itself off 5 minutes after it was switched on.
//! struct Heater { on: State, off: State }
//! struct SwitchOn;
//!
//! impl Agent for Heater {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         self.off = def.state("off")?;
//!         self.on = def.state("on")?;
//!         def.start_in(self.off)?;
//!         def.time_limit(self.on, Duration::from_secs(300), self.off)?;
//!         def.in_state(self.off).on(|h: &mut Heater, ctx: &mut Ctx<Heater>, _: SwitchOn| {
//!             ctx.change_state(h.on).expect("own state")
//!         })?;
//!         Ok(())
//!     }
//! }
//!
//! let mut env = TestEnv::new()?;
//! let heater = env
//!     .handle()
//!     .register_agent(Heater { on: State::DEFAULT, off: State::DEFAULT })?;
//! heater.send(SwitchOn);
//! env.run_until_idle()?;
//! assert_eq!(env.state_of(&heater), Some("on"));
//! env.advance(Duration::from_secs(299))?;
//! assert_eq!(env.state_of(&heater), Some("on"));
//! env.advance(Duration::from_secs(1))?;
//! assert_eq!(env.state_of(&heater), Some("off"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Ground rules
//!
//! - **One thread.** Agents registered without a binder run on the test's thread (the env's
//!   default dispatcher is a driven one-thread dispatcher); sends from the test go to their
//!   queue directly. A thread runs at most one test environment. Agents bound to other
//!   dispatchers run on real threads, outside the kit's control.
//! - **Order.** Demands run one at a time in the dispatcher's FIFO order; a message sent from
//!   the test before another is handled before it. When the clock moves, the messages the
//!   timers sent are queued behind what was queued and ahead of what the test sends next.
//! - **Virtual time.** [`advance`](TestEnv::advance) lets time pass as if handlers took no
//!   time: it runs what is queued, then moves the clock to the next timer deadline, sends
//!   what is due there (in deadline order) and runs until idle, and so on until the target —
//!   a timer a handler schedules meanwhile fires on time too. [`jump`](TestEnv::jump) moves
//!   the clock in one leap and runs nothing (a periodic timer's missed periods come in a
//!   burst), like a stalled machine. The waiting helpers advance the same way and stop as soon
//!   as what they wait for happens.
//! - **Bounded.** Every call that runs demands gives up with [`TestError::NotIdle`] after
//!   `max_steps` demands and deadlines: an endless message loop fails instead of hanging.
//! - **Observed, not intercepted.** The kit sees each demand its dispatcher runs — the agent,
//!   the message type, handled or not, the agent's state after it — through the dispatcher's
//!   observer hook (`disp/execute.rs`), which production dispatchers compile out. Agents are
//!   not changed for testing.
//! - **Requests.** [`Mbox::request`](crate::Mbox::request) from the test's thread to one of
//!   its agents is refused (`SameThread`: the thread that would wait is the one that runs
//!   the agent); use [`TestEnv::request`], which runs the agent until it replies.
//! - **Shutdown.** [`TestEnv::shutdown`] (or dropping the test env) stops the environment and
//!   runs every agent's finish on the test's thread.
//!
//! # What to assert with
//!
//! - [`TestEnv::state_of`]: the state an agent is in.
//! - [`TestEnv::request`]: ask an agent (its `on_request` handlers) what it knows.
//! - [`TestEnv::expect_message`] / [`expect_no_message`](TestEnv::expect_no_message): what a
//!   [`Mchain`](crate::mchain::Mchain) receives — give the chain to the agent as its reply address, or
//!   [`subscribe`](crate::mchain::Mchain::subscribe) it to a multi mbox to watch what is published.
//! - [`TestEnv::expect_delivery`] / [`expect_no_delivery`](TestEnv::expect_no_delivery):
//!   what reaches an agent.
//! - [`Scenario`]: steps, each with an impact (a send) and [`Trigger`]s (agents' reactions,
//!   states), with time constraints; failures name the step and what it still waited for.

mod env;
mod observer;
mod scenario;

pub use crate::error::{StepFailure, TestError};
pub use env::{Delivery, TestEnv, TestEnvBuilder};
pub use scenario::{Scenario, ScenarioReport, StepBuilder, StepReport, Trigger};
