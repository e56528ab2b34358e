//! Priority dispatchers on one thread (SObjectizer 5's `prio_one_thread`): agents of higher
//! [`Priority`] are served first.
//!
//! The queue has one lane per priority (`engine.rs`, ground rules); an agent's demands go
//! to the lane of the priority it declared with [`Define::priority`](crate::Define::priority).
//!
//! - *Strictly ordered*: the worker always takes the next demand from the highest non-empty
//!   lane; a lower lane waits as long as a higher one has work. Demands from other threads
//!   join their lanes at least every 32 demands served.
//! - *Quoted round robin*: each round serves up to `quotes[p]` demands of lane `p`, highest
//!   priority first: higher priorities get more turns but no lane starves.
//!
//! Each agent's demands stay in one lane, so per-sender FIFO holds as on `one_thread`. Inside a
//! lane, event priorities ([`Define::event_priority`](crate::Define::event_priority)) order the
//! demands: an agent's priority ranks first, its subscriptions' priorities second.

use super::engine::Policy;
use super::one_thread::OneThreadDispatcher;
use super::{BindScope, Binder, BinderKind, PreparedBinding};
use crate::env::EnvHandle;
use crate::error::{BindError, BuildError};
use crate::priority::Priority;
use std::fmt;

/// Handle of a priority dispatcher (one worker thread).
///
/// ```
/// use agentry::{UserError, Agent, Ctx, Define, DefineError, Env, Priority, disp::PrioOneThreadDispatcher};
///
/// struct Urgent;
/// impl Agent for Urgent {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.priority(Priority::P7);
///         Ok(())
///     }
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> { ctx.stop_env(); Ok(()) }
/// }
///
/// let env = Env::new().expect("env");
/// let prio = PrioOneThreadDispatcher::strictly_ordered(env.handle(), "prio").expect("dispatcher");
/// let mut coop = env.handle().new_coop();
/// coop.add_with(Urgent, &prio.binder());
/// env.handle().register_coop(coop).expect("registered");
/// env.run();
/// ```
#[derive(Clone)]
pub struct PrioOneThreadDispatcher(OneThreadDispatcher);

impl PrioOneThreadDispatcher {
    /// A dispatcher that always serves the highest priority with work first.
    pub fn strictly_ordered(env: &EnvHandle, name: impl Into<String>) -> Result<Self, BuildError> {
        OneThreadDispatcher::spawn(
            env.inner(),
            name.into(),
            "prio_one_thread_strictly_ordered",
            Policy::Strict,
        )
        .map(PrioOneThreadDispatcher)
    }

    /// A dispatcher that serves up to `quotes[p]` demands of priority `p` per round, highest
    /// priority first (a quote of 0 counts as 1).
    pub fn quoted_round_robin(
        env: &EnvHandle,
        name: impl Into<String>,
        quotes: [usize; 8],
    ) -> Result<Self, BuildError> {
        OneThreadDispatcher::spawn(
            env.inner(),
            name.into(),
            "prio_one_thread_quoted_round_robin",
            Policy::RoundRobin(quotes),
        )
        .map(PrioOneThreadDispatcher)
    }

    /// A binder for agents served by this dispatcher (each at the priority it declared).
    pub fn binder(&self) -> Binder {
        Binder(BinderKind::Prio(self.clone()))
    }

    /// The dispatcher's counters.
    pub fn stats(&self) -> super::DispatcherStats {
        self.0.stats()
    }

    pub(crate) fn prepare(
        &self,
        scope: &mut BindScope<'_>,
        priority: Priority,
    ) -> Result<PreparedBinding, BindError> {
        self.0.prepare(scope, priority)
    }
}

impl fmt::Debug for PrioOneThreadDispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrioOneThreadDispatcher")
            .field("name", &self.0.name())
            .finish()
    }
}
