//! The crate's errors (the rest are `agentry`'s own: `RequestError`, `SendError`, `RecvError`).

use crate::probe::TaskStats;
use thiserror::Error;

/// [`TaskProbe::settle`](crate::TaskProbe::settle) gave up: some futures were still running
/// (not waiting on agentry's clock) when the timeout passed.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[error("{} futures still running after the settle timeout", .0.running - .0.waiting_on_clock)]
pub struct SettleError(pub TaskStats);

/// [`env_runtime`](crate::env_runtime) could not give the environment a runtime.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// tokio could not build the runtime (threads, the I/O driver).
    #[error("cannot build the tokio runtime: {0}")]
    Build(std::io::Error),
    /// The environment is already stopping.
    #[error("the environment is already stopping")]
    EnvStopping,
}
