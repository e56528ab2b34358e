//! [`TimerKey`]: the generational handle of one scheduled timer.

/// Identifies one timer inside one engine.
///
/// A key names a slab slot plus the generation that slot had when the timer was inserted.
/// When a timer fires, is cancelled or is drained, its slot's generation is bumped, so the old
/// key goes stale: a stale key can never cancel a newer timer that reuses the slot.
///
/// Keys are only meaningful to the engine that issued them. A generation wraps after
/// 2<sup>32</sup> reuses of the same slot; only a key kept that long could alias again.
///
/// # Example
///
/// ```
/// use agentry_timer::{HeapEngine, TimerEngine};
///
/// let mut engine = HeapEngine::new();
/// let first = engine.insert(10, "a");
/// assert_eq!(engine.cancel(first), Some("a"));
///
/// // The slot is reused, with a new generation: the old key cannot touch the new timer.
/// let second = engine.insert(20, "b");
/// assert_eq!(first.slot(), second.slot());
/// assert_ne!(first, second);
/// assert_eq!(engine.cancel(first), None);
/// assert_eq!(engine.cancel(second), Some("b"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerKey {
    slot: u32,
    generation: u32,
}

impl TimerKey {
    pub(crate) const fn new(slot: u32, generation: u32) -> Self {
        Self { slot, generation }
    }

    /// The slab slot the timer occupies (reused after the timer is gone).
    #[must_use]
    pub const fn slot(self) -> u32 {
        self.slot
    }

    /// The generation of the slot when the timer was inserted.
    #[must_use]
    pub const fn generation(self) -> u32 {
        self.generation
    }
}
