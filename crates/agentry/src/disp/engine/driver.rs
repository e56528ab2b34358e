//! [`Driver`]: the server of a driven dispatcher, run by an event loop the user owns (the
//! io dispatcher of agentry-net, the testing kit).

use super::queue::Queue;
use super::serve::{BATCH, Part};
use super::server::Server;
use crate::demand::Demand;
use crate::disp::execute::Observer;
use crate::error::BuildError;
use std::fmt;
use std::sync::Arc;

/// The serving side of a driven dispatcher
/// ([`OneThreadBuilder::build_driven`](crate::disp::OneThreadBuilder::build_driven)):
/// the event loop of the thread that created it runs the dispatcher's agents through it.
///
/// A loop iteration: [`run`](Self::run) until it returns 0; then [`prepare_to_block`](Self::prepare_to_block)
/// — if it returns true, block (e.g. `Poll::poll`), then call [`woke_up`](Self::woke_up);
/// stop when [`is_closed`](Self::is_closed). The driver stays on the thread that created it
/// (it is not `Send`); sends made on that thread to agents of this dispatcher take the
/// lock-free local path.
pub struct Driver {
    server: Server,
    /// Where [`step_observed`](Self::step_observed) takes its next demand from.
    cursor: Cursor,
}

/// The position of a driver that runs one demand at a time in the FIFO policy of
/// `serve_fifo`: which part of the queue it takes from, and how many more demands it takes
/// there before it turns to the other part.
#[derive(Debug)]
struct Cursor {
    part: Part,
    left: usize,
}

impl Cursor {
    fn turn(&mut self) {
        self.part = match self.part {
            Part::Local => Part::Remote,
            Part::Remote => Part::Local,
        };
        self.left = BATCH;
    }
}

impl Driver {
    /// Makes the calling thread the server of `queue`; fails with
    /// [`BuildError::ThreadBusy`] if it serves a dispatcher already.
    pub(crate) fn claim(queue: Arc<Queue>) -> Result<Driver, BuildError> {
        let server = Server::claim(queue).ok_or(BuildError::ThreadBusy)?;
        Ok(Driver {
            server,
            cursor: Cursor {
                part: Part::Local,
                left: BATCH,
            },
        })
    }

    /// Runs one round of queued demands (up to a batch from each part of the queue), then the
    /// end-of-batch hooks its handlers registered ([`at_batch_end`](crate::disp::at_batch_end));
    /// returns how many ran.
    pub fn run(&mut self) -> usize {
        let before = self.server.handled();
        crate::disp::batch(|| self.server.serve());
        self.server.publish();
        usize::try_from(self.server.handled() - before).unwrap_or(usize::MAX)
    }

    /// Runs the next demand and reports it to `observer` (the testing kit). Demands are taken
    /// in the order of the FIFO policy — up to a batch from the local part, then up to a batch
    /// from the remote part — with the finish barrier; once raised event priorities are in
    /// use, in the order of `serve`'s prioritised policy. False if nothing was queued.
    pub(crate) fn step_observed<O: Observer>(&mut self, observer: &mut O) -> bool {
        let next = if self.server.queue().raised() {
            self.next_prioritized()
        } else {
            self.next_fifo()
        };
        let Some(demand) = next else {
            return false;
        };
        crate::disp::batch(|| self.server.run_observed(demand, observer));
        self.server.publish();
        true
    }

    /// The next demand `serve_fifo` would run, one at a time (the cursor keeps its place).
    fn next_fifo(&mut self) -> Option<Demand> {
        let mut empty_parts = 0;
        loop {
            let part = self.cursor.part;
            let next = match part {
                Part::Local => self.server.pop_local(0),
                Part::Remote => self.server.pop_remote(0),
            };
            let Some(demand) = next else {
                empty_parts += 1;
                if empty_parts == 2 {
                    return None;
                }
                self.cursor.turn();
                continue;
            };
            empty_parts = 0;
            self.cursor.left -= 1;
            if self.cursor.left == 0 {
                self.cursor.turn();
            }
            if let Some(demand) = self.server.through_barrier(0, demand, part) {
                return Some(demand);
            }
        }
    }

    /// The next demand of the prioritised policy: what other threads sent joins the local
    /// part, whose highest event priority goes first; a finish demand taken from the local
    /// part passes the remote part first (finish barrier).
    fn next_prioritized(&mut self) -> Option<Demand> {
        loop {
            self.absorb_remote();
            let demand = self.server.pop_local(0)?;
            if let Some(demand) = self.server.through_barrier(0, demand, Part::Local) {
                return Some(demand);
            }
        }
    }

    /// Moves every demand other threads have queued into the local part, behind what is there
    /// (the testing kit, after its clock moved: the timer thread's messages then run before
    /// anything the test sends next). A finish demand moved this way has passed both parts.
    pub(crate) fn absorb_remote(&mut self) {
        while self.server.pull_remote() {}
        self.server.publish();
    }

    /// Call before blocking: true if the loop may block now (senders will call the wake
    /// callback); false if demands are waiting (run them first, do not block).
    pub fn prepare_to_block(&mut self) -> bool {
        self.server.announce_sleep()
    }

    /// Call after the loop's blocking call returned (whatever woke it).
    pub fn woke_up(&mut self) {
        self.server.end_sleep();
    }

    /// True once the dispatcher was closed (environment shutdown, or no handle and no agent
    /// left): the loop should run what is left and return.
    pub fn is_closed(&self) -> bool {
        self.server.queue().is_closed()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.server.leave();
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("dispatcher", &self.server.queue().name())
            .field("handled", &self.server.handled())
            .finish()
    }
}
