//! The counters of one chain.

/// A snapshot of a chain's counters ([`Mchain::stats`](super::Mchain::stats)), taken under the
/// chain's lock: a consistent cut.
///
/// Every message sent to the chain is in exactly one of `received`, `revoked`, `queued`,
/// `dropped` and `refused` (see the ground rules of [`mchain`](super)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainStats {
    /// Messages that entered the chain.
    pub pushed: u64,
    /// Messages taken out by receivers (`unhandled` included).
    pub received: u64,
    /// Received messages that a [`Handlers`](super::Handlers) set had no closure for.
    pub unhandled: u64,
    /// Messages the chain dropped by its own policy: the newest ([`Overflow::DropNewest`]) or
    /// the oldest ([`Overflow::RemoveOldest`]) on overflow, and the content at
    /// [`Close::DropContent`].
    ///
    /// [`Overflow::DropNewest`]: super::Overflow::DropNewest
    /// [`Overflow::RemoveOldest`]: super::Overflow::RemoveOldest
    /// [`Close::DropContent`]: super::Close::DropContent
    pub dropped: u64,
    /// Sends refused: the chain was closed, or full with `Fail` or a `Block` that timed out
    /// (and every refused timer or multi-mbox message).
    pub refused: u64,
    /// Sends that found the (bounded) chain full, whatever the reaction.
    pub overflow: u64,
    /// Timer messages discarded because their timer was cancelled after they were queued.
    pub revoked: u64,
    /// Messages queued at the time of the snapshot.
    pub queued: usize,
}
