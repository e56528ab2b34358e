//! The receiving side's memory of which durable messages it is handling or has handled, so
//! that a handler sees each message once while the process stays up.
//!
//! JetStream drops a *publisher's* copies by message id (inside the stream's duplicate
//! window), but it delivers a stored message again whenever its acknowledgement does not
//! arrive within `ack_wait`: the ack was lost with a connection, or the agent is still busy
//! with it (it waits in the agent's queue). A ledger keyed by message id tells these
//! redeliveries apart:
//!
//! - an id not in the ledger is delivered and becomes *in flight*;
//! - a redelivery of an in-flight id is not delivered; the ledger keeps its newest ack
//!   subject, where the ack goes once the handler returns;
//! - a redelivery of a *handled* id is not delivered and is acknowledged again.
//!
//! Handled ids are remembered first in, first out, up to a capacity; in-flight ids are
//! bounded by the consumer's `max_ack_pending` (the server delivers no more than that
//! unacknowledged). Sans-IO: the consumer task owns one ledger and does the acking.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// What to do with an arriving delivery.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arrival<R> {
    /// New: deliver it (it is now in flight).
    Deliver,
    /// Being handled: drop this copy (its ack subject replaced the older one).
    InFlight,
    /// Handled already: drop this copy and acknowledge it through `R`.
    Handled(R),
}

enum State<R> {
    InFlight(R),
    Handled,
}

/// In-flight and handled message ids of one durable subscription; `R` is an ack subject.
pub(crate) struct Ledger<R> {
    states: HashMap<Arc<str>, State<R>>,
    handled: VecDeque<Arc<str>>,
    capacity: usize,
}

impl<R> Ledger<R> {
    /// A ledger that remembers up to `capacity` (at least 1) handled ids.
    pub(crate) fn new(capacity: usize) -> Self {
        Ledger {
            states: HashMap::new(),
            handled: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// A delivery of `id`, acknowledged through `reply`, arrived.
    pub(crate) fn arrive(&mut self, id: &Arc<str>, reply: R) -> Arrival<R> {
        match self.states.get_mut(id) {
            None => {
                self.states.insert(Arc::clone(id), State::InFlight(reply));
                Arrival::Deliver
            }
            Some(State::InFlight(newest)) => {
                *newest = reply;
                Arrival::InFlight
            }
            Some(State::Handled) => Arrival::Handled(reply),
        }
    }

    /// The in-flight `id` is done: handled (`true`: remembered, so later copies are
    /// dropped) or not (`false`: forgotten, so a redelivery is delivered). Returns its
    /// newest ack subject (`None` if it was not in flight).
    pub(crate) fn finish(&mut self, id: &Arc<str>, handled: bool) -> Option<R> {
        let reply = match self.states.remove(id)? {
            State::InFlight(r) => r,
            State::Handled => {
                self.states.insert(Arc::clone(id), State::Handled);
                return None;
            }
        };
        if handled {
            self.states.insert(Arc::clone(id), State::Handled);
            self.handled.push_back(Arc::clone(id));
            while self.handled.len() > self.capacity {
                if let Some(old) = self.handled.pop_front() {
                    self.states.remove(&old);
                }
            }
        }
        Some(reply)
    }

    /// Ids in flight.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.states.len() - self.handled.len()
    }
}

#[cfg(test)]
mod tests;
