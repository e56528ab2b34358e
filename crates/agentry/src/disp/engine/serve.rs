//! The serving policies: in which order a server takes its queue's demands, with the finish
//! barrier (engine ground rules). Only safe methods of [`Server`] are used here.

use super::queue::Policy;
use super::server::Server;
use crate::demand::{Demand, Kind};

/// Demands taken per queue part before looking at the other one (fairness between local and
/// cross-thread senders).
pub(super) const BATCH: usize = 256;
/// Demands a strictly-ordered server runs between two looks at what other threads sent
/// (bounds how long a new high-priority demand from another thread waits).
const PRIO_BATCH: usize = 32;

/// One of a lane's two parts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Part {
    /// What the serving thread queued (and what it moved there).
    Local,
    /// What other threads queued.
    Remote,
}

/// How a batch of one part ended.
enum Batch {
    /// The part was served (`true`: something was taken).
    Done(bool),
    /// A raised demand was pushed meanwhile: the round stops (`true`: something was taken).
    Raised(bool),
}

impl Batch {
    fn worked(self) -> bool {
        match self {
            Batch::Done(worked) | Batch::Raised(worked) => worked,
        }
    }
}

impl Server {
    /// One round of the queue's policy; false if nothing was queued.
    pub(crate) fn serve(&mut self) -> bool {
        match self.queue().policy {
            Policy::Fifo if !self.queue().raised() => self.serve_fifo(),
            Policy::Fifo | Policy::Strict => self.pull_remote() | self.serve_strict(),
            Policy::RoundRobin(quotes) => self.pull_remote() | self.serve_round_robin(&quotes),
        }
    }

    /// One lane: a batch from the local part, then a batch from the remote part, with the
    /// finish barrier between the two. Stops at the first raised demand pushed meanwhile
    /// (the next round sorts by event priority).
    fn serve_fifo(&mut self) -> bool {
        match self.serve_fifo_part(Part::Local) {
            Batch::Raised(worked) => worked,
            Batch::Done(local) => local | self.serve_fifo_part(Part::Remote).worked(),
        }
    }

    /// Up to a batch of lane 0's `part`.
    #[inline(always)]
    fn serve_fifo_part(&mut self, part: Part) -> Batch {
        let mut worked = false;
        for _ in 0..BATCH {
            if self.queue().raised() {
                return Batch::Raised(worked);
            }
            let next = match part {
                Part::Local => self.pop_local(0),
                Part::Remote => self.pop_remote(0),
            };
            let Some(demand) = next else {
                break;
            };
            worked = true;
            if let Some(demand) = self.through_barrier(0, demand, part) {
                self.run(demand);
            }
        }
        Batch::Done(worked)
    }

    /// The finish barrier: a finish demand taken from one part of `lane` goes to the back of
    /// the other as `FINISH_NOW` (behind what that part holds) and `None` is returned; any
    /// other demand is returned, to run.
    #[inline(always)]
    pub(super) fn through_barrier(
        &mut self,
        lane: usize,
        mut demand: Demand,
        from: Part,
    ) -> Option<Demand> {
        if demand.kind() != Kind::FINISH {
            return Some(demand);
        }
        demand.set_kind(Kind::FINISH_NOW);
        match from {
            Part::Local => self.push_remote(lane, demand),
            Part::Remote => self.push_local(lane, demand),
        }
        None
    }

    /// Moves what other threads sent into each lane's local part: all that was queued when
    /// it began (however long the backlog, so that a raised demand is served before every
    /// lower one queued before it; the count read first bounds the move against producers
    /// pushing meanwhile). A finish demand found here has passed the remote part: it may run
    /// when its turn comes in the local part.
    pub(crate) fn pull_remote(&mut self) -> bool {
        let mut worked = false;
        for lane in 0..self.lanes() {
            for _ in 0..self.remote_len(lane) {
                let Some(mut demand) = self.pop_remote(lane) else {
                    break;
                };
                worked = true;
                if demand.kind() == Kind::FINISH {
                    demand.set_kind(Kind::FINISH_NOW);
                }
                self.push_local(lane, demand);
            }
        }
        worked
    }

    /// Takes the next demand of `lane`'s local part and runs it; a finish demand sent by this
    /// thread goes through the remote part first (finish barrier). False if the lane is empty.
    fn serve_one(&mut self, lane: usize) -> bool {
        let Some(demand) = self.pop_local(lane) else {
            return false;
        };
        if let Some(demand) = self.through_barrier(lane, demand, Part::Local) {
            self.run(demand);
        }
        true
    }

    /// The highest lane with local demands.
    pub(super) fn highest_ready(&self) -> Option<usize> {
        (0..self.lanes()).rev().find(|&p| !self.local_is_empty(p))
    }

    fn serve_strict(&mut self) -> bool {
        let mut worked = false;
        for _ in 0..PRIO_BATCH {
            let Some(lane) = self.highest_ready() else {
                break;
            };
            worked |= self.serve_one(lane);
        }
        worked
    }

    fn serve_round_robin(&mut self, quotes: &[usize; 8]) -> bool {
        let mut worked = false;
        for lane in (0..self.lanes()).rev() {
            for _ in 0..quotes[lane] {
                if !self.serve_one(lane) {
                    break;
                }
                worked = true;
            }
        }
        worked
    }
}
