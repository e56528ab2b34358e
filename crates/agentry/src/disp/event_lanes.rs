//! Event priorities inside a queue: the demands one consumer has taken in, sorted into eight
//! FIFO lanes by the priority their subscription declared
//! ([`Define::event_priority`](crate::Define::event_priority)).
//!
//! # Ground rules
//!
//! - `pop` takes from the highest non-empty lane; within a lane, FIFO. A bitmask of the
//!   occupied raised lanes makes push and pop constant work — no scan of queued demands.
//! - Lane 0 (`P0`, the default) is a plain [`LocalQueue`]; the raised lanes (`P1`..`P7`) are
//!   allocated the first time a raised demand arrives, so a queue that never sees one costs
//!   one pointer and one branch per pop.
//! - Lifecycle and control demands are `P0`: a finish demand therefore runs after every
//!   raised demand already taken in, whatever the order they were sent in.
//! - Single consumer, no synchronisation: the owner (a dispatcher's worker, or the pool thread
//!   that holds an agent queue's run state) is the only thread that touches it.

use super::local_queue::LocalQueue;
use crate::demand::Demand;

/// Raised lanes: `P1`..`P7`.
const RAISED: usize = 7;

/// A FIFO per event priority, highest served first.
pub(crate) struct EventLanes {
    normal: LocalQueue,
    raised: Option<Box<Raised>>,
}

struct Raised {
    /// Bit `p - 1` is set while lane `p` holds demands.
    occupied: u8,
    lanes: [LocalQueue; RAISED],
}

impl EventLanes {
    pub(crate) const fn new() -> Self {
        EventLanes {
            normal: LocalQueue::new(),
            raised: None,
        }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, demand: Demand) {
        if demand.priority() == 0 {
            self.normal.push(demand);
        } else {
            self.push_raised(demand);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_raised(&mut self, demand: Demand) {
        let lane = usize::from(demand.priority().min(RAISED as u8)) - 1;
        let raised = self.raised.get_or_insert_with(|| {
            Box::new(Raised {
                occupied: 0,
                lanes: std::array::from_fn(|_| LocalQueue::new()),
            })
        });
        raised.lanes[lane].push(demand);
        raised.occupied |= 1 << lane;
    }

    /// The oldest demand of the highest non-empty lane.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Demand> {
        if let Some(raised) = &mut self.raised
            && raised.occupied != 0
        {
            return Some(raised.pop_highest());
        }
        self.normal.pop()
    }

    /// Number of demands queued.
    pub(crate) fn len(&self) -> usize {
        let raised = self
            .raised
            .as_ref()
            .map_or(0, |r| r.lanes.iter().map(LocalQueue::len).sum());
        self.normal.len() + raised
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.normal.is_empty() && self.raised.as_ref().is_none_or(|r| r.occupied == 0)
    }
}

impl Default for EventLanes {
    fn default() -> Self {
        Self::new()
    }
}

impl Raised {
    #[inline(never)]
    fn pop_highest(&mut self) -> Demand {
        let lane = 7 - self.occupied.leading_zeros() as usize;
        let queue = &mut self.lanes[lane];
        let demand = queue
            .pop()
            .expect("invariant: an occupied lane holds a demand");
        if queue.is_empty() {
            self.occupied &= !(1 << lane);
        }
        demand
    }
}

#[cfg(test)]
mod tests;
