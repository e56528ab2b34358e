//! The engine of the one-thread dispatchers: a queue served by one thread. `one_thread`,
//! `active_obj`, `active_group`, the priority dispatchers and the driven dispatcher (the io
//! dispatcher of agentry-net, the testing kit) are all made of it.
//!
//! | file | what |
//! |---|---|
//! | `queue.rs` | the queue: lanes with a local and a cross-thread part, pushing, closing |
//! | `server.rs` | [`Server`](server::Server): the serving thread as a `!Send` token; its safe methods pop, push locally, run demands and leave |
//! | `serve.rs` | the serving policies (FIFO, strict, round robin) and the finish barrier |
//! | `worker_thread.rs` | the loop of a dispatcher's own thread: serve, spin, park, leave |
//! | `driver.rs` | [`Driver`]: the server of a driven dispatcher, run by the user's event loop |
//!
//! # Ground rules
//!
//! - A queue holds the demands of the agents bound to its dispatcher and nothing else; one
//!   thread serves it — the one holding its [`Server`](server::Server) — and runs them one at
//!   a time, so an agent never runs two handlers at once.
//! - A send made *on the serving thread* (an agent sending to a sibling on the same
//!   dispatcher) goes to the queue's `local` part (`disp/local_queue.rs`): no atomic
//!   operation at all. A send from any other thread goes to the lock-free MPSC queue
//!   (`sync/mpsc.rs`) and wakes the server only if it sleeps (`sync/parker.rs`): at most one
//!   wake-up per batch.
//! - Per-sender FIFO holds because a sender always uses the same path. Different senders'
//!   messages interleave in no promised order.
//! - Finish barrier: a finish demand runs only after it has passed through *both* parts
//!   (taken from one, it is re-queued at the back of the other as `FINISH_NOW`). Every
//!   message accepted before the deregistration sits ahead of it in one part or the other,
//!   so it is handled first, whichever thread sent it (the policy in `coop.rs`).
//! - Priorities (`prio_one_thread.rs`): the queue has one *lane* per priority, each with its
//!   local and remote parts; a demand goes to its agent's lane. The plain dispatcher has one
//!   lane and the FIFO loop. A prioritised server first moves what other threads sent into
//!   the lanes' local parts (a finish demand found there has passed both parts), then serves
//!   the lanes strictly by priority or round-robin with per-priority quotas; choosing a lane
//!   looks at eight flags at most — constant work per demand, no queue scan.
//! - Event priorities (`disp/event_lanes.rs`): a lane's local part is sorted by the priority
//!   of each demand's subscription. A plain dispatcher keeps the two-part loop until the
//!   first raised demand is pushed (`raised`); from then on it serves like a strictly-ordered
//!   one with a single lane: what other threads sent is moved into the local part (at least
//!   every 32 demands served) and the highest event priority runs first. The finish barrier
//!   is unchanged (a finish demand is `P0`, behind every raised demand taken in before it).
//!   On the priority dispatchers the agent's priority picks the lane and the event priority
//!   orders the demands inside it.
//! - When idle, a dispatcher's own thread spins briefly (crossbeam `Backoff`), then parks.
//! - Closing (when the last handle and bound agent are gone, or at environment shutdown)
//!   makes pushes fail; the server finishes what is queued, then *leaves*: under the `left`
//!   lock it marks the queue abandoned and drains what raced in, counting each message as its
//!   agent's (`Demand::discard_closed`). A producer that passed the closed check just before
//!   the close checks `closed` again after its push (behind the `SeqCst` fence of
//!   `Parker::unpark`); the server issues a `SeqCst` fence after it saw `closed` and before
//!   its last drain. Either the server's drain sees the push, or the producer sees `closed` —
//!   and then, under the same lock, drains the abandoned queue itself if the server has left.
//!   So a message accepted in the race with closing is counted before its `send` returns or
//!   by the server as it leaves, never left uncounted in an abandoned queue.

mod driver;
#[allow(unsafe_code)]
mod queue;
mod serve;
#[allow(unsafe_code)]
mod server;
pub(crate) mod worker_thread;

pub use driver::Driver;
pub(crate) use queue::{Policy, Queue, serves_a_queue};

#[cfg(test)]
mod tests;
