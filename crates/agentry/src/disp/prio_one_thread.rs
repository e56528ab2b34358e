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
//!   priority first: higher priorities get more turns but no lane starves (every quote is at
//!   least 1: the builder refuses a 0).
//!
//! Each agent's demands stay in one lane, so per-sender FIFO holds as on `one_thread`. Inside a
//! lane, event priorities ([`Define::event_priority`](crate::Define::event_priority)) order the
//! demands: an agent's priority ranks first, its subscriptions' priorities second.

use super::engine::Policy;
use super::one_thread::OneThreadDispatcher;
use super::{BindScope, Binder, BinderKind, DispatcherEnv, PreparedBinding, check_name};
use crate::error::{BindError, BuildError};
use crate::priority::Priority;
use std::fmt;

/// Settings of a priority dispatcher ([`PrioOneThreadDispatcher::builder`]): its name and
/// how it orders the priorities (strictly, the default, or quoted round robin).
///
/// ```
/// use agentry::{BuildError, Env, disp::PrioOneThreadDispatcher};
///
/// let env = Env::new().expect("env");
/// let strict = PrioOneThreadDispatcher::builder("strict").strictly_ordered().build(env.handle());
/// assert_eq!(strict.expect("built").stats().kind, "prio_one_thread_strictly_ordered");
/// let starving = PrioOneThreadDispatcher::builder("rr")
///     .quoted_round_robin([0, 1, 1, 1, 1, 1, 1, 1])
///     .build(env.handle());
/// assert!(matches!(starving, Err(BuildError::InvalidSetting(_))));
/// ```
#[derive(Clone, Debug)]
pub struct PrioOneThreadBuilder {
    name: String,
    /// The round-robin quotes; `None`: strictly ordered.
    quotes: Option<[usize; 8]>,
}

impl PrioOneThreadBuilder {
    /// Always serve the highest priority with work first (the default).
    pub fn strictly_ordered(&mut self) -> &mut Self {
        self.quotes = None;
        self
    }

    /// Serve up to `quotes[p]` demands of priority `p` per round, highest priority first.
    /// Every quote must be at least 1 ([`build`](Self::build) refuses a 0 with
    /// [`BuildError::InvalidSetting`]).
    pub fn quoted_round_robin(&mut self, quotes: [usize; 8]) -> &mut Self {
        self.quotes = Some(quotes);
        self
    }

    /// Starts the dispatcher's thread (named `agentry-<name>`).
    pub fn build(&self, env: &impl DispatcherEnv) -> Result<PrioOneThreadDispatcher, BuildError> {
        check_name(&self.name)?;
        let (kind, policy) = match self.quotes {
            None => ("prio_one_thread_strictly_ordered", Policy::Strict),
            Some(quotes) if quotes.contains(&0) => {
                return Err(BuildError::InvalidSetting(
                    "prio_one_thread: every round-robin quote must be at least 1",
                ));
            }
            Some(quotes) => (
                "prio_one_thread_quoted_round_robin",
                Policy::RoundRobin(quotes),
            ),
        };
        OneThreadDispatcher::spawn(env.host().0, self.name.clone(), kind, policy)
            .map(PrioOneThreadDispatcher)
    }
}

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
/// let prio = PrioOneThreadDispatcher::builder("prio")
///     .quoted_round_robin([1, 1, 1, 1, 2, 2, 4, 8])
///     .build(env.handle())
///     .expect("dispatcher");
/// let mut coop = env.handle().new_coop();
/// coop.add_with(Urgent, &prio.binder());
/// env.handle().register_coop(coop).expect("registered");
/// env.run();
/// ```
#[derive(Clone)]
pub struct PrioOneThreadDispatcher(OneThreadDispatcher);

impl PrioOneThreadDispatcher {
    /// Settings for a new dispatcher named `name` (strictly ordered unless told otherwise).
    pub fn builder(name: impl Into<String>) -> PrioOneThreadBuilder {
        PrioOneThreadBuilder {
            name: name.into(),
            quotes: None,
        }
    }

    /// `builder(name).build(env)`: a strictly ordered dispatcher.
    pub fn new(env: &impl DispatcherEnv, name: impl Into<String>) -> Result<Self, BuildError> {
        Self::builder(name).build(env)
    }

    /// A binder for agents served by this dispatcher (each at the priority it declared).
    pub fn binder(&self) -> Binder {
        Binder::of(BinderKind::Prio(self.clone()))
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
