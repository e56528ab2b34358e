//! The `remote_rr` benchmark workload (SObjectizer 4.4 b5 `server_client_speed`), driven by
//! `benches/remote_rr.rs` (`agentry-bench remote_rr`) and by the `remote_rr` binary
//! (`src/bin/remote_rr.rs`, every knob on its command line): each runs a [`RrSpec`] in a
//! [`Session`] and gets figures ([`RrResult`]) back, or a [`BenchError`].
//!
//! Workload (fixed): a client in this process sends 256-byte records to an echo server in
//! another process, in groups of K outstanding requests (send K, await all K replies,
//! repeat) until `count` requests are answered. [`Path`]s: an agent over the direct link or
//! over NATS, each with a [`Codec`] (none, zstd level 1, zstd level 1 with a 4 KiB
//! dictionary trained on 3,000 records of the same shape); beside them raw `async-nats`
//! request/reply (K futures at once) and a raw `std::net` TCP round trip (K × 256 bytes
//! written, K × 256 read back).
//!
//! # Ground rules
//! 1. The server is always another process: [`Session::start`] spawns the command it is
//!    given (the caller's own binary, re-run into its server entry point) with the
//!    server's arguments appended; that process calls [`serve_main`], prints one
//!    `READY <link addr> <tcp addr>` line and serves until its standard input closes.
//! 2. nats-server is started by the session on a free loopback port (or an existing one is
//!    used, [`Nats::Url`]). When it is not installed the session still runs: NATS cells
//!    answer [`BenchError::Skip`] (not a failure); link and TCP cells run.
//! 3. Every cell checks its own result: each reply equals its request (by request id for
//!    the agent, by position for the raw paths); a failed, missing or different reply is a
//!    [`BenchError::Verify`]. A cell stops early only at its `limit`; [`RrResult::requests`]
//!    then says how many were answered, and the caller decides whether that is a failure.
//! 4. Shutdown: dropping the [`Session`] closes the server's standard input, waits for it
//!    (killing it after a grace period), stops the client environment, then stops
//!    nats-server.

mod client;
mod payload;
mod raw;
mod server;
mod session;

pub use payload::{RECORD_SIZE, wire_sizes};
pub use server::serve_main;
pub use session::{Nats, Session};

use crate::harness::BenchError;
use std::time::Duration;

/// The seed's figures (SObjectizer 4.4 b5, 2007), requests per second, uncompressed:
/// `(K, per second)`.
pub const SEED_PLAIN: [(usize, f64); 4] = [
    (1, 4_800.0),
    (10, 8_200.0),
    (100, 9_300.0),
    (1000, 10_200.0),
];
/// The seed's figures with compression ("zip"), `(K, per second)`.
pub const SEED_COMPRESSED: [(usize, f64); 4] =
    [(1, 2_700.0), (10, 4_500.0), (100, 4_800.0), (1000, 5_000.0)];

/// What a NATS cell answers when nats-server is not installed (and no URL was given): a
/// [`BenchError::Skip`], not a failure.
pub(crate) fn nats_unavailable() -> BenchError {
    BenchError::Skip("nats-server is not installed (looked in PATH, /usr/sbin, /usr/bin)".into())
}

/// How the client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// A raw `std::net` TCP round trip (no agents, no envelopes).
    RawTcp,
    /// A client agent over the direct link.
    Link,
    /// Raw `async-nats` request/reply (no agents, no envelopes).
    RawNats,
    /// A client agent over NATS.
    Nats,
}

impl Path {
    /// Every path, in table order.
    pub const ALL: [Path; 4] = [Path::RawTcp, Path::Link, Path::RawNats, Path::Nats];

    /// The short name (`tcp`, `link`, `raw`, `nats`), as the `remote_rr` binary's `--paths` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Path::RawTcp => "tcp",
            Path::Link => "link",
            Path::RawNats => "raw",
            Path::Nats => "nats",
        }
    }

    /// Whether the path goes through agents and a gateway (and so has a [`Codec`]).
    pub fn is_agentry(self) -> bool {
        matches!(self, Path::Link | Path::Nats)
    }

    /// Whether the path needs nats-server.
    pub fn needs_nats(self) -> bool {
        matches!(self, Path::RawNats | Path::Nats)
    }
}

/// How the agent paths encode each record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Postcard, uncompressed.
    Plain,
    /// zstd level 1.
    Zstd,
    /// zstd level 1 with the trained dictionary.
    Dict,
}

impl Codec {
    /// Every codec, in table order.
    pub const ALL: [Codec; 3] = [Codec::Plain, Codec::Zstd, Codec::Dict];

    /// The short name (`plain`, `zstd`, `dict`), as the `remote_rr` binary's `--codecs` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Plain => "plain",
            Codec::Zstd => "zstd",
            Codec::Dict => "dict",
        }
    }
}

/// One cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RrSpec {
    /// The path.
    pub path: Path,
    /// The codec (ignored by the raw paths).
    pub codec: Codec,
    /// Requests outstanding at once (the seed: 1, 10, 100, 1000).
    pub k: usize,
    /// Requests to answer (the seed: ≥ 50,000); rounded up to whole groups of K.
    pub count: usize,
    /// The cell stops sending new groups after this long.
    pub limit: Duration,
}

impl RrSpec {
    /// Requests a complete cell answers: `count` rounded up to whole groups of K.
    pub fn expected(&self) -> u64 {
        (self.count.div_ceil(self.k.max(1)) * self.k.max(1)) as u64
    }
}

/// The figures of one cell.
#[derive(Clone, Debug, PartialEq)]
pub struct RrResult {
    /// Requests answered, every reply checked (fewer than [`RrSpec::expected`] only when
    /// the cell reached its limit).
    pub requests: u64,
    /// Wall time from the first request to the last reply.
    pub elapsed: Duration,
}

impl RrResult {
    /// Requests per second.
    pub fn per_sec(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}
