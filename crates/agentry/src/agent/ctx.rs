//! `Ctx<A>`: what a handler can do besides touching its agent.

use super::Addr;
use super::Agent;
use super::layout::AgentLayout;
use super::protocol::Protocol;
use super::state::State;
use crate::coop::Coop;
use crate::destination::Destination;
use crate::disp::Binder;
use crate::env::EnvHandle;
use crate::error::{RegisterError, StateError, WatchError};
use crate::ids::{AgentId, CoopId, WatchId};
use crate::mbox::Mbox;
use crate::reason::DeregReason;
use crate::stats::AgentStats;
use crate::timer::TimerHandle;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// The context handed to every handler and hook of agent `A`.
///
/// Through it a handler learns its agent's id, own mbox and state, changes state, registers
/// child coops, deregisters its coop or stops the environment.
pub struct Ctx<A> {
    pub(crate) mbox: Mbox,
    pub(crate) id: AgentId,
    pub(crate) env: EnvHandle,
    /// The binder the agent was bound with (its child coops' default).
    pub(crate) binder: Binder,
    pub(crate) state: State,
    /// Its states and the shape of its handler table, shared with the agents of its type
    /// whose definitions produced the same (`agent/layout.rs`).
    pub(crate) layout: Arc<AgentLayout>,
    pub(crate) in_transition: bool,
    /// In `on_finish` or leaving its states for the last time (this incarnation ends).
    pub(crate) finishing: bool,
    pub(crate) pending_state: Option<State>,
    pub(crate) _agent: PhantomData<fn(&mut A)>,
}

impl<A: Agent> Ctx<A> {
    /// The agent's own direct mbox.
    pub fn mbox(&self) -> &Mbox {
        &self.mbox
    }

    /// The agent's own typed address (see [`Addr`]; an agent registered untyped was not
    /// checked against its protocol at registration — [`protocol`](crate::protocol)).
    pub fn addr(&self) -> Addr<A>
    where
        A: Protocol,
    {
        Addr::new(self.mbox.clone())
    }

    /// The agent's id.
    pub fn id(&self) -> AgentId {
        self.id
    }

    /// The agent's coop.
    pub fn coop(&self) -> CoopId {
        // Kept in the binding (the same for every incarnation), not in each context.
        self.mbox
            .shared()
            .binding()
            .expect("invariant: an agent is bound before any of its hooks or handlers runs")
            .coop
    }

    /// The environment.
    pub fn env(&self) -> &EnvHandle {
        &self.env
    }

    /// The state the agent is in.
    pub fn state(&self) -> State {
        self.state
    }

    /// The name of the state the agent is in.
    pub fn state_name(&self) -> &str {
        self.layout.states.name(self.state)
    }

    /// Switches to `state` when the current handler returns: the on_exit hooks of the states
    /// being left run (innermost first), then the on_enter hooks of the states entered
    /// (outermost first), following initial substates; the next message is handled in the new
    /// state. Calling it again in the same handler replaces the target. Not allowed inside
    /// on_enter / on_exit hooks.
    pub fn change_state(&mut self, state: State) -> Result<(), StateError> {
        if !self.layout.states.contains(state) {
            return Err(StateError::UnknownState(state.0));
        }
        if self.in_transition {
            return Err(StateError::InTransition);
        }
        self.pending_state = Some(state);
        Ok(())
    }

    /// Starts deregistering this agent's coop (children first). Returns immediately.
    pub fn deregister_coop(&self, reason: DeregReason) {
        // Already deregistering is fine: the coop is on its way out either way.
        let _ = self.env.deregister_coop(self.coop(), reason);
    }

    /// This agent stops alone: it stops accepting messages, handles what was queued before,
    /// runs `on_finish` and leaves; its watchers get `Terminated` (`ExitReason::Normal`); the
    /// rest of its coop goes on. When a coop's last agent has left this way, the coop is
    /// deregistered (children first, reason `Normal`). Returns immediately; false if the agent
    /// is finishing already, or is supervised (its supervisor decides when its children stop
    /// and restart: deregister the coop instead).
    pub fn stop_self(&self) -> bool {
        let shared = self.mbox.shared();
        if shared.binding().is_some_and(|b| b.supervisor.is_some()) {
            return false;
        }
        shared.finish()
    }

    /// Stops the environment (gracefully: stop guards first). Returns immediately.
    pub fn stop_env(&self) {
        self.env.stop();
    }

    /// A new coop whose parent is this agent's coop, and whose agents run on this agent's
    /// dispatcher unless given another ([`Coop::set_binder`], [`Coop::add_with`]): a child
    /// of an agent on a thread pool runs on that pool, a child of an active object gets a
    /// thread of its own. (A coop from [`EnvHandle::new_coop`] runs on the environment's
    /// default dispatcher.)
    pub fn child_coop(&self) -> Coop {
        let mut coop = self.env.new_coop();
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
        self.env
            .register_one(self.child_coop(), |coop| coop.add(agent))
    }

    /// [`spawn`](Self::spawn), returning the child's typed address (see
    /// [`Coop::add_addr`]).
    pub fn spawn_addr<B: Protocol>(&self, agent: B) -> Result<Addr<B>, RegisterError> {
        self.env
            .register_one(self.child_coop(), |coop| coop.add_addr(agent))
    }

    /// The binder this agent was bound with: its dispatcher, for agents it starts.
    pub fn binder(&self) -> &Binder {
        &self.binder
    }

    /// Registers `coop` (typically made by [`child_coop`](Self::child_coop)).
    pub fn register_coop(&self, coop: Coop) -> Result<CoopId, RegisterError> {
        self.env.register_coop(coop)
    }

    /// Sends `message` to `to` (an mbox, a multi mbox or a chain) after `delay` (see
    /// [`EnvHandle::send_delayed`]).
    pub fn send_delayed<M: Send + 'static>(
        &self,
        to: &(impl Destination<M> + Clone),
        delay: Duration,
        message: M,
    ) -> TimerHandle {
        self.env.send_delayed(to, delay, message)
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
        self.env.send_periodic(to, delay, period, message)
    }

    /// This agent's counters.
    pub fn stats(&self) -> AgentStats {
        self.mbox.stats()
    }

    /// Watches the agent behind `target`: when it is gone this agent receives a
    /// [`Terminated`](crate::Terminated) with the reason — at once if it is gone already (see
    /// [`watch`](crate::watch) for the rules). Errors: watching itself
    /// ([`WatchError::SelfWatch`]), an agent never registered ([`WatchError::NotRegistered`]),
    /// of another environment ([`WatchError::OtherEnv`]), or from `on_finish` and the state
    /// exits that follow it ([`WatchError::WatcherFinishing`]).
    pub fn watch(&self, target: &Mbox) -> Result<WatchId, WatchError> {
        if self.finishing {
            return Err(WatchError::WatcherFinishing);
        }
        self.env.inner().watch_agent(&self.mbox, target)
    }

    /// Watches the coop `coop`: when it is gone (deregistration complete) this agent receives
    /// a [`Terminated`](crate::Terminated) with the reason; at once, with
    /// [`ExitReason::Unknown`](crate::ExitReason::Unknown), if it is not registered.
    pub fn watch_coop(&self, coop: CoopId) -> Result<WatchId, WatchError> {
        if self.finishing {
            return Err(WatchError::WatcherFinishing);
        }
        Ok(self.env.inner().watch_coop(&self.mbox, coop))
    }

    /// Removes a watch this agent made; [`WatchError::UnknownWatch`] if it already fired, was
    /// removed, or is not this agent's.
    pub fn unwatch(&self, watch: WatchId) -> Result<(), WatchError> {
        self.env.inner().unwatch(&self.mbox, watch)
    }
}

impl<A> fmt::Debug for Ctx<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("agent", &self.id)
            .field("coop", &self.mbox.shared().binding().map(|b| b.coop))
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}
