//! What a handler asks of its environment through its [`Ctx`]: the env itself, child coops
//! and spawned agents, its coop's deregistration, stopping the env, timers and death watch.
//!
//! These methods of `Ctx` are here, in the env's layer, because they go through the env and
//! its coops; `agent/ctx.rs` (the agents' layer) holds the rest of `Ctx` and names no coop.

use crate::agent::define::DefinitionCheck;
use crate::agent::protocol::Protocol;
use crate::agent::{Addr, Agent, Ctx};
use crate::coop::Coop;
use crate::destination::Destination;
use crate::env::EnvHandle;
use crate::error::{RegisterError, WatchError};
use crate::ids::{CoopId, WatchId};
use crate::mbox::Mbox;
use crate::reason::DeregReason;
use crate::timer::TimerHandle;
use std::time::Duration;

impl<A: Agent> Ctx<A> {
    /// The environment (a handle to it: the `Ctx` keeps none, its agent's mbox reaches it).
    pub fn env(&self) -> EnvHandle {
        EnvHandle::of(self.mbox.shared())
    }

    /// Starts deregistering this agent's coop (children first). Returns immediately.
    pub fn deregister_coop(&self, reason: DeregReason) {
        // Already deregistering is fine: the coop is on its way out either way.
        let _ = self.env().deregister_coop(self.coop(), reason);
    }

    /// Stops the environment (gracefully: stop guards first). Returns immediately.
    pub fn stop_env(&self) {
        self.env().stop();
    }

    /// A new coop whose parent is this agent's coop, and whose agents run on this agent's
    /// dispatcher unless given another ([`Coop::set_binder`], [`Coop::add_with`]): a child
    /// of an agent on a thread pool runs on that pool, a child of an active object gets a
    /// thread of its own. (A coop from [`EnvHandle::new_coop`] runs on the environment's
    /// default dispatcher.)
    pub fn child_coop(&self) -> Coop {
        let mut coop = self.env().new_coop();
        coop.set_parent(self.coop()).set_binder(&self.binder);
        coop
    }

    /// Starts `agent` alone in a new child coop of this agent's coop, on this agent's
    /// dispatcher, and returns its mbox: [`child_coop`](Self::child_coop), [`Coop::add`] and
    /// [`register_coop`](Self::register_coop) in one call, for the common case of one child.
    ///
    /// The child is an agent like any other: its id is generational, it finishes exactly
    /// once, it is deregistered before this agent's coop finishes (children first), its
    /// panics follow the panic reaction its coop inherits from this one, and when it stops
    /// itself ([`stop_self`](Self::stop_self)) its coop ends with it. As for any coop
    /// registered from a handler, a failed `on_start` is reported as its coop's
    /// deregistration ([`DeregReason::StartFailed`]); what fails before the start is a typed
    /// [`RegisterError`] here (e.g. [`RegisterError::ParentDeregistering`] once this agent's
    /// coop is leaving). Use a [`Coop`] to start several agents as one transaction.
    pub fn spawn<B: Agent>(&self, agent: B) -> Result<Mbox, RegisterError> {
        self.env().inner().register_alone(
            Some(self.coop()),
            Some(self.binder.clone()),
            Some(self.mbox.shared().class()),
            agent,
            DefinitionCheck::Unchecked,
        )
    }

    /// [`spawn`](Self::spawn), returning the child's typed address (see
    /// [`Coop::add_addr`]).
    pub fn spawn_addr<B: Protocol>(&self, agent: B) -> Result<Addr<B>, RegisterError> {
        self.env()
            .inner()
            .register_alone(
                Some(self.coop()),
                Some(self.binder.clone()),
                Some(self.mbox.shared().class()),
                agent,
                DefinitionCheck::protocol(),
            )
            .map(Addr::new)
    }

    /// Registers `coop` (typically made by [`child_coop`](Self::child_coop)).
    pub fn register_coop(&self, coop: Coop) -> Result<CoopId, RegisterError> {
        self.env().register_coop(coop)
    }

    /// Sends `message` to `to` (an mbox, a multi mbox or a chain) after `delay` (see
    /// [`EnvHandle::send_delayed`]).
    pub fn send_delayed<M: Send + 'static>(
        &self,
        to: &(impl Destination<M> + Clone),
        delay: Duration,
        message: M,
    ) -> TimerHandle {
        self.env().send_delayed(to, delay, message)
    }

    /// Sends `message` to `to` after `delay`, then every `period` (see
    /// [`EnvHandle::send_periodic`]).
    pub fn send_periodic<M: Clone + Send + 'static>(
        &self,
        to: &(impl Destination<M> + Clone),
        delay: Duration,
        period: Duration,
        message: M,
    ) -> TimerHandle {
        self.env().send_periodic(to, delay, period, message)
    }

    /// Watches the agent behind `target`: when it is gone this agent receives a
    /// [`Terminated`](crate::watch::Terminated) with the reason — at once if it is gone already (see
    /// [`watch`](crate::watch) for the rules). Errors: watching itself
    /// ([`WatchError::SelfWatch`]), an agent never registered ([`WatchError::NotRegistered`]),
    /// of another environment ([`WatchError::OtherEnv`]), or from `on_finish` and the state
    /// exits that follow it ([`WatchError::WatcherFinishing`]).
    pub fn watch(&self, target: &Mbox) -> Result<WatchId, WatchError> {
        if self.finishing {
            return Err(WatchError::WatcherFinishing);
        }
        self.env().inner().watch_agent(&self.mbox, target)
    }

    /// Watches the coop `coop`: when it is gone (deregistration complete) this agent receives
    /// a [`Terminated`](crate::watch::Terminated) with the reason; at once, with
    /// [`ExitReason::Unknown`](crate::watch::ExitReason::Unknown), if it is not registered.
    pub fn watch_coop(&self, coop: CoopId) -> Result<WatchId, WatchError> {
        if self.finishing {
            return Err(WatchError::WatcherFinishing);
        }
        Ok(self.env().inner().watch_coop(&self.mbox, coop))
    }

    /// Removes a watch this agent made; [`WatchError::UnknownWatch`] if it already fired, was
    /// removed, or is not this agent's.
    pub fn unwatch(&self, watch: WatchId) -> Result<(), WatchError> {
        self.env().inner().unwatch(&self.mbox, watch)
    }
}
