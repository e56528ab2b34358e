//! The pseudo-random generator of the `ttl` workloads (agentry and every peer alike): one
//! per agent or actor, seeded from its index, so that a run is cheap to drive and the same
//! seeds are used by every implementation.
//!
//! Marsaglia's xorshift64 ("Xorshift RNGs", 2003, shifts 13/7/17), and Lemire's
//! multiply-shift to map a draw onto `0..n` without a division.

/// A xorshift64 generator.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// The generator of agent `index` (any index gives a non-zero state).
    #[must_use]
    pub fn for_index(index: u64) -> Self {
        // The golden-ratio increment spreads neighbouring indices; `| 1` keeps the state non-zero.
        Self((index.wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next draw.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A draw uniformly spread over `0..n` (`n > 0`).
    ///
    /// ```
    /// let mut rng = agentry_bench::xorshift::XorShift::for_index(7);
    /// assert!((0..1000).all(|_| rng.below(1024) < 1024));
    /// ```
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}
