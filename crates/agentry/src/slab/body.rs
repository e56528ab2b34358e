//! The seam between the dispatchers and the agents: `AgentBody`, what a dispatcher can ask of
//! the agent in a slot (implemented by `agent/cell.rs` and `agent/restart.rs`), with what it
//! gives back (`Taken`, `Exit`) and the control demands it carries out (`Control`). Here, with
//! the slab that holds the bodies, so that the slab and `disp/execute.rs` do not import the
//! agents. No `unsafe`: declared with `#[deny(unsafe_code)]` inside the slab's allowance.

use super::IncarnationCx;
use super::occupants::Occupant;
use crate::ids::{CoopId, MboxId};
use crate::message::LimitSlot;
use crate::message::payload::{Lent, Payload};
use crate::sync::blocks::BlockBox;
use crate::timer::token::TimerToken;
use std::any::Any;
use std::sync::Arc;

/// What became of a message an agent took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    /// A handler ran (and returned or panicked).
    Handled,
    /// The agent had no handler for it in its current state: rejected and counted.
    Unhandled,
    /// Kept for later (a failed supervised agent's next incarnation, or until the agent's coop
    /// has started); counted when it is finally taken.
    Deferred,
    /// Not handled and never will be (the agent is not running): counted as dropped.
    Dropped,
}

/// An agent's body as its slot holds it: in a block of the cells' store (`sync/blocks.rs`).
pub(crate) type Body = BlockBox<dyn AgentBody>;

/// What a dispatcher can ask of an agent.
pub(crate) trait AgentBody: Any + Send {
    /// Runs `on_start` (once; later calls do nothing).
    fn on_start(&mut self);
    /// Handles one message, lent by the demand that carries it (`message/payload.rs`): the
    /// body takes it, or the demand drops it afterwards.
    fn on_message(&mut self, source: MboxId, payload: Lent<'_>, limit: LimitSlot) -> Taken;
    /// Handles a timer's message whose token allowed delivery when the dispatcher took it. A
    /// body that defers it keeps the token: a cancel before a next incarnation takes the
    /// message still revokes it.
    fn on_timer_message(
        &mut self,
        source: MboxId,
        payload: Payload,
        limit: LimitSlot,
        token: Arc<TimerToken>,
    ) -> Taken;
    /// Drops a message that must not be handled (its timer was cancelled), giving back its
    /// place under the agent's message limit.
    fn discard(&mut self, source: MboxId, payload: Payload, limit: LimitSlot);
    /// Runs `on_finish` and leaves every state; the body is dropped next.
    fn on_finish(&mut self) -> Exit;
    /// How this body carries out a control demand ([`control`]): a function of its own type,
    /// which takes the body by value.
    fn control_fn(&self) -> ControlFn;
    /// The name of the state the agent is in (reported to the testing kit's observer).
    fn state_name(&self) -> &str;
}

/// Carries out a supervisor's control demand (`agent/restart.rs`) on `body`; returns the body
/// that occupies the slot next (the same one, or one that replaces it).
pub(crate) fn control(body: Body, control: Control, cx: &mut IncarnationCx<'_>) -> Body {
    (body.control_fn())(body, control, cx)
}

/// A body type's way to carry out a control demand (see [`AgentBody::control_fn`]): it is
/// given the body it was taken from, and gets its own type back with [`own`].
pub(crate) type ControlFn = fn(Body, Control, &mut IncarnationCx<'_>) -> Body;

/// `body` as the type `B` it is: for a [`ControlFn`] of `B`, which only `B`'s bodies give.
pub(crate) fn own<B: AgentBody>(body: Body) -> BlockBox<B> {
    body.retype(|b| {
        (b as &mut dyn Any)
            .downcast_mut::<B>()
            .expect("invariant: a body's control function is its own type's")
    })
}

/// `body`, held as a slot holds it.
pub(crate) fn erase<B: AgentBody>(body: BlockBox<B>) -> Body {
    body.retype(|b| b as &mut dyn AgentBody)
}

/// Who to tell once a finished agent's body has been dropped: the agent's shared part, which
/// tells its environment that it left its coop ([`Occupant::left`]; the env records why the
/// agent left, for death watch, and finishes the coop with its last agent).
pub(crate) struct Exit {
    pub(crate) coop: CoopId,
    pub(crate) agent: Arc<dyn Occupant>,
}

/// A control demand for one agent (a supervisor's command, or its coop's start verdict), run by its worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    /// End the current incarnation (restart `epoch`).
    Stop {
        /// The restart it belongs to (echoed in the acknowledgement).
        epoch: u64,
    },
    /// Start a new incarnation (restart `epoch`).
    Start {
        /// The restart it belongs to.
        epoch: u64,
    },
    /// The agent's coop has started (`agent/start.rs`): handle the messages held meanwhile.
    Release,
}
