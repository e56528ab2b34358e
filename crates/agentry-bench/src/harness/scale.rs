//! The size of every workload: the seed sizes, or a scaled-down version for a quick run.

/// Which workload sizes a run uses.
///
/// ```
/// use agentry_bench::harness::Scale;
/// let n = Scale::Quick.pick(100, 10_000, 1_000_000);
/// assert_eq!(n, 10_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scale {
    /// Tiny sizes: the test suite runs every benchmark once at this scale to check that it
    /// computes the right result (never to time it).
    Smoke,
    /// `--quick`: every workload scaled down so the whole suite takes about a minute on 2 cores.
    Quick,
    /// The default: the sizes of the seed documents.
    Full,
}

impl Scale {
    /// The size for this scale.
    #[must_use]
    pub fn pick<T>(self, smoke: T, quick: T, full: T) -> T {
        match self {
            Self::Smoke => smoke,
            Self::Quick => quick,
            Self::Full => full,
        }
    }

    /// `"quick"` or `"full"`, as printed in the header and stored in JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Smoke => "smoke",
            Self::Quick => "quick",
            Self::Full => "full",
        }
    }
}
