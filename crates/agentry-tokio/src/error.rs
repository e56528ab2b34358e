//! The crate's errors (the rest are `agentry`'s own: `RequestError`, `SendError`, `RecvError`).

use crate::probe::TaskStats;
use thiserror::Error;

/// [`TaskProbe::settle`](crate::TaskProbe::settle) gave up: some futures were still running
/// (not waiting on agentry's clock) when the timeout passed.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[error("{} futures still running after the settle timeout", .0.running - .0.waiting_on_clock)]
pub struct SettleError(pub TaskStats);
