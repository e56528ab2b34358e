//! What the test environment learns from each demand it runs (through the dispatcher's
//! observer hook, `disp/execute.rs`): the agent, the message type, the outcome, the agent's
//! state after it.

use crate::disp::execute::{DemandOutcome, Observer};
use crate::ids::AgentId;
use crate::message::payload::Payload;
use crate::slab::AgentRef;
use crate::slab::body::AgentBody;
use std::any::TypeId;
use std::collections::HashMap;

/// One demand the test environment ran.
#[derive(Clone, Debug)]
pub(super) struct Event {
    pub(super) agent: AgentId,
    /// The message's type id and name (`None` for start, finish and dead letters).
    pub(super) message: Option<(TypeId, &'static str)>,
    pub(super) outcome: DemandOutcome,
    /// The agent's state after the demand (`None` once it is gone).
    pub(super) state: Option<String>,
}

impl Event {
    /// True if the demand delivered a message to the agent's handler lookup (handled or not).
    pub(super) fn delivered(&self) -> bool {
        matches!(
            self.outcome,
            DemandOutcome::Handled | DemandOutcome::NoHandler
        )
    }
}

/// The observer of the test environment's driven dispatcher.
#[derive(Debug, Default)]
pub(super) struct Recorder {
    pending: Option<(AgentId, Option<(TypeId, &'static str)>)>,
    /// The last demand run (taken by the drive loop).
    pub(super) last: Option<Event>,
    /// Each live agent's state after its last demand.
    pub(super) states: HashMap<AgentId, String>,
}

impl Observer for Recorder {
    fn before(&mut self, agent: AgentRef, message: Option<&Payload>) {
        self.pending = Some((agent.id(), message.map(|p| (p.type_id(), p.type_name()))));
    }

    fn after(&mut self, outcome: DemandOutcome, body: Option<&dyn AgentBody>) {
        let Some((agent, message)) = self.pending.take() else {
            return;
        };
        let state = body.map(|b| b.state_name().to_owned());
        match &state {
            Some(s) => {
                self.states.insert(agent, s.clone());
            }
            None => {
                self.states.remove(&agent);
            }
        }
        self.last = Some(Event {
            agent,
            message,
            outcome,
            state,
        });
    }
}
