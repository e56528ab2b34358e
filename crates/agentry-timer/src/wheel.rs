//! [`WheelEngine`]: a hierarchical timing wheel with O(1) insert and cancel.
//!
//! # Ground rules
//!
//! Time is counted in ticks of `tick_ns` nanoseconds. A deadline `d` becomes the tick
//! `ceil(d / tick_ns)` (its *effective deadline* is that tick times `tick_ns`), and
//! `expire(now)` processes every tick up to `floor(now / tick_ns)`. So a timer never fires early
//! and fires at most `tick_ns - 1` ns after its deadline (0 when the deadline is a multiple of the
//! tick), relative to a driver that calls `expire` at the effective deadline.
//!
//! There are 6 levels of 64 slots (tokio's layout). Level `L` slot `s` holds timers whose tick
//! has `s` in bits `6L..6L+6`; a level covers 64 times the span of the level below, so the
//! levels together cover 2<sup>36</sup> ticks (about 795 days at the default 1 ms tick).
//!
//! 1. `elapsed` is the last processed tick: every timer with a tick `<= elapsed` has fired or
//!    waits in the *due* list. A timer inserted with such a tick goes to the due list, which is
//!    kept sorted by tick (insertion order within a tick) and fires first at the next `expire`.
//! 2. Every other timer sits at the level of the highest bit in which its tick differs from
//!    `elapsed` (level 0 if they differ only in the low 6 bits), in the slot its tick selects at
//!    that level. Hence timers with the same tick always share one list, in insertion order, and
//!    every occupied slot at a level lies after `elapsed`'s own slot there.
//! 3. A tick that differs from `elapsed` above bit 36 (a later *epoch* of 2<sup>36</sup> ticks)
//!    goes to the *overflow* list: unsorted, with a lower bound of its ticks (`overflow_min`; a
//!    cancel may leave it too low, which only costs an early wake-up).
//! 4. `expire` repeatedly takes the earliest occupied slot (lowest non-empty level, first
//!    occupied slot after `elapsed`'s), moves `elapsed` to the slot's first tick, fires the
//!    timers whose tick it is and re-links the rest relative to the new `elapsed`, which puts
//!    them on lower levels (cascading). Only when every level is empty does it take the overflow
//!    list, at the first tick of `overflow_min`'s epoch, so `elapsed` never enters an epoch
//!    whose timers still wait in overflow. A timer cascades at most 5 times between levels, plus
//!    once out of the overflow list per epoch it waits through.
//! 5. With nothing more to process before `now`, `elapsed` jumps to `floor(now / tick_ns)`; rule
//!    2 still holds because no occupied slot starts at or before it.
//!
//! # Trade-off
//!
//! - insert and cancel: O(1) (a division, a bit scan, two list links); expire: O(1) per slot
//!   visited plus O(1) per cascade, and at most 6 cascades per timer;
//! - coarse: deadlines are rounded up to the tick;
//! - [`next_deadline`](TimerEngine::next_deadline) is exact when the earliest timer sits on level
//!   0 or in the due list; otherwise it is the first tick of the earliest occupied slot, an
//!   early answer that costs the driver a wake-up in which `expire` only cascades. A timer causes
//!   at most 5 such wake-ups before it fires (plus one per epoch in overflow);
//! - memory: one slab node per timer (value, tick, two links, list id) plus 386 list heads.
//!
//! Prefer it for large populations of timeouts that are mostly cancelled (the `timer_churn`
//! workload); prefer [`HeapEngine`](crate::HeapEngine) when deadlines must be exact.

use std::fmt;
use std::num::NonZeroU64;

use crate::dlist::{DList, Linked, Links};
use crate::engine::TimerEngine;
use crate::key::TimerKey;
use crate::slab::Slab;

/// The default tick of a [`WheelEngine`]: 1 ms.
pub const DEFAULT_TICK_NS: u64 = 1_000_000;

const LEVELS: usize = 6;
const SLOT_BITS: u32 = 6;
const SLOTS: usize = 1 << SLOT_BITS;
const SLOT_MASK: u64 = SLOTS as u64 - 1;
/// Lists `0..WHEEL_LISTS` are the slots, level-major.
const WHEEL_LISTS: usize = LEVELS * SLOTS;
const OVERFLOW: usize = WHEEL_LISTS;
const DUE: usize = WHEEL_LISTS + 1;
const LISTS: usize = WHEEL_LISTS + 2;
/// The ticks within one epoch, the span of the whole wheel (2^36 ticks).
const EPOCH_MASK: u64 = (1 << (SLOT_BITS * LEVELS as u32)) - 1;

/// A timer engine on a hierarchical timing wheel: O(1) insert and cancel, deadlines rounded up
/// to the tick (never early, less than one tick late).
///
/// - **Rounding.** With a tick of `t` ns, a deadline `d` fires at the first `expire(now)` with
///   `now >= ceil(d / t) * t`: never early, at most `t - 1` ns late. Timers whose deadlines
///   round to the same tick fire in insertion order.
/// - **[`next_deadline`](TimerEngine::next_deadline)** is exact when the earliest timer is
///   already due or in the same aligned block of 64 ticks as the last `expire`'s `now` (it is on
///   level 0). Otherwise it is the first tick of the wheel slot holding the earliest timer,
///   which is earlier: a driver that sleeps until then wakes, `expire` fires nothing but moves
///   timers to a finer level, and the next answer is closer. A timer costs at most 5 such early
///   wake-ups.
/// - **Range.** 6 levels of 64 slots cover 2<sup>36</sup> ticks (795 days at 1 ms). Later
///   deadlines wait in an overflow list that is re-examined when time reaches the
///   2<sup>36</sup>-tick epoch of the earliest of them; for them `next_deadline` is a lower
///   bound of that earliest deadline.
/// - **Cost.** insert and cancel O(1); `expire` O(1) per visited slot and per cascade.
///
/// # Example
///
/// ```
/// use std::num::NonZeroU64;
/// use agentry_timer::{TimerEngine, WheelEngine};
///
/// // A 10 ns tick: a deadline of 25 ns is rounded up to 30 ns.
/// let mut wheel = WheelEngine::with_tick(NonZeroU64::new(10).unwrap(), 16);
/// let key = wheel.insert(25, "timeout");
/// wheel.insert(40, "poll");
///
/// let mut out = Vec::new();
/// wheel.expire(29, &mut out);
/// assert!(out.is_empty()); // never early...
/// wheel.expire(30, &mut out);
/// assert_eq!(out, [(key, "timeout")]); // ...and less than one tick late
///
/// // Hours ahead, on a higher level: cascades down as time passes.
/// let hour = 3_600_000_000_000;
/// let mut wheel = WheelEngine::new(); // 1 ms tick
/// let key = wheel.insert(hour, "hourly");
/// assert!(wheel.next_deadline().unwrap() <= hour);
/// assert_eq!(wheel.cancel(key), Some("hourly")); // O(1), wherever it sits
/// assert!(wheel.is_empty());
/// ```
#[derive(Clone)]
pub struct WheelEngine<T> {
    tick_ns: u64,
    /// The last processed tick (ground rule 1).
    elapsed: u64,
    /// Bit `s` of `occupied[L]`: level `L` slot `s` is non-empty.
    occupied: [u64; LEVELS],
    /// The slot lists, then the overflow and due lists.
    lists: Box<[DList]>,
    /// A lower bound of the overflow list's ticks; `u64::MAX` when it is empty.
    overflow_min: u64,
    slab: Slab<WheelNode<T>>,
}

/// A timer's slab node.
#[derive(Clone, Debug)]
struct WheelNode<T> {
    tick: u64,
    value: T,
    links: Links,
    /// Index into `lists` of the list holding the node.
    list: u16,
}

impl<T> Linked for WheelNode<T> {
    fn links(&self) -> &Links {
        &self.links
    }

    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

/// The next slot (or overflow list) to process and the tick `elapsed` moves to.
#[derive(Clone, Copy, Debug)]
struct Expiration {
    list: usize,
    tick: u64,
}

impl<T> WheelEngine<T> {
    /// An empty wheel with the default 1 ms tick.
    #[must_use]
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty wheel with the default 1 ms tick that holds `capacity` timers before it
    /// allocates. Their memory is written here, so those inserts take no page fault either.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_tick(
            NonZeroU64::new(DEFAULT_TICK_NS).expect("invariant: the default tick is not zero"),
            capacity,
        )
    }

    /// An empty wheel with a tick of `tick_ns` nanoseconds that holds `capacity` timers before
    /// it allocates (and, as with [`with_capacity`](Self::with_capacity), commits their memory).
    #[must_use]
    pub fn with_tick(tick_ns: NonZeroU64, capacity: usize) -> Self {
        Self {
            tick_ns: tick_ns.get(),
            elapsed: 0,
            occupied: [0; LEVELS],
            lists: vec![DList::EMPTY; LISTS].into_boxed_slice(),
            overflow_min: u64::MAX,
            slab: Slab::with_capacity(capacity),
        }
    }

    /// The tick in nanoseconds.
    #[must_use]
    pub fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    /// Links the node in `slot`, whose tick is `tick`, into the list ground rules 1–3 assign.
    fn link(&mut self, slot: u32, tick: u64) {
        if tick <= self.elapsed {
            self.link_due(slot, tick);
            return;
        }
        let masked = (self.elapsed ^ tick) | SLOT_MASK;
        let level = ((u64::BITS - 1 - masked.leading_zeros()) / SLOT_BITS) as usize;
        let list = if level < LEVELS {
            let index = ((tick >> (level as u32 * SLOT_BITS)) & SLOT_MASK) as usize;
            self.occupied[level] |= 1 << index;
            level * SLOTS + index
        } else {
            self.overflow_min = self.overflow_min.min(tick);
            OVERFLOW
        };
        self.slab.node_mut(slot).list = list as u16;
        self.lists[list].push_back(&mut self.slab, slot);
    }

    /// Links the node into the due list after every node whose tick is `<= tick`.
    fn link_due(&mut self, slot: u32, tick: u64) {
        let mut after = self.lists[DUE].tail();
        while let Some(prev) = after {
            let node = self.slab.node(prev);
            if node.tick <= tick {
                break;
            }
            after = node.links.prev_slot();
        }
        self.slab.node_mut(slot).list = DUE as u16;
        self.lists[DUE].insert_after(&mut self.slab, after, slot);
    }

    /// The earliest occupied slot, or the overflow list when every level is empty.
    fn next_expiration(&self) -> Option<Expiration> {
        for (level, &occupied) in self.occupied.iter().enumerate() {
            if occupied == 0 {
                continue;
            }
            let shift = level as u32 * SLOT_BITS;
            // Ground rule 2: every occupied slot lies after elapsed's, so the lowest one is next.
            let index = u64::from(occupied.trailing_zeros());
            debug_assert!(index > (self.elapsed >> shift) & SLOT_MASK);
            let level_start = self.elapsed & !((1 << (shift + SLOT_BITS)) - 1);
            return Some(Expiration {
                list: level * SLOTS + index as usize,
                tick: level_start | (index << shift),
            });
        }
        // Re-linking the overflow list at the start of the epoch of its earliest tick keeps rule 3:
        // `elapsed` can then never enter an epoch that still has timers in the overflow list.
        (!self.lists[OVERFLOW].is_empty()).then_some(Expiration {
            list: OVERFLOW,
            tick: self.overflow_min & !EPOCH_MASK,
        })
    }

    /// Ground rule 4: advances `elapsed` to the expiration's tick, fires what is due there and
    /// cascades the rest.
    fn process(&mut self, expiration: Expiration, out: &mut Vec<(TimerKey, T)>) {
        self.elapsed = expiration.tick;
        let mut list = std::mem::replace(&mut self.lists[expiration.list], DList::EMPTY);
        if expiration.list == OVERFLOW {
            self.overflow_min = u64::MAX;
        } else {
            self.occupied[expiration.list / SLOTS] &= !(1 << (expiration.list % SLOTS));
        }
        while let Some(slot) = list.pop_front(&mut self.slab) {
            let tick = self.slab.node(slot).tick;
            if tick <= self.elapsed {
                let (key, node) = self.slab.remove_slot(slot);
                out.push((key, node.value));
            } else {
                self.link(slot, tick);
            }
        }
    }

    fn ticks_to_ns(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.tick_ns)
    }

    /// Checks ground rules 1–3 for every node (tests only).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut count = 0;
        for (list, ends) in self.lists.iter().enumerate() {
            if list < WHEEL_LISTS {
                let bit = self.occupied[list / SLOTS] & (1 << (list % SLOTS)) != 0;
                assert_eq!(bit, !ends.is_empty(), "occupied bit of list {list}");
            }
            let mut prev = None;
            let mut prev_tick = 0;
            let mut cursor = ends.head();
            while let Some(slot) = cursor {
                let node = self.slab.node(slot);
                assert_eq!(node.list as usize, list);
                assert_eq!(node.links.prev_slot(), prev);
                match list {
                    DUE => {
                        assert!(node.tick <= self.elapsed);
                        assert!(node.tick >= prev_tick, "due list out of order");
                        prev_tick = node.tick;
                    }
                    OVERFLOW => {
                        assert!(node.tick > self.elapsed);
                        assert!(
                            (node.tick ^ self.elapsed) > EPOCH_MASK,
                            "belongs on a level"
                        );
                        assert!(node.tick >= self.overflow_min);
                    }
                    _ => {
                        let level = list / SLOTS;
                        let shift = level as u32 * SLOT_BITS;
                        assert!(node.tick > self.elapsed);
                        assert_eq!((node.tick >> shift) & SLOT_MASK, (list % SLOTS) as u64);
                        assert_eq!(
                            node.tick >> (shift + SLOT_BITS),
                            self.elapsed >> (shift + SLOT_BITS)
                        );
                        if level > 0 {
                            assert_ne!(
                                node.tick >> shift,
                                self.elapsed >> shift,
                                "too high a level"
                            );
                        }
                    }
                }
                prev = Some(slot);
                cursor = node.links.next_slot();
                count += 1;
            }
            assert_eq!(ends.tail(), prev);
        }
        assert_eq!(count, self.slab.len());
    }
}

impl<T> TimerEngine<T> for WheelEngine<T> {
    fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let tick = deadline.div_ceil(self.tick_ns);
        let key = self.slab.insert(WheelNode {
            tick,
            value,
            links: Links::UNLINKED,
            list: 0,
        });
        self.link(key.slot(), tick);
        key
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let list = usize::from(self.slab.get(key)?.list);
        let ends = &mut self.lists[list];
        ends.unlink(&mut self.slab, key.slot());
        if ends.is_empty() {
            if list < WHEEL_LISTS {
                self.occupied[list / SLOTS] &= !(1 << (list % SLOTS));
            } else if list == OVERFLOW {
                self.overflow_min = u64::MAX;
            }
        }
        Some(self.slab.remove_slot(key.slot()).1.value)
    }

    fn next_deadline(&self) -> Option<u64> {
        let tick = match self.lists[DUE].head() {
            Some(slot) => self.slab.node(slot).tick,
            None => match self.next_expiration()? {
                Expiration { list: OVERFLOW, .. } => self.overflow_min,
                expiration => expiration.tick,
            },
        };
        Some(self.ticks_to_ns(tick))
    }

    fn expire(&mut self, now: u64, out: &mut Vec<(TimerKey, T)>) {
        let target = now / self.tick_ns;
        while let Some(slot) = self.lists[DUE].head() {
            if self.slab.node(slot).tick > target {
                // `now` went backwards: the rest of the due list is not due yet.
                return;
            }
            self.lists[DUE].unlink(&mut self.slab, slot);
            let (key, node) = self.slab.remove_slot(slot);
            out.push((key, node.value));
        }
        while let Some(expiration) = self.next_expiration() {
            if expiration.tick > target {
                break;
            }
            self.process(expiration, out);
        }
        self.elapsed = self.elapsed.max(target);
    }

    fn len(&self) -> usize {
        self.slab.len()
    }

    fn drain(&mut self, out: &mut Vec<(TimerKey, T)>) {
        out.reserve(self.slab.len());
        for ends in self.lists.iter_mut() {
            while let Some(slot) = ends.pop_front(&mut self.slab) {
                let (key, node) = self.slab.remove_slot(slot);
                out.push((key, node.value));
            }
        }
        self.occupied = [0; LEVELS];
        self.overflow_min = u64::MAX;
    }
}

impl<T> Default for WheelEngine<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for WheelEngine<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WheelEngine")
            .field("tick_ns", &self.tick_ns)
            .field("elapsed_ticks", &self.elapsed)
            .field("len", &self.len())
            .field("next_deadline", &self.next_deadline())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
