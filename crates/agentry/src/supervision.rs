//! Supervision: a coop restarts its failed children by a strategy, within a restart intensity,
//! with a backoff; beyond the intensity it gives up and escalates.
//!
//! # Ground rules
//!
//! - A coop supervises when it has a [`Supervision`] policy ([`Coop::supervise`](crate::Coop::supervise)). Its
//!   *children* are the agents added with a factory ([`Coop::add_supervised`](crate::Coop::add_supervised)) and the child
//!   coops added with a factory ([`Coop::add_supervised_coop`](crate::Coop::add_supervised_coop)), in the order they were added.
//!   Its supervisor is an agent of the coop (type `agentry::supervision::Supervisor`, added at
//!   registration, bound like the coop's agents, counted in `EnvStats::agents`): it makes every
//!   decision, one message at a time.
//! - A child *fails* when a supervised agent panics (reaction [`PanicReaction::Supervise`](crate::PanicReaction::Supervise): in a
//!   handler, `on_start`, a state hook or an insend handler), or when a supervised child coop is
//!   deregistered with [`DeregReason::Panic`](crate::DeregReason::Panic), [`Escalation`](crate::DeregReason::Escalation) or
//!   [`Restart`](crate::DeregReason::Restart). A child coop deregistered with `Normal` or `User` has
//!   ended and is not restarted. A failed agent handles nothing more: the messages it takes are
//!   deferred to its next incarnation (the panicking handler's own message is consumed).
//! - For each failure the supervisor picks the children to restart ([`Strategy`]): the failed
//!   one, all of them, or the failed one and those added after it. It stops them **one at a
//!   time in reverse order** (an agent's `on_finish` runs; a child coop is deregistered with
//!   `DeregReason::Restart` and waited for), waits the backoff, then starts them **one at a
//!   time in order** (a fresh agent from the factory — its `on_start` runs before the next child
//!   starts — or a fresh child coop from its factory). A failure meanwhile waits its turn.
//! - Restart intensity: at most `max_restarts` restarts within any `within` window, measured on
//!   the environment's timer clock (a [`ManualClock`](crate::timer::ManualClock) in tests). The failure
//!   that would exceed it *escalates*: the supervisor deregisters its own coop with
//!   [`DeregReason::Escalation`](crate::DeregReason::Escalation). If that coop is itself a supervised child coop, its parent's
//!   supervisor sees a failed child and applies its own policy; otherwise (a root coop, or a
//!   plain child coop) the escalation ends there, visible to the coop's listeners and watchers.
//! - Backoff: the delay before the starts of the `k`-th restart within the window —
//!   [`Backoff::None`], [`Backoff::Fixed`], or [`Backoff::Exponential`] (`first · 2^(k-1)`, at
//!   most `max`). It is a timer message to the supervisor, cancelled if the coop leaves.
//! - A restarted agent keeps its [`Mbox`] (same id, same binding, same insend
//!   handlers and message limits — a new definition must declare the same ones or the start
//!   fails) and gets a new [`AgentId`](crate::AgentId). What becomes of its messages is stated
//!   in `agent/restart.rs`: they are kept for the next incarnation.
//! - A restarted child coop gets a new [`CoopId`] (see [`SupervisorStats`]).
//! - Nothing is restarted once the supervising coop is being deregistered.
//!
//! Counters: `AgentStats::restarts` per agent, [`SupervisorStats`] per child
//! ([`EnvHandle::supervisor_stats`](crate::EnvHandle::supervisor_stats)), `EnvStats::restarts`
//! and `EnvStats::escalations` in total.
//!
//! ```
//! use agentry::supervision::{Strategy, Supervision};
//! use agentry::{Agent, Ctx, Define, DefineError, Env, UserError};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! struct Job(u32);
//! /// Panics on job 0; each incarnation counts its start.
//! struct Worker(Arc<AtomicU32>);
//! impl Agent for Worker {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(|_: &mut Worker, ctx: &mut Ctx<Worker>, Job(n): Job| {
//!             assert!(n != 0, "job 0 is poison");
//!             ctx.stop_env();
//!         })?;
//!         Ok(())
//!     }
//!     fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
//!         self.0.fetch_add(1, Ordering::SeqCst);
//!         Ok(())
//!     }
//! }
//!
//! let env = Env::new().expect("env");
//! let starts = Arc::new(AtomicU32::new(0));
//! let mut coop = env.handle().new_coop();
//! coop.supervise(Supervision::new(Strategy::OneForOne));
//! let counter = Arc::clone(&starts);
//! let worker = coop.add_supervised(move || Worker(Arc::clone(&counter)));
//! env.handle().register_coop(coop).expect("registered");
//! worker.send(Job(0)); // the first incarnation panics and is restarted
//! worker.send(Job(1)); // kept for, and handled by, the second incarnation
//! let stats = env.run();
//! assert_eq!(starts.load(Ordering::SeqCst), 2);
//! assert_eq!(stats.restarts, 1);
//! ```

pub(crate) mod supervisor;

use crate::error::SupervisionError;
use crate::ids::CoopId;
use crate::mbox::Mbox;
use parking_lot::Mutex;
use std::time::Duration;

/// Which children a supervisor restarts when one fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strategy {
    /// Only the failed child.
    OneForOne,
    /// Every child (those not ended).
    OneForAll,
    /// The failed child and every child added after it.
    RestForOne,
}

/// The delay between stopping the children of a restart and starting them again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backoff {
    /// Start again at once.
    None,
    /// Always this delay.
    Fixed(Duration),
    /// `first` for the first restart within the intensity window, doubling with each further
    /// restart within it, never more than `max`.
    Exponential {
        /// The first delay.
        first: Duration,
        /// The cap (at least `first`).
        max: Duration,
    },
}

impl Backoff {
    /// The delay before the `k`-th restart within the window (`k` ≥ 1).
    pub(crate) fn delay(&self, k: usize) -> Duration {
        match *self {
            Backoff::None => Duration::ZERO,
            Backoff::Fixed(d) => d,
            Backoff::Exponential { first, max } => {
                let doublings = u32::try_from(k.saturating_sub(1)).unwrap_or(u32::MAX);
                let factor = 2u32.checked_pow(doublings).unwrap_or(u32::MAX);
                first.saturating_mul(factor).min(max)
            }
        }
    }
}

/// A coop's supervision policy: strategy, restart intensity and backoff.
///
/// ```
/// use agentry::supervision::{Backoff, Strategy, Supervision};
/// use std::time::Duration;
/// let policy = Supervision::new(Strategy::RestForOne)
///     .intensity(5, Duration::from_secs(10))
///     .backoff(Backoff::Exponential {
///         first: Duration::from_millis(10),
///         max: Duration::from_secs(1),
///     });
/// # let _ = policy;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Supervision {
    pub(crate) strategy: Strategy,
    pub(crate) max_restarts: u32,
    pub(crate) within: Duration,
    pub(crate) backoff: Backoff,
}

impl Supervision {
    /// A policy with `strategy`, at most 3 restarts within 5 seconds, and no backoff.
    pub fn new(strategy: Strategy) -> Self {
        Supervision {
            strategy,
            max_restarts: 3,
            within: Duration::from_secs(5),
            backoff: Backoff::None,
        }
    }

    /// At most `max_restarts` restarts within any window of `within` (zero restarts: the first
    /// failure escalates). `within` must not be zero ([`SupervisionError::ZeroWindow`] at
    /// registration).
    pub fn intensity(mut self, max_restarts: u32, within: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.within = within;
        self
    }

    /// The backoff before restarted children start again.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    fn check(&self) -> Result<(), SupervisionError> {
        if self.within.is_zero() {
            return Err(SupervisionError::ZeroWindow);
        }
        if let Backoff::Exponential { first, max } = self.backoff
            && max < first
        {
            return Err(SupervisionError::BackoffCapBelowFirst { first, max });
        }
        Ok(())
    }
}

/// A supervised child, as reported by [`SupervisorStats`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Child {
    /// An agent; its mbox stays the same across restarts.
    Agent(Mbox),
    /// A child coop: its current id (`None` while it is being restarted or once it ended).
    Coop(Option<CoopId>),
}

/// One child's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildStats {
    /// The child.
    pub child: Child,
    /// Times it was restarted.
    pub restarts: u64,
}

/// A snapshot of one supervisor's counters
/// ([`EnvHandle::supervisor_stats`](crate::EnvHandle::supervisor_stats)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SupervisorStats {
    /// Its children, in the order they were added.
    pub children: Vec<ChildStats>,
    /// Restarts it carried out (one per failure handled, whatever the number of children
    /// restarted).
    pub restarts: u64,
    /// Times it escalated (at most once: escalating deregisters its coop).
    pub escalations: u64,
}

/// What a supervisor publishes for [`EnvHandle::supervisor_stats`](crate::EnvHandle::supervisor_stats).
#[derive(Default)]
pub(crate) struct SupervisorShared {
    pub(crate) stats: Mutex<SupervisorStats>,
}
