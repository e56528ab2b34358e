//! Benchmark workloads, for `agentry-bench` to wire in (each is specified in one line,
//! checks its own result, and returns raw figures; the runner formats them).
//!
//! - [`tcp_echo`]: the SObjectizer 4.4 b5 `tcp_echo_client_server` benchmark — a client sends
//!   `packet`-byte packets and waits for each echo; agentry's echo server (channels and
//!   per-connection owners on an [`IoDispatcher`](crate::IoDispatcher)) beside a plain
//!   blocking `std::net` echo server (a thread per connection) with the same client.
//! - [`ttl`]: CSO's TTL echo benchmark, variants 4 and 5 — `objects` objects on io threads
//!   woken through eventfd, `messages` messages each bouncing `ttl` times to uniformly
//!   random objects.

pub mod tcp_echo;
pub mod ttl;

use crate::error::NetError;
use thiserror::Error;

/// Why a benchmark run failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BenchError {
    /// Setting up the server or the io dispatcher failed.
    #[error(transparent)]
    Net(#[from] NetError),
    /// A client socket operation failed.
    #[error("client i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The environment could not be built or an agent registered.
    #[error("setup: {0}")]
    Setup(String),
    /// The run did not finish within its time limit.
    #[error("the run did not finish within {0:?}")]
    Timeout(std::time::Duration),
    /// The result is wrong (the text says what was expected and what was found).
    #[error("verification failed: {0}")]
    Verify(String),
}

/// A small deterministic generator (xorshift64*): no dependency, one multiply per number.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    #[inline]
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((u64::from((x >> 32) as u32) * u64::from(n)) >> 32) as u32
    }
}
