//! # agentry-bench
//!
//! The Agentry benchmark suite: every seed benchmark — a workload published with its figure in
//! the documents the project started from (the SObjectizer 4.4 notes, the CatServerObjects
//! speed tests, the Asterisk scheduler review) — with that figure beside ours, peer
//! frameworks measured in the same run, a table on the terminal, `--json`/`--csv`
//! records, `--md` Markdown tables and `--plot` SVG charts. The targets and the latest figures
//! are in `BENCHMARKS.md` at the repository's root, the full tables of each run in
//! `bench-results/`.
//!
//! - [`harness`]: the reusable part. A benchmark is a [`BenchDef`](harness::BenchDef) whose
//!   `cases` function returns [`Case`](harness::Case)s for a [`Scale`](harness::Scale). Each case
//!   declares its fixed parameters and its timed phases (with the seed figure), and a runner
//!   that performs **one** repetition: it builds the workload (untimed), times its own phases,
//!   verifies its result and returns a [`Sample`](harness::Sample). The harness runs a warm-up,
//!   then at least 5 measured repetitions, and reports median, min and max per phase.
//! - [`benches`]: the registry of the benchmarks the binary runs.
//! - [`workloads`]: the workloads over sockets, io threads and other processes (`tcp_echo`,
//!   `ttl` variants 4 and 5, `remote_rr`) that benchmarks of [`benches`] drive, built on the
//!   public API of `agentry-net` and `agentry-remote` only.
//! - [`soak`]: `agentry-bench soak`, a long seeded churn that checks the runtime's accounting
//!   guarantees (not a benchmark; not run by `all` or by the tests).
//! - [`compare`]: the peer comparison — agentry beside actix, ractor and kameo (the peers
//!   are built with the default feature `peers`), every repetition in a child process.
//!
//! ## Adding a benchmark
//!
//! Write `src/benches/send_process.rs`, declare it in `src/benches.rs` (`mod send_process;`)
//! and add `send_process::BENCH` to `BENCHES`:
//!
//! ```
//! use agentry_bench::harness::{BenchDef, Case, ChartKind, PhaseSpec, Sample, Scale, timed, verify_eq};
//!
//! pub static BENCH: BenchDef = BenchDef {
//!     id: "send_process",
//!     description: "one agent sends N messages to itself, then handles them all",
//!     cases,
//!     charts: &[ChartKind::Bars],
//! };
//!
//! fn cases(scale: Scale) -> Vec<Case> {
//!     let n = scale.pick(100u64, 10_000, 1_000_000);
//!     vec![Case::builder(format!("one_thread N={n}"))
//!         .dispatcher("one_thread")
//!         .param("N", n)
//!         .phase(PhaseSpec::msgs("send").seed(242_570.0))
//!         .phase(PhaseSpec::msgs("process").seed(485_593.0))
//!         .runner(move || {
//!             let mut queue = Vec::with_capacity(n as usize); // setup: not timed
//!             let ((), send) = timed(|| queue.extend(0..n));
//!             let (sum, process) = timed(|| queue.drain(..).sum::<u64>());
//!             verify_eq("sum of the handled messages", n * (n - 1) / 2, sum)?;
//!             Ok(Sample::new().phase("send", send, n).phase("process", process, n))
//!         })]
//! }
//! # assert_eq!(BENCH.build_cases(Scale::Quick)[0].meta().bench, "send_process");
//! ```
//!
//! A wrong result returns [`BenchError::Verify`](harness::BenchError::Verify): the case is
//! printed as FAILED and the process exits with status 1. Other knobs on
//! [`CaseBuilder`](harness::CaseBuilder): `.impl_name("actix")` and `.peer("actix")` (a
//! `ratio` column, ours / theirs), `.baseline(label, impl)`, `.threads(n)`, `.memory()` (peak
//! RSS), `.reps(n)`, `.budget(d)` and `.cap_series("list")` (skip larger sizes once too slow).
//! A runner that cannot run here returns [`BenchError::Skip`](harness::BenchError::Skip).

// The only `unsafe` is in `harness/allocator.rs`: the `mallopt` and `malloc_trim` calls.
#![deny(unsafe_code)]

pub mod benches;
pub mod compare;
pub mod harness;
#[cfg(feature = "peers")]
mod peers;
pub mod soak;
pub mod workloads;
pub mod xorshift;
