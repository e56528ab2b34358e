//! Agentry's side of the comparison: the workloads of the `ring`, `ttl`, `pingpong`,
//! `skynet` and `fan_in` benchmarks, on the default `one_thread` dispatcher (single-thread)
//! or on a `thread_pool` of 2 threads (multi-thread).

use std::time::Duration;

use super::{Runtime, Workload};
use crate::benches::fan_in::run_fan_in;
use crate::benches::pingpong::run_pingpong;
use crate::benches::ring::run_ring;
use crate::benches::skynet::{Shape, run_skynet};
use crate::benches::support::Placement;
use crate::benches::ttl::{Layout, run_ttl};
use crate::harness::BenchError;

/// Runs `workload` on `runtime`; the time of its measured part, after verifying it.
pub(crate) fn run(workload: Workload, runtime: Runtime) -> Result<Duration, BenchError> {
    let placement = match runtime {
        Runtime::Single => Placement::OneThread,
        Runtime::Multi => Placement::ThreadPool(runtime.threads()),
    };
    match workload {
        Workload::Ring { n, m } => run_ring(n, m, placement).map(|run| run.ring),
        Workload::Ttl(params) => run_ttl(params, Layout::Objects(placement)),
        Workload::Pingpong { rounds } => run_pingpong(rounds, placement),
        Workload::Skynet { depth } => run_skynet(depth, placement, Shape::Coops),
        Workload::FanIn {
            senders,
            per_sender,
        } => run_fan_in(senders, per_sender, placement),
    }
}
