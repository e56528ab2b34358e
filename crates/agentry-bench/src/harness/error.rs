//! Errors of the harness: what a benchmark repetition can report, and what writing the
//! reports can fail with.

use std::path::PathBuf;

/// Why one repetition of a case did not produce a [`Sample`](crate::harness::Sample).
///
/// `Verify` and `Harness` fail the case (the run exits non-zero after printing which case
/// failed); `Skip` only skips it (printed, not a failure).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The benchmark computed a wrong result (a count or a sum that does not match).
    #[error("verification failed: {0}")]
    Verify(String),
    /// The case cannot run here (a missing server, an unsupported platform); not a failure.
    #[error("skipped: {0}")]
    Skip(String),
    /// The case broke a rule of the harness (phases that do not match the declaration, unit
    /// counts that change between repetitions) or could not set its workload up.
    #[error("harness: {0}")]
    Harness(String),
    /// The runner panicked; the panic message is kept.
    #[error("panicked: {0}")]
    Panic(String),
}

impl BenchError {
    /// Whether this error fails the run (everything but [`BenchError::Skip`]).
    #[must_use]
    pub fn is_failure(&self) -> bool {
        !matches!(self, Self::Skip(_))
    }
}

/// A failed socket, pipe or process operation while a workload runs (the workloads of
/// [`workloads`](crate::workloads) use `?` on them): a [`BenchError::Harness`], since the
/// benchmark could not run, not a wrong result.
impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        Self::Harness(format!("i/o: {e}"))
    }
}

/// Writing a report file or a chart failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// An I/O error on the named file.
    #[error("{path}: {source}")]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Plotters could not draw a chart.
    #[error("{path}: cannot draw chart: {message}")]
    Plot {
        /// The chart file being written.
        path: PathBuf,
        /// What plotters reported.
        message: String,
    },
}

impl OutputError {
    /// Wraps an I/O error with the path it happened on.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
