//! Median, min and max of the measured repetitions, and the figures derived from them.

use std::time::Duration;

/// Summary of the measured repetitions of one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// The median; for an even count, the mean of the two middle values.
    pub median: Duration,
    /// The fastest repetition.
    pub min: Duration,
    /// The slowest repetition.
    pub max: Duration,
    /// How many repetitions were measured.
    pub count: usize,
}

impl Stats {
    /// The summary of `times`, `None` when it is empty.
    ///
    /// ```
    /// use agentry_bench::harness::Stats;
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let stats = Stats::of(&[ms(4), ms(1), ms(3), ms(2)]).expect("non-empty");
    /// assert_eq!(stats.median, Duration::from_micros(2_500));
    /// assert_eq!((stats.min, stats.max), (ms(1), ms(4)));
    /// ```
    #[must_use]
    pub fn of(times: &[Duration]) -> Option<Self> {
        let mut sorted = times.to_vec();
        sorted.sort_unstable();
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            let (low, high) = (sorted[mid - 1], sorted[mid]);
            low + (high - low) / 2
        };
        Some(Self {
            median,
            min,
            max,
            count: sorted.len(),
        })
    }

    /// Units per second at the median time; `None` for zero units or a zero median.
    #[must_use]
    pub fn per_sec(&self, units: u64) -> Option<f64> {
        let secs = self.median.as_secs_f64();
        (units > 0 && secs > 0.0).then(|| units as f64 / secs)
    }

    /// Nanoseconds per unit at the median time; `None` for zero units.
    #[must_use]
    pub fn ns_per_unit(&self, units: u64) -> Option<f64> {
        (units > 0).then(|| self.median.as_nanos() as f64 / units as f64)
    }
}

/// The median of `values` (mean of the two middle values for an even count), `None` if empty.
///
/// ```
/// assert_eq!(agentry_bench::harness::median_f64(&[3.0, 1.0, 2.0]), Some(2.0));
/// ```
#[must_use]
pub fn median_f64(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[mid]),
        _ => Some((sorted[mid - 1] + sorted[mid]) / 2.0),
    }
}

#[cfg(test)]
mod tests;
