//! Agentry in an async world, on tokio: futures started from handlers, async request/reply,
//! async sends and chains, sleeps on agentry's clock.
//!
//! The core crate `agentry` stays runtime-free; this crate is the bridge. Its guide chapter
//! is [`guide`] (every snippet a doctest); the map:
//!
//! | item | what it does |
//! |---|---|
//! | [`Tasks`] | an agent's futures: [`spawn`](Tasks::spawn) runs one on a tokio runtime and sends its output to the agent as a message; aborted when the agent finishes; counted ([`TaskStats`]); a panic becomes [`TaskPanicked`] |
//! | [`TaskProbe`] | the counters of one [`Tasks`] from outside, and [`settle`](TaskProbe::settle) for tests on virtual time |
//! | [`MboxExt`] | from async code: [`ask`](MboxExt::ask) (a request with a timeout and `agentry`'s typed errors), [`send_wait`](MboxExt::send_wait) (awaits room under a full message limit) |
//! | [`ChainExt`] | from async code: [`recv_within`](ChainExt::recv_within), a chain's next message with a timeout |
//! | [`sleep`] | a future that waits on agentry's clock (virtual time in `agentry::testing`) |
//! | [`env_runtime`] | a tokio runtime the environment owns (shut down when it starts stopping); or give [`Tasks`] the `Handle` of a runtime you own |
//!
//! # Ground rules
//!
//! 1. An agent's state is touched only by its handlers, on its dispatcher's thread. A future
//!    never gets `&mut` of its agent: what it produces comes back as a message, handled in
//!    the agent's current state like any other.
//! 2. No thread blocks while async code awaits an agent: replies and chain messages wake the
//!    awaiting task through `std` wakers (`agentry::PendingReply`, `agentry::mchain::Recv`).
//!    The one exception is [`TaskProbe::settle`], a test's wait, documented as blocking.
//! 3. Nothing reaches an agent after its `on_finish`: the core refuses messages to an agent
//!    that stopped accepting (counted as the agent's), and [`Tasks`] aborts its futures when
//!    it is dropped with the agent (or at [`abort_all`](Tasks::abort_all)); an output that
//!    loses that race is counted `undelivered`.
//! 4. Every future is counted exactly once when it ends: `spawned = running + delivered +
//!    undelivered + panicked + cancelled` ([`TaskStats`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod caller;
mod chain;
mod error;
pub mod guide;
mod probe;
mod runtime;
mod sleep;
mod tasks;

pub use caller::MboxExt;
pub use chain::ChainExt;
pub use error::{RuntimeError, SettleError};
pub use probe::{TaskProbe, TaskStats};
pub use runtime::env_runtime;
pub use sleep::{Sleep, sleep};
pub use tasks::{TaskId, TaskPanicked, Tasks};
