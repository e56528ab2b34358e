//! `Ctx<A>`: what a handler can do besides touching its agent. Its methods that go through the
//! environment (the env itself, child coops, `spawn`, deregistering the coop, stopping the
//! env, timers, death watch) are in the env's layer, `env/ctx.rs`. A `Ctx` keeps no env of its
//! own: the agent's mbox reaches it (its class holds the env weakly, `mbox/class.rs`).

use super::Addr;
use super::Agent;
use super::layout::AgentLayout;
use super::protocol::Protocol;
use super::state::State;
use crate::disp::Binder;
use crate::error::StateError;
use crate::ids::{AgentId, CoopId};
use crate::mbox::Mbox;
use crate::stats::AgentStats;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// The context handed to every handler and hook of agent `A`.
///
/// Through it a handler learns its agent's id, own mbox and state, changes state, registers
/// child coops, deregisters its coop or stops the environment.
pub struct Ctx<A> {
    pub(crate) mbox: Mbox,
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

    /// The agent's id (its current incarnation's: a supervised agent's restart gives it a new
    /// one). Read from its binding, where its mbox's senders find it: the context keeps no
    /// copy (8 bytes less in every agent).
    pub fn id(&self) -> AgentId {
        self.mbox
            .shared()
            .binding()
            .map_or(AgentId::UNATTACHED, |b| b.id())
    }

    /// The agent's coop.
    pub fn coop(&self) -> CoopId {
        // Kept in the binding (the same for every incarnation), not in each context.
        self.mbox
            .shared()
            .binding()
            .expect("invariant: an agent is bound before any of its hooks or handlers runs")
            .coop()
    }

    /// The state the agent is in.
    pub fn state(&self) -> State {
        self.state
    }

    /// The name of the state the agent is in.
    pub fn state_name(&self) -> &str {
        self.layout.states.name(self.state)
    }

    /// The agent's state named `name`, if its definition declared one: how a handler finds
    /// a state when the definition could not keep it in the agent (a type's
    /// [`DEFINITION`](crate::Agent::DEFINITION) takes no agent). A search of the states by
    /// name: keep the result where a handler needs it often.
    pub fn state_named(&self, name: &str) -> Option<State> {
        self.layout.states.named(name)
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

    /// This agent stops alone: it stops accepting messages, handles what was queued before,
    /// runs `on_finish` and leaves; its watchers get `Terminated` (`ExitReason::Normal`); the
    /// rest of its coop goes on. When a coop's last agent has left this way, the coop is
    /// deregistered (children first, reason `Normal`). Returns immediately; false if the agent
    /// is finishing already, or is supervised (its supervisor decides when its children stop
    /// and restart: deregister the coop instead).
    pub fn stop_self(&self) -> bool {
        let shared = self.mbox.shared();
        if shared.binding().is_some_and(|b| b.supervisor().is_some()) {
            return false;
        }
        shared.finish()
    }

    /// The binder this agent was bound with: its dispatcher, for agents it starts.
    pub fn binder(&self) -> &Binder {
        &self.binder
    }

    /// This agent's counters.
    pub fn stats(&self) -> AgentStats {
        self.mbox.stats()
    }
}

impl<A> fmt::Debug for Ctx<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("agent", &self.mbox.shared().binding().map(|b| b.id()))
            .field("coop", &self.mbox.shared().binding().map(|b| b.coop()))
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}
