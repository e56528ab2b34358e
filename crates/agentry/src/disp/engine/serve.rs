//! The serving policies: in which order a server takes its queue's demands, with the finish
//! barrier (engine ground rules). Only safe methods of [`Server`] are used here.

use super::queue::Policy;
use super::server::Server;
use crate::demand::Kind;

/// Demands taken per queue part before looking at the other one (fairness between local and
/// cross-thread senders).
pub(super) const BATCH: usize = 256;
/// Demands a strictly-ordered server runs between two looks at what other threads sent
/// (bounds how long a new high-priority demand from another thread waits).
const PRIO_BATCH: usize = 32;

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
        let mut worked = false;
        for _ in 0..BATCH {
            if self.queue().raised() {
                return worked;
            }
            let Some(mut demand) = self.pop_local(0) else {
                break;
            };
            worked = true;
            if demand.kind == Kind::FINISH {
                // Finish barrier: behind whatever other threads queued.
                demand.kind = Kind::FINISH_NOW;
                self.push_remote(0, demand);
                continue;
            }
            self.run(demand);
        }
        for _ in 0..BATCH {
            if self.queue().raised() {
                return worked;
            }
            let Some(mut demand) = self.pop_remote(0) else {
                break;
            };
            worked = true;
            if demand.kind == Kind::FINISH {
                // Finish barrier: behind what this thread queued.
                demand.kind = Kind::FINISH_NOW;
                self.push_local(0, demand);
                continue;
            }
            self.run(demand);
        }
        worked
    }

    /// Moves what other threads sent into each lane's local part. A finish demand found here
    /// has passed the remote part: it may run when its turn comes in the local part.
    pub(crate) fn pull_remote(&mut self) -> bool {
        let mut worked = false;
        for lane in 0..self.lanes() {
            for _ in 0..BATCH {
                let Some(mut demand) = self.pop_remote(lane) else {
                    break;
                };
                worked = true;
                if demand.kind == Kind::FINISH {
                    demand.kind = Kind::FINISH_NOW;
                }
                self.push_local(lane, demand);
            }
        }
        worked
    }

    /// Takes the next demand of `lane`'s local part and runs it; a finish demand sent by this
    /// thread goes through the remote part first (finish barrier). False if the lane is empty.
    fn serve_one(&mut self, lane: usize) -> bool {
        let Some(mut demand) = self.pop_local(lane) else {
            return false;
        };
        if demand.kind == Kind::FINISH {
            demand.kind = Kind::FINISH_NOW;
            self.push_remote(lane, demand);
        } else {
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
            for _ in 0..quotes[lane].max(1) {
                if !self.serve_one(lane) {
                    break;
                }
                worked = true;
            }
        }
        worked
    }
}
