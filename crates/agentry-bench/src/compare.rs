//! `compare`: agentry beside actix, ractor and kameo on five workloads — `ring`, `ttl`,
//! `pingpong`, `skynet`, `fan_in` — measured in the same run, with the same semantics and
//! parameters. `agentry-bench compare [--quick] [--json F] [--csv F] [--md F] [--plot DIR]`
//! runs them all; each is also a benchmark of its own (`compare_ring`, …), never part of `all`.
//!
//! # Ground rules
//! 1. One definition per workload (`Workload`): its parameters at each scale, its phase and
//!    its unit. Every implementation runs exactly these with the same semantics and verifies
//!    its own result (counts, the skynet sum); a wrong result fails the case.
//! 2. Two runtimes per implementation ([`Runtime`]): *single-thread* — agentry's `one_thread`
//!    dispatcher, an actix `System`, tokio's `current_thread` runtime under ractor and kameo —
//!    and *multi-thread* — agentry's `thread_pool` of 2 threads, 2 actix `Arbiter`s (actix
//!    has no multi-threaded executor), tokio's default multi-thread runtime (a worker per
//!    core). A peer default that had to change is printed as a note of its cases.
//! 3. Every repetition runs in a child process, `agentry-bench __run-child WORKLOAD IMPL
//!    RUNTIME SCALE` (`harness/child.rs`): the child runs the workload once untimed, then once
//!    timed, and reports its peak RSS, which is thus per workload, implementation and runtime.
//! 4. A workload's cases are interleaved (agentry, actix, ractor, kameo, agentry, …), so a
//!    drift of the machine's load weighs on every implementation alike.
//! 5. Agentry's cases name every peer as a baseline: `ratio` is agentry / peer in units per
//!    second — above 1, agentry is faster.
//! 6. The sizes are not the seed sizes: at `--quick` the slowest peer needs a fraction of a
//!    second per run, so that the comparison takes a few minutes.

mod agentry;
mod workload;

pub(crate) use workload::Workload;
pub use workload::{Impl, Runtime, WorkloadId};

use std::ffi::OsString;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::time::Duration;

use crate::harness::child::{run_in_child, sample_line};
use crate::harness::{
    BenchDef, BenchError, Case, ChartKind, EXIT_FAILED, EXIT_OK, EXIT_USAGE, Sample, Scale,
    panic_message, rss,
};

/// The hidden first argument that makes the binary a child running one repetition (rule 3).
pub const CHILD_COMMAND: &str = "__run-child";

/// A child still running after this long is killed and its case failed.
const CHILD_DEADLINE: Duration = Duration::from_secs(600);

/// The ids of the comparison benchmarks, in run order (the `compare` group).
pub static IDS: &[&str] = &[
    "compare_ring",
    "compare_ttl",
    "compare_pingpong",
    "compare_skynet",
    "compare_fan_in",
];

/// The comparison benchmarks, one per workload.
pub static BENCHES: &[BenchDef] = &[
    BenchDef {
        id: "compare_ring",
        description: "ring of N actors, M tokens, each makes a full circle; agentry vs peers",
        cases: |scale| cases(WorkloadId::Ring, scale),
        charts: &[ChartKind::Bars],
    },
    BenchDef {
        id: "compare_ttl",
        description: "K actors by index, P messages with a TTL, random hops; agentry vs peers",
        cases: |scale| cases(WorkloadId::Ttl, scale),
        charts: &[ChartKind::Bars],
    },
    BenchDef {
        id: "compare_pingpong",
        description: "2 actors, R round trips; agentry vs peers",
        cases: |scale| cases(WorkloadId::Pingpong, scale),
        charts: &[ChartKind::Bars],
    },
    BenchDef {
        id: "compare_skynet",
        description: "10-ary tree of actors, 10^D leaves send their number up; agentry vs peers",
        cases: |scale| cases(WorkloadId::Skynet, scale),
        charts: &[ChartKind::Bars],
    },
    BenchDef {
        id: "compare_fan_in",
        description: "T threads each send S messages to one actor; agentry vs peers",
        cases: |scale| cases(WorkloadId::FanIn, scale),
        charts: &[ChartKind::Bars],
    },
];

/// The cases of one workload: every implementation on every runtime, interleaved, each
/// repetition in a child process.
fn cases(id: WorkloadId, scale: Scale) -> Vec<Case> {
    let workload = Workload::at(id, scale);
    let mut cases = Vec::new();
    for runtime in Runtime::ALL {
        for &imp in Impl::ALL {
            let mut builder = Case::builder(format!("{} {}", runtime.label(), workload.label()))
                .impl_name(imp.name())
                .dispatcher(imp.dispatcher(runtime))
                .threads(runtime.threads())
                .phase(workload.phase())
                .interleave();
            for (name, value) in workload.params() {
                builder = builder.param(name, value);
            }
            for note in imp.notes(runtime) {
                builder = builder.note(*note);
            }
            if imp == Impl::Agentry {
                for peer in Impl::ALL.iter().filter(|&&peer| peer != Impl::Agentry) {
                    builder = builder.peer(peer.name());
                }
            }
            cases.push(builder.runner(move || {
                let exe = std::env::current_exe().map_err(|e| {
                    BenchError::Harness(format!("cannot find the benchmark binary: {e}"))
                })?;
                run_in_child(
                    Command::new(exe).args([
                        CHILD_COMMAND,
                        id.name(),
                        imp.name(),
                        runtime.name(),
                        scale.name(),
                    ]),
                    CHILD_DEADLINE,
                )
            }));
        }
    }
    cases
}

/// Runs workload `id` at `scale` on `imp` with `runtime` in this process: once untimed, then
/// once timed (what a child does, without the peak RSS).
///
/// # Errors
/// A failed verification or setup of the implementation.
pub fn run_in_process(
    id: WorkloadId,
    imp: Impl,
    runtime: Runtime,
    scale: Scale,
) -> Result<Sample, BenchError> {
    let workload = Workload::at(id, scale);
    run_impl(imp, workload, runtime)?;
    Ok(workload.sample(run_impl(imp, workload, runtime)?))
}

fn run_impl(imp: Impl, workload: Workload, runtime: Runtime) -> Result<Duration, BenchError> {
    match imp {
        Impl::Agentry => agentry::run(workload, runtime),
        #[cfg(feature = "peers")]
        Impl::Actix => crate::peers::actix::run(workload, runtime),
        #[cfg(feature = "peers")]
        Impl::Ractor => crate::peers::ractor::run(workload, runtime),
        #[cfg(feature = "peers")]
        Impl::Kameo => crate::peers::kameo::run(workload, runtime),
    }
}

/// The child side of rule 3: `args` are what follows [`CHILD_COMMAND`] (`WORKLOAD IMPL
/// RUNTIME SCALE`); prints the result line on `out` and returns the exit status.
pub fn child_main(args: &[OsString], out: &mut dyn Write) -> u8 {
    let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let parsed = match words[..] {
        [workload, imp, runtime, scale] => WorkloadId::parse(workload)
            .zip(Impl::parse(imp))
            .zip(Runtime::parse(runtime))
            .zip(parse_scale(scale))
            .map(|(((w, i), r), s)| (w, i, r, s)),
        _ => None,
    };
    let Some((id, imp, runtime, scale)) = parsed else {
        // Best effort: the parent reads a missing line as a failure anyway.
        let _ = writeln!(
            out,
            "{}",
            sample_line(&Err(BenchError::Harness(format!(
                "usage: {CHILD_COMMAND} WORKLOAD IMPL RUNTIME SCALE, got {words:?}"
            ))))
        );
        return EXIT_USAGE;
    };
    let result = catch_unwind(AssertUnwindSafe(|| run_in_process(id, imp, runtime, scale)))
        .unwrap_or_else(|payload| Err(BenchError::Panic(panic_message(payload.as_ref()))))
        .map(|sample| match rss::peak_rss_bytes() {
            Ok(peak) => sample.peak_rss(peak),
            Err(_) => sample,
        });
    // Best effort: the parent reads a missing line as a failure anyway.
    let _ = writeln!(out, "{}", sample_line(&result)).and_then(|()| out.flush());
    if result.is_ok() { EXIT_OK } else { EXIT_FAILED }
}

fn parse_scale(name: &str) -> Option<Scale> {
    [Scale::Smoke, Scale::Quick, Scale::Full]
        .into_iter()
        .find(|scale| scale.name() == name)
}

#[cfg(test)]
mod tests;
