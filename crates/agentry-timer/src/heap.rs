//! [`HeapEngine`]: a binary min-heap with an intrusive index (the Asterisk design).
//!
//! The heap array holds `(deadline, seq, slot)` items, so sifting compares without chasing a
//! pointer; each slab node records where its item sits in the array, so a cancel finds its item
//! in O(1) and repairs the heap in O(log N). This is the structure Asterisk moved its scheduler
//! to in 2009 (review 160) when the sorted list's O(N) insert cost 686 s for 1M adds.
//!
//! # Trade-off
//!
//! - insert, cancel, expire-one: O(log N) comparisons and moves, each move also rewriting the
//!   moved item's slab index (the cost of O(log N) cancel);
//! - exact: a timer fires at its deadline to the nanosecond, and
//!   [`next_deadline`](TimerEngine::next_deadline) is the true earliest deadline;
//! - memory: 16 bytes per heap item plus one slab node (`value` + a 4-byte index).
//!
//! Prefer it when deadlines must be exact or are spread over a range too wide for a wheel;
//! prefer [`WheelEngine`](crate::WheelEngine) for high churn of coarse timeouts.
//!
//! Ties are broken by a 32-bit sequence number taken at insert, so equal deadlines fire in
//! insertion order. Keeping it to 32 bits makes an item 16 bytes (four per cache line); before
//! the counter would wrap, the live items are renumbered in order (an in-place sort, once per
//! 2<sup>32</sup> inserts: a sorted array is a valid heap).

use std::fmt;

use crate::engine::TimerEngine;
use crate::key::TimerKey;
use crate::slab::Slab;

/// A timer engine on an indexed binary min-heap: O(log N) insert and cancel, exact deadlines.
///
/// # Example
///
/// ```
/// use agentry_timer::{HeapEngine, TimerEngine};
///
/// let mut heap = HeapEngine::with_capacity(16);
/// let retry = heap.insert(1_500, "retry");
/// heap.insert(500, "ping");
/// heap.insert(1_000, "tick");
/// assert_eq!(heap.next_deadline(), Some(500));
///
/// assert_eq!(heap.cancel(retry), Some("retry"));
///
/// let mut out = Vec::new();
/// heap.expire(999, &mut out);
/// assert_eq!(out.len(), 1);
/// assert_eq!(out[0].1, "ping");
///
/// out.clear();
/// heap.expire(1_000, &mut out); // fires at exactly its deadline
/// assert_eq!(out[0].1, "tick");
/// assert!(heap.is_empty());
/// ```
#[derive(Clone)]
pub struct HeapEngine<T> {
    heap: Vec<HeapItem>,
    slab: Slab<HeapNode<T>>,
    next_seq: u32,
}

/// One heap array element; the comparison key is `(deadline, seq)`.
#[derive(Clone, Copy, Debug)]
struct HeapItem {
    deadline: u64,
    seq: u32,
    slot: u32,
}

impl HeapItem {
    #[inline]
    fn before(&self, other: &Self) -> bool {
        (self.deadline, self.seq) < (other.deadline, other.seq)
    }
}

/// A timer's slab node: its value and the index of its item in the heap array.
#[derive(Clone, Debug)]
struct HeapNode<T> {
    pos: u32,
    value: T,
}

impl<T> HeapEngine<T> {
    /// An empty engine.
    #[must_use]
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty engine that holds `capacity` timers before it allocates. Their memory is
    /// written here, so those inserts take no page fault either.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        let mut heap = Vec::with_capacity(capacity);
        // Write the array once so its pages are committed now, not on the insert path.
        heap.resize(
            capacity,
            HeapItem {
                deadline: 0,
                seq: 0,
                slot: 0,
            },
        );
        heap.clear();
        Self {
            heap,
            slab: Slab::with_capacity(capacity),
            next_seq: 0,
        }
    }

    /// Moves the item at `pos` towards the root until its parent is earlier.
    fn sift_up(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let above = self.heap[parent];
            if !item.before(&above) {
                break;
            }
            self.place(pos, above);
            pos = parent;
        }
        self.place(pos, item);
    }

    /// Moves the item at `pos` towards the leaves until both children are later.
    fn sift_down(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        let len = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].before(&self.heap[left]) {
                right
            } else {
                left
            };
            let below = self.heap[child];
            if !below.before(&item) {
                break;
            }
            self.place(pos, below);
            pos = child;
        }
        self.place(pos, item);
    }

    /// Stores `item` at `pos` and records the position in its node.
    #[inline]
    fn place(&mut self, pos: usize, item: HeapItem) {
        self.heap[pos] = item;
        // Positions fit: the slab never holds more than u32::MAX - 1 nodes.
        self.slab.node_mut(item.slot).pos = pos as u32;
    }

    /// Takes the next sequence number, renumbering the live items first if it would wrap.
    #[inline]
    fn take_seq(&mut self) -> u32 {
        if self.next_seq == u32::MAX {
            self.renumber();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Sorts the array by `(deadline, seq)`, a valid heap, and renumbers `seq` from 0 in that
    /// order, which keeps every tie in insertion order.
    #[cold]
    fn renumber(&mut self) {
        self.heap
            .sort_unstable_by_key(|item| (item.deadline, item.seq));
        for pos in 0..self.heap.len() {
            let item = HeapItem {
                seq: pos as u32,
                ..self.heap[pos]
            };
            self.place(pos, item);
        }
        self.next_seq = self.heap.len() as u32;
    }

    /// Removes the item at `pos` and restores the heap order.
    fn remove_at(&mut self, pos: usize) -> HeapItem {
        let last = self
            .heap
            .pop()
            .expect("invariant: remove_at is given a valid position");
        if pos == self.heap.len() {
            return last;
        }
        let removed = std::mem::replace(&mut self.heap[pos], last);
        if pos > 0 && last.before(&self.heap[(pos - 1) / 2]) {
            self.sift_up(pos);
        } else {
            self.sift_down(pos);
        }
        removed
    }

    /// Checks the heap order and every node's index (tests only).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        assert_eq!(self.heap.len(), self.slab.len());
        for (pos, item) in self.heap.iter().enumerate() {
            assert_eq!(self.slab.node(item.slot).pos as usize, pos, "stale index");
            if pos > 0 {
                assert!(
                    !item.before(&self.heap[(pos - 1) / 2]),
                    "heap order broken at {pos}"
                );
            }
        }
    }
}

impl<T> TimerEngine<T> for HeapEngine<T> {
    fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let seq = self.take_seq();
        let pos = self.heap.len();
        let key = self.slab.insert(HeapNode {
            pos: pos as u32,
            value,
        });
        self.heap.push(HeapItem {
            deadline,
            seq,
            slot: key.slot(),
        });
        self.sift_up(pos);
        key
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let pos = self.slab.get(key)?.pos;
        self.remove_at(pos as usize);
        Some(self.slab.remove_slot(key.slot()).1.value)
    }

    fn next_deadline(&self) -> Option<u64> {
        self.heap.first().map(|item| item.deadline)
    }

    fn expire(&mut self, now: u64, out: &mut Vec<(TimerKey, T)>) {
        while self.heap.first().is_some_and(|item| item.deadline <= now) {
            let item = self.remove_at(0);
            let (key, node) = self.slab.remove_slot(item.slot);
            out.push((key, node.value));
        }
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn drain(&mut self, out: &mut Vec<(TimerKey, T)>) {
        out.reserve(self.heap.len());
        for item in self.heap.drain(..) {
            let (key, node) = self.slab.remove_slot(item.slot);
            out.push((key, node.value));
        }
    }
}

impl<T> Default for HeapEngine<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for HeapEngine<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapEngine")
            .field("len", &self.len())
            .field("next_deadline", &self.next_deadline())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
