//! Timer engines for Agentry: sans-IO stores of timers ordered by deadline.
//!
//! This crate knows nothing about agents and never reads a clock. A deadline and `now` are
//! `u64` nanoseconds since an origin the caller picks; the caller asks an engine for
//! [`next_deadline`](TimerEngine::next_deadline), sleeps, and calls
//! [`expire`](TimerEngine::expire)`(now, &mut out)`. Locking, threads and message delivery
//! belong to the runtime that drives the engine (the `agentry` crate).
//!
//! # Map
//!
//! | item | what it is |
//! |---|---|
//! | [`TimerEngine`] | the contract: insert, cancel, next_deadline, expire, len, drain |
//! | [`TimerKey`] | generational key of one timer; a stale key never cancels a newer timer |
//! | [`HeapEngine`] | indexed binary min-heap (Asterisk 2009): O(log N) insert and cancel, exact |
//! | [`WheelEngine`] | hierarchical timing wheel, 6 × 64 slots: O(1) insert and cancel, rounded up to a tick (default 1 ms) |
//! | [`ListEngine`] | sorted doubly-linked list (Asterisk before 2009): O(N) insert, O(1) cancel; benchmark baseline only |
//! | [`EngineKind`], [`AnyEngine`] | run-time choice of engine with static dispatch |
//!
//! # Choosing an engine
//!
//! - Many timeouts that are mostly cancelled before they fire (request deadlines, idle
//!   timers): [`WheelEngine`]; its rounding to a tick is invisible at that scale.
//! - Timers that must fire at their exact deadline, or few timers: [`HeapEngine`].
//! - [`ListEngine`] exists so the `sched` benchmark can reproduce the Asterisk review's table.
//!
//! # Example
//!
//! ```
//! use agentry_timer::{TimerEngine, WheelEngine};
//!
//! let ms = 1_000_000; // deadlines are nanoseconds
//! let mut timers = WheelEngine::with_capacity(1024);
//! let idle = timers.insert(30_000 * ms, "idle timeout");
//! timers.insert(5 * ms, "retransmit");
//!
//! let mut out = Vec::new();
//! timers.expire(10 * ms, &mut out);
//! assert_eq!(out.len(), 1);
//! assert_eq!(out[0].1, "retransmit");
//!
//! // The peer answered: the idle timeout is cancelled in O(1) and handed back.
//! assert_eq!(timers.cancel(idle), Some("idle timeout"));
//! assert_eq!(timers.cancel(idle), None); // stale key
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod any;
mod dlist;
mod engine;
mod error;
mod heap;
mod key;
mod list;
mod slab;
mod wheel;

pub use any::{AnyEngine, EngineKind};
pub use engine::TimerEngine;
pub use error::ParseEngineKindError;
pub use heap::HeapEngine;
pub use key::TimerKey;
pub use list::ListEngine;
pub use wheel::{DEFAULT_TICK_NS, WheelEngine};
