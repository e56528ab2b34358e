//! A queued message's place in its agent's message limits (`mbox/limit.rs`): carried by the
//! demand through the queues and the slab, which need nothing else of the limits.

/// Index of the message limit a queued message holds a place in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct LimitSlot(u16);

impl LimitSlot {
    /// The message is not limited.
    pub(crate) const NONE: LimitSlot = LimitSlot(u16::MAX);
    /// The message's type is not limited but the agent's queue depth is tracked.
    pub(crate) const DEPTH: LimitSlot = LimitSlot(u16::MAX - 1);

    pub(crate) fn new(index: u16) -> Self {
        debug_assert!(index < u16::MAX - 1);
        LimitSlot(index)
    }

    /// The raw value (a demand packs it into a word, `demand.rs`).
    pub(crate) const fn to_bits(self) -> u16 {
        self.0
    }

    /// The slot whose raw value is `bits` (from [`to_bits`](Self::to_bits)).
    pub(crate) const fn from_bits(bits: u16) -> Self {
        LimitSlot(bits)
    }

    /// The index of the limit the message holds a place in, if any.
    pub(crate) fn index(self) -> Option<usize> {
        (self.0 < u16::MAX - 1).then_some(usize::from(self.0))
    }
}
