//! What one repetition of a case returns: the elapsed time and unit count of each phase, plus
//! optional extra metrics.

use std::time::{Duration, Instant};

/// The measurement of one phase in one repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSample {
    /// The phase name, as declared with [`PhaseSpec`](crate::harness::PhaseSpec).
    pub name: String,
    /// Wall time of the phase.
    pub elapsed: Duration,
    /// How many units (messages, operations, agents) the phase processed.
    pub units: u64,
}

/// The result of one repetition of a case.
///
/// ```
/// use agentry_bench::harness::Sample;
/// use std::time::Duration;
/// let sample = Sample::new()
///     .phase("send", Duration::from_millis(2), 1_000)
///     .phase("process", Duration::from_millis(1), 1_000);
/// assert_eq!(sample.phases().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    phases: Vec<PhaseSample>,
    metrics: Vec<(String, f64)>,
    peak_rss_bytes: Option<u64>,
}

impl Sample {
    /// An empty sample.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a phase that took `elapsed` for `units` units.
    #[must_use]
    pub fn phase(mut self, name: impl Into<String>, elapsed: Duration, units: u64) -> Self {
        self.phases.push(PhaseSample {
            name: name.into(),
            elapsed,
            units,
        });
        self
    }

    /// Adds a named figure that is not a time (CPU %, bytes per agent); its median over the
    /// repetitions is reported in the case's notes and in JSON under `metrics`.
    #[must_use]
    pub fn metric(mut self, name: impl Into<String>, value: f64) -> Self {
        self.metrics.push((name.into(), value));
        self
    }

    /// Sets the peak resident set size of the repetition, measured by the runner itself (a
    /// repetition run in a child process reports the child's). The harness takes it instead
    /// of its own reading, and reports a peak even for a case that did not ask for memory.
    #[must_use]
    pub fn peak_rss(mut self, bytes: u64) -> Self {
        self.peak_rss_bytes = Some(bytes);
        self
    }

    /// The peak RSS the runner measured, if it did.
    #[must_use]
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        self.peak_rss_bytes
    }

    /// The phases, in the order they were added.
    #[must_use]
    pub fn phases(&self) -> &[PhaseSample] {
        &self.phases
    }

    /// The extra metrics, in the order they were added.
    #[must_use]
    pub fn metrics(&self) -> &[(String, f64)] {
        &self.metrics
    }
}

/// Runs `work` and returns its result with its wall time.
///
/// ```
/// let (sum, elapsed) = agentry_bench::harness::timed(|| (0..100u64).sum::<u64>());
/// assert_eq!(sum, 4950);
/// assert!(elapsed.as_secs() < 1);
/// ```
pub fn timed<R>(work: impl FnOnce() -> R) -> (R, Duration) {
    let start = Instant::now();
    let result = work();
    (result, start.elapsed())
}
