//! Typed identifiers.
//!
//! - [`AgentId`] is a slot index plus a generation: slots of deregistered agents are reused, the
//!   generation never repeats for a slot, so a stale id (or a demand queued for a dead agent)
//!   can never reach the agent that reuses the slot.
//! - [`MboxId`] comes from a process-wide 64-bit counter and is never reused.
//! - [`CoopId`] is a process-wide 64-bit sequence number, never reused, with the coop's slot in
//!   its environment's registry beside it (`coop/table.rs`), so that finding a coop is an index
//!   and a comparison of sequence numbers, not a hash lookup.

use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

/// Identity of a registered agent: slot index + generation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(NonZeroU64);

impl AgentId {
    /// `generation` is odd for a live agent, hence never zero.
    pub(crate) fn new(slot: u32, generation: u32) -> Self {
        let raw = (u64::from(generation) << 32) | u64::from(slot);
        AgentId(NonZeroU64::new(raw).expect("invariant: live generations are odd, never zero"))
    }

    /// The id a cell has between its definition and its registration's commit, which gives it
    /// its own (all ones: no slab reaches that slot; nothing reads it before the commit).
    pub(crate) const UNATTACHED: AgentId = AgentId(NonZeroU64::MAX);

    /// Index of the agent's slot in its environment (reused after the agent is gone).
    pub fn slot(self) -> u32 {
        self.0.get() as u32
    }

    /// Generation of the slot when this agent occupied it.
    pub fn generation(self) -> u32 {
        (self.0.get() >> 32) as u32
    }
}

impl fmt::Debug for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentId({}.{})", self.slot(), self.generation())
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent#{}.{}", self.slot(), self.generation())
    }
}

macro_rules! counter_id {
    ($(#[$doc:meta])* $name:ident, $counter:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub struct $name(NonZeroU64);

        static $counter: AtomicU64 = AtomicU64::new(1);

        impl $name {
            pub(crate) fn next() -> Self {
                let raw = $counter.fetch_add(1, Ordering::Relaxed);
                $name(NonZeroU64::new(raw).expect("invariant: the counter starts at 1 and never wraps"))
            }

            /// The raw value (unique in this process).
            pub fn get(self) -> u64 {
                self.0.get()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "#{}"), self.0)
            }
        }
    };
}

counter_id!(
    /// Identity of an mbox; never reused within a process.
    MboxId,
    NEXT_MBOX_ID,
    "mbox"
);
/// Identity of a coop (cooperation); never reused within a process.
///
/// Two ids are equal when they name the same coop; they order as the coops were registered
/// (within a process).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoopId {
    /// Process-wide sequence number: unique, the id's identity.
    seq: NonZeroU64,
    /// The coop's slot in its environment's registry (`coop/table.rs`), reused after the coop
    /// is gone; a slot's occupant is the coop only while its sequence number matches.
    slot: u32,
}

static NEXT_COOP_SEQ: AtomicU64 = AtomicU64::new(1);

impl CoopId {
    /// A new coop's id in `slot` of its registry.
    pub(crate) fn next_in(slot: u32) -> Self {
        let raw = NEXT_COOP_SEQ.fetch_add(1, Ordering::Relaxed);
        CoopId {
            seq: NonZeroU64::new(raw).expect("invariant: the counter starts at 1 and never wraps"),
            slot,
        }
    }

    /// The id of the coop with sequence number `seq` in `slot`.
    pub(crate) fn in_slot(slot: u32, seq: NonZeroU64) -> Self {
        CoopId { seq, slot }
    }

    /// Its process-wide sequence number.
    pub(crate) fn seq(self) -> NonZeroU64 {
        self.seq
    }

    /// The slot of the coop in its environment's registry.
    pub(crate) fn slot(self) -> u32 {
        self.slot
    }

    /// The raw value (unique in this process).
    pub fn get(self) -> u64 {
        self.seq.get()
    }
}

impl fmt::Debug for CoopId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CoopId({})", self.seq)
    }
}

impl fmt::Display for CoopId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coop#{}", self.seq)
    }
}
counter_id!(
    /// Identity of a death watch ([`Ctx::watch`](crate::Ctx::watch)); never reused within a
    /// process.
    WatchId,
    NEXT_WATCH_ID,
    "watch"
);

/// A hasher for the runtime's own ids (`MboxId`, `WatchId`, ...) and for `TypeId`s, keys of its
/// internal maps: the ids come from internal counters and type ids from the compiler (nobody
/// outside chooses them, so no flooding to guard against), and SipHash, the std default, costs
/// more than the lookups it serves (a coop's registration looks up its agents' type twice). Fibonacci
/// hashing of the one `u64` an id writes; any other input is folded in 8 bytes at a time.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Builds [`IdHasher`]s: `HashMap<MboxId, V, IdHash>`.
pub(crate) type IdHash = BuildHasherDefault<IdHasher>;
