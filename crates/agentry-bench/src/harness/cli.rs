//! The command line: `agentry-bench <id>... [--quick] [--json FILE] [--csv FILE] [--md FILE]
//! [--plot DIR] [--reps N] [--warmup N] [--list] [--no-progress]`.

use std::path::PathBuf;

use clap::Parser;

use crate::harness::{MeasureConfig, Scale};

/// Warm-up repetitions unless `--warmup` says otherwise.
const DEFAULT_WARMUP: u32 = 1;

/// Runs the Agentry benchmarks and prints each beside the seed document's figure.
#[derive(Debug, Clone, PartialEq, Eq, Parser)]
#[command(
    name = "agentry-bench",
    version,
    about,
    after_help = "Ids: a benchmark id, `all` for every benchmark, or a group such as `compare` \
                  (see --list). Exit status: 0 when every case passed, 1 when a case failed \
                  its verification or an output file could not be written, 2 on a usage error. \
                  `agentry-bench soak --help`: the soak (not a benchmark, not in `all`)."
)]
pub struct Cli {
    /// Benchmarks to run: ids, `all`, or group ids (`compare`).
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
    /// Scale every workload down so that the whole suite takes a few minutes on 2 cores.
    #[arg(long)]
    pub quick: bool,
    /// Tiny workloads that only check results (the test suite's scale; times mean nothing).
    #[arg(long, hide = true, conflicts_with = "quick")]
    pub smoke: bool,
    /// Write one JSON object per line: a `{"machine": …}` line, then one per case and phase.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the same records as CSV (nested fields flattened as `params.N`).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the run's full tables as Markdown: the command, the machine header, then one
    /// table per benchmark (the shape of the files under `bench-results/`).
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
    /// Write the SVG charts each benchmark asks for into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Measured repetitions per case (default: the case's own, at least 5). Values below 5 are
    /// accepted for debugging only: the header then says the results are not valid.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: Option<u32>,
    /// Warm-up repetitions before the measured ones.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WARMUP, value_parser = clap::value_parser!(u32).range(1..))]
    pub warmup: u32,
    /// List the benchmark ids with a one-line description, and exit.
    #[arg(long)]
    pub list: bool,
    /// Do not draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

impl Cli {
    /// The workload scale chosen.
    #[must_use]
    pub fn scale(&self) -> Scale {
        if self.smoke {
            Scale::Smoke
        } else if self.quick {
            Scale::Quick
        } else {
            Scale::Full
        }
    }

    /// The command that measures what this one does, without its output options:
    /// `agentry-bench ring send --quick --reps 7`.
    ///
    /// ```
    /// use agentry_bench::harness::Cli;
    /// use clap::Parser;
    /// let cli = Cli::parse_from(["agentry-bench", "ring", "--quick", "--md", "r.md", "--warmup", "2"]);
    /// assert_eq!(cli.command_line(), "agentry-bench ring --quick --warmup 2");
    /// ```
    #[must_use]
    pub fn command_line(&self) -> String {
        let mut words = vec!["agentry-bench".to_owned()];
        words.extend(self.ids.iter().cloned());
        match self.scale() {
            Scale::Quick => words.push("--quick".to_owned()),
            Scale::Smoke => words.push("--smoke".to_owned()),
            Scale::Full => {}
        }
        if let Some(reps) = self.reps {
            words.push(format!("--reps {reps}"));
        }
        if self.warmup != DEFAULT_WARMUP {
            words.push(format!("--warmup {}", self.warmup));
        }
        words.join(" ")
    }

    /// The repetition settings chosen.
    #[must_use]
    pub fn measure_config(&self) -> MeasureConfig {
        MeasureConfig {
            warmup: self.warmup,
            reps: self.reps,
        }
    }
}
