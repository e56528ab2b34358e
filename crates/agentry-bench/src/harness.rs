//! The benchmark harness: the model a benchmark module fills in (cases, phases, samples), the
//! measurement loop, and every output (table, JSON, CSV, Markdown, charts).
//!
//! A benchmark module uses the items re-exported here; the submodules `json`, `csv`,
//! `markdown`, `plot`, `report` and `rss` are public for their plain-data helpers, `child` for
//! running a repetition in a child process.

pub mod allocator;
mod case;
mod chart;
pub mod child;
mod cli;
pub mod csv;
mod error;
pub mod json;
mod machine;
pub mod markdown;
mod measure;
mod phase;
pub mod plot;
mod progress;
mod ratio;
mod record;
mod registry;
pub mod report;
pub mod rss;
mod runner;
mod sample;
mod scale;
mod stats;
#[cfg(test)]
mod test_support;
mod verify;

pub use case::{BaselineRef, Case, CaseBuilder, CaseMeta, DEFAULT_IMPL, Runner};
pub use chart::{ChartKind, ChartY, draw_charts};
pub use cli::Cli;
pub use error::{BenchError, OutputError};
pub use machine::{MachineInfo, utc_date};
pub use measure::{
    CaseReport, CaseStatus, MIN_REPS, MeasureConfig, Measured, PhaseResult, RepProgress,
    measure_case, measure_rounds, panic_message,
};
pub use phase::{PhaseSpec, Unit};
pub use progress::Progress;
pub use ratio::apply_ratios;
pub use record::{Record, Value, case_records};
pub use registry::{ALL, BenchDef, CasesFn, Group, Registry, SelectError, Selection};
pub use runner::{EXIT_FAILED, EXIT_OK, EXIT_USAGE, Outcome, exit_code, run, run_cli};
pub use sample::{PhaseSample, Sample, timed};
pub use scale::Scale;
pub use stats::{Stats, median_f64};
pub use verify::{ensure, verify_eq};

/// Re-exported so runners can keep the optimiser from deleting measured work.
pub use std::hint::black_box;
