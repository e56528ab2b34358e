//! Agents: objects with states that handle one message at a time.

mod addr;
pub(crate) mod cell;
mod ctx;
pub(crate) mod define;
#[allow(unsafe_code)]
mod handlers;
pub(crate) mod held;
pub(crate) mod layout;
pub mod protocol;
pub(crate) mod restart;
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
    /// Declares states, subscriptions, limits (once, at registration).
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
