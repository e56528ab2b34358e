//! Death watch: an agent learns, by a [`Terminated`] message, that another agent or a coop is
//! gone, and why.
//!
//! # Ground rules
//!
//! - [`Ctx::watch`](crate::Ctx::watch) watches the agent behind a direct mbox,
//!   [`Ctx::watch_coop`](crate::Ctx::watch_coop) a coop. When the target is gone, the watcher
//!   receives one [`Terminated`] per watch on its own mbox (it subscribes a handler for it like
//!   for any message; without one the message is counted as `unhandled`). A target that is
//!   already gone when the watch is made gets its `Terminated` at once — sent before `watch`
//!   returns.
//! - An agent is gone when its coop's deregistration has finished it and dropped it; the reason
//!   is its coop's [`DeregReason`](crate::DeregReason). A coop is gone when its deregistration is complete (its
//!   agents and children are gone). A supervised agent restarted by its supervisor keeps its
//!   mbox and is *not* gone (`supervision.rs`); its watchers hear of it when its last
//!   incarnation leaves with its coop.
//! - A watch is removed when it fires, by [`Ctx::unwatch`](crate::Ctx::unwatch), or when the
//!   incarnation of the watcher that made it finishes (its coop's deregistration, or a restart
//!   by its supervisor): nothing is kept for a dead watcher. `EnvStats::watches` counts the
//!   watches alive.
//! - Every watch operation and every departure runs under the environment's registry lock,
//!   and a departing agent records its reason on its mbox before its watches fire. So a watch
//!   is either registered before the departure (and fires with it) or finds the target gone
//!   (and fires at once): exactly one `Terminated` per watch that is not removed first.
//! - A coop remembers nothing once it is gone: a coop watched after it went (or a coop id of
//!   another environment) fires at once with [`ExitReason::Unknown`]. An agent's mbox keeps its
//!   reason, so a late watch of an agent gets the real one.
//!
//! ```
//! use agentry::{UserError, Agent, Ctx, Define, DefineError, DeregReason, Env, watch::ExitReason, Mbox, watch::Terminated};
//!
//! struct Worker;
//! impl Agent for Worker {}
//!
//! /// Watches a worker, deregisters the worker's coop, and stops when it hears it is gone.
//! struct Watcher { worker: Mbox, worker_coop: agentry::CoopId }
//! impl Agent for Watcher {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(|_: &mut Watcher, ctx: &mut Ctx<Watcher>, t: Terminated| {
//!             assert_eq!(t.reason, ExitReason::Normal);
//!             ctx.stop_env();
//!         })?;
//!         Ok(())
//!     }
//!     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
//!         ctx.watch(&self.worker).expect("a registered agent can be watched");
//!         ctx.env().deregister_coop(self.worker_coop, DeregReason::Normal).expect("registered");
//!         Ok(())
//!     }
//! }
//!
//! let env = Env::new().expect("env");
//! let mut coop = env.handle().new_coop();
//! let worker = coop.add(Worker);
//! let worker_coop = env.handle().register_coop(coop).expect("registered");
//! env.handle().register_agent(Watcher { worker, worker_coop }).expect("registered");
//! env.run();
//! ```

pub(crate) mod table;

pub use crate::reason::ExitReason;

use crate::ids::{CoopId, MboxId, WatchId};

/// What a watch watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WatchTarget {
    /// The agent behind this direct mbox.
    Agent(MboxId),
    /// This coop.
    Coop(CoopId),
}

/// Sent to a watcher when the target of one of its watches is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terminated {
    /// The watch (as returned by `watch` / `watch_coop`).
    pub watch: WatchId,
    /// What was watched.
    pub target: WatchTarget,
    /// Why it is gone.
    pub reason: ExitReason,
}
