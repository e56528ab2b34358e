//! Agents: objects with states that handle one message at a time.

mod addr;
pub(crate) mod cell;
mod ctx;
pub(crate) mod define;
pub(crate) mod define_once;
#[allow(unsafe_code)]
mod handlers;
pub(crate) mod held;
pub(crate) mod layout;
pub mod protocol;
pub(crate) mod restart;
#[allow(unsafe_code)]
mod room;
pub(crate) mod start;
mod state;

pub use addr::Addr;
pub use ctx::Ctx;
pub use define::{Define, Filtered, FromMulti, InStates};
pub use state::State;

use crate::error::{DefineError, UserError};

/// An agent: a user type whose handlers run one message at a time.
///
/// Subscriptions, states and limits are declared in [`define`](Agent::define), called once
/// when the agent's coop is registered (on the registering thread). Then `on_start` runs on
/// the agent's dispatcher before any message, handlers run as messages arrive, and
/// `on_finish` runs exactly once when the coop is deregistered. `define` and `on_start` may
/// refuse with the agent's own error ([`DefineError::user`], [`UserError`]); either rolls
/// the whole coop back (see [`EnvHandle::register_coop`](crate::EnvHandle::register_coop)).
///
/// Handlers are `Fn(&mut Self, &mut Ctx<Self>, M)`; a method `fn on_ping(&mut self, ctx:
/// &mut Ctx<Self>, m: Ping)` is one.
///
/// ```
/// use agentry::{Agent, Ctx, Env, UserError};
///
/// struct Hello;
///
/// impl Agent for Hello {
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
///         println!("hello from {}", ctx.id());
///         ctx.stop_env();
///         Ok(())
///     }
/// }
///
/// let env = Env::new().expect("env");
/// env.handle().register_agent(Hello).expect("registered");
/// env.run();
/// ```
pub trait Agent: Send + Sized + 'static {
    /// The definition of every agent of the type, when it does not depend on the agent: given,
    /// it is used instead of [`define`](Agent::define) (which is then never called).
    ///
    /// A definition that takes no agent cannot depend on one, so the environment may run it
    /// for the first agents of the type only and give every later one the same states and
    /// handlers without running it again: no handler table is built, matched or dropped per
    /// agent (two fifths of what registering a two-handler agent costs). It does so when the
    /// definition declares only states and handlers, and its handlers capture nothing (closures
    /// without captures, or methods); a definition that declares anything else (state hooks, insend
    /// handlers, limits, event priorities, multi-mbox subscriptions, a panic reaction), or a
    /// handler that captures something, simply runs for every agent, as `define` does. A
    /// supervised agent's definition runs for each incarnation.
    ///
    /// ```
    /// use agentry::{Agent, Ctx, Definition, Env, UserError};
    ///
    /// struct Count(u64);
    /// struct Counter {
    ///     total: u64,
    /// }
    ///
    /// impl Agent for Counter {
    ///     const DEFINITION: Option<Definition<Self>> = Some(|def| {
    ///         def.on(|c: &mut Counter, ctx: &mut Ctx<Counter>, Count(n): Count| {
    ///             c.total += n;
    ///             if c.total >= 10 {
    ///                 ctx.stop_env();
    ///             }
    ///         })?;
    ///         Ok(())
    ///     });
    /// }
    ///
    /// let env = Env::new().expect("env");
    /// let counter = env.handle().register_agent(Counter { total: 0 }).expect("registered");
    /// counter.send(Count(4));
    /// counter.send(Count(6));
    /// env.run();
    /// ```
    const DEFINITION: Option<Definition<Self>> = None;

    /// Declares states, subscriptions, limits (once, at registration). Not called if the type
    /// gives its [`DEFINITION`](Agent::DEFINITION).
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let _ = def;
        Ok(())
    }

    /// Runs on the agent's dispatcher before any message. An error (or a panic) means the
    /// agent cannot run: its coop is rolled back — no agent of it handles a message, the
    /// agents that had started finish — and the registration reports the failure
    /// ([`RegisterError::Start`](crate::RegisterError::Start)).
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let _ = ctx;
        Ok(())
    }

    /// Runs once when the agent leaves (its coop is deregistered), before its on_exit hooks.
    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        let _ = ctx;
    }
}

/// A definition that is the same for every agent of type `A` ([`Agent::DEFINITION`]).
pub type Definition<A> = fn(&mut Define<A>) -> Result<(), DefineError>;

/// Runs the definition of `agent`: its type's [`Agent::DEFINITION`] if it gives one, else its
/// own [`Agent::define`].
pub(crate) fn run_definition<A: Agent>(
    agent: &mut A,
    def: &mut Define<A>,
) -> Result<(), DefineError> {
    match A::DEFINITION {
        Some(definition) => definition(def),
        None => agent.define(def),
    }
}
