//! # Agentry
//!
//! An agent-oriented message-processing runtime: **agents** with **states** exchange typed
//! **messages** through **mboxes**; **dispatchers** run them on threads; **coops** register
//! and deregister groups of agents as one unit, inside an **environment**.
//!
//! ```
//! use agentry::{Agent, Ctx, Define, DefineError, Env};
//!
//! /// Counts pings; stops the environment at the third.
//! struct Counter { seen: u32 }
//! struct Ping;
//!
//! impl Agent for Counter {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(Counter::on_ping)?;
//!         Ok(())
//!     }
//! }
//!
//! impl Counter {
//!     fn on_ping(&mut self, ctx: &mut Ctx<Self>, _: Ping) {
//!         self.seen += 1;
//!         if self.seen == 3 {
//!             ctx.stop_env();
//!         }
//!     }
//! }
//!
//! let env = Env::new().expect("env");
//! let counter = env.handle().register_agent(Counter { seen: 0 }).expect("registered");
//! for _ in 0..3 {
//!     counter.send(Ping);
//! }
//! env.run(); // returns once the environment has stopped
//! ```
//!
//! **New here? Read the [`guide`]**: the model in order, every snippet a runnable doctest.
//!
//! ## Map of the crate
//!
//! - [`Agent`], [`Define`], [`Ctx`], [`State`]: writing agents (handlers, states, hooks).
//! - [`Mbox`] (direct, one receiver), [`MultiMbox`] (publish/subscribe): sending.
//!   [`Addr<A>`](Addr): an agent's typed address, whose sends compile only for the types of
//!   its [`protocol::Protocol`]; [`Recipient<M>`](Recipient): one message type's.
//! - [`mchain::Mchain`]: message chains, for threads that are not agents to receive
//!   from agents (and each other), with [`mchain::Select`] over several chains;
//!   [`Destination`]: anything a message can be sent to (mbox, multi mbox or chain).
//! - [`Coop`], [`Env`], [`EnvHandle`]: registering agents and running them.
//! - [`disp`]: dispatchers (which threads run which agents), each built one way
//!   (`X::builder(name)`, options, `.build(&env)`, or `X::new(&env, name)`), and
//!   [`disp::Binder`].
//! - [`Request`] and [`Mbox::request`]: synchronous request/reply with a timeout.
//! - [`timer`]: delayed and periodic messages ([`EnvHandle::send_delayed`],
//!   [`timer::TimerHandle`]), and the [`timer::ManualClock`] for deterministic tests.
//! - [`limit`]: message limits ([`limit::Overload`]); [`PanicReaction`]: what a panic in a handler does.
//! - [`EnvStats`], [`AgentStats`], [`mchain::ChainStats`]: counters — nothing is dropped without one
//!   showing it.
//! - [`testing`]: a single-threaded test environment on virtual time ([`testing::TestEnv`]),
//!   scenarios of impacts and expected reactions.
//! - [`supervision`]: coops that restart their failed children; [`watch`]: death watch
//!   ([`Ctx::watch`], [`watch::Terminated`]); [`trace`]: message delivery tracing.
//!
//! The guarantees are listed, each with the test that proves it, in `docs/SEMANTICS.md`.

#![cfg_attr(loom, allow(dead_code, unused_imports))]
#![warn(missing_docs)]
// `unsafe` is allowed only in the modules that say so where they are declared (each with
// `#[allow(unsafe_code)]`); docs/ARCHITECTURE.md lists them.
#![deny(unsafe_code)]

/// The README's example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExample;

/// An agent is moved into its coop, so it cannot be registered twice — the compiler refuses:
///
/// ```compile_fail
/// use agentry::{Agent, Env};
/// struct Worker;
/// impl Agent for Worker {}
/// let env = Env::new().expect("env");
/// let worker = Worker;
/// let mut coop = env.handle().new_coop();
/// coop.add(worker);
/// coop.add(worker); // error[E0382]: use of moved value: `worker`
/// ```
#[cfg(doctest)]
struct AgentRegisteredOnce;

#[allow(unsafe_code)]
mod sync;

#[cfg(not(loom))]
mod agent;
#[cfg(not(loom))]
mod coop;
#[cfg(not(loom))]
mod demand;
#[cfg(not(loom))]
mod destination;
#[cfg(not(loom))]
pub mod disp;
#[cfg(not(loom))]
mod env;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
pub mod guide;
#[cfg(not(loom))]
mod ids;
#[cfg(not(loom))]
pub use mbox::limit;
#[cfg(not(loom))]
mod mbox;
#[cfg(not(loom))]
pub mod mchain;
#[cfg(not(loom))]
mod message;
#[cfg(not(loom))]
mod panic_reaction;
#[cfg(not(loom))]
pub mod prelude;
#[cfg(not(loom))]
mod priority;
#[cfg(not(loom))]
pub use agent::protocol;
#[cfg(not(loom))]
mod reason;
#[cfg(not(loom))]
mod request;
#[cfg(not(loom))]
#[allow(unsafe_code)]
mod slab;
#[cfg(not(loom))]
pub mod snapshot;
#[cfg(not(loom))]
mod stats;
#[cfg(not(loom))]
pub mod supervision;
#[cfg(not(loom))]
pub mod testing;
#[cfg(not(loom))]
pub mod timer;
#[cfg(not(loom))]
pub mod trace;
#[cfg(not(loom))]
pub mod watch;

#[cfg(not(loom))]
pub use crate::{
    agent::{Addr, Agent, Ctx, Define, Definition, Filtered, FromMulti, InStates, State},
    coop::{Coop, CoopDeregistered},
    destination::Destination,
    env::{Env, EnvBuilder, EnvHandle, StillRunning, StopGuard, StopGuardId},
    error::{
        BindError, BuildError, ChainSendError, DefineError, DeregisterError, HookKind, MchainError,
        NameError, RecvAsError, RecvError, RegisterError, RequestError, SelectError, SendError,
        StartFailure, StateError, StopGuardError, TryRecvError, UserError,
    },
    error::{SupervisionError, TraceContextError, TraceError, WatchError, panic_message},
    ids::{AgentId, CoopId, MboxId, WatchId},
    mbox::{InsendCtx, Mbox, MultiMbox, Recipient},
    message::Undelivered,
    panic_reaction::PanicReaction,
    priority::Priority,
    reason::DeregReason,
    request::{PendingReply, ReplyTo, Request},
    stats::{AgentStats, AgentTypeStats, EnvStats, HandlerSampling, HandlerTimes, Tracked},
};
