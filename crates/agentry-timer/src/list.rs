//! [`ListEngine`]: a sorted doubly-linked list, the Asterisk scheduler before 2009.
//!
//! Kept only as the baseline of the `sched` benchmark, which reproduces the add/delete table of
//! Asterisk review 160. Like Asterisk's `sched.c`, an insert walks from the head to the first
//! entry with a later deadline, so with evenly spread deadlines it makes N/2 comparisons on
//! average and N at worst; a cancel unlinks its node in O(1).
//!
//! # Trade-off
//!
//! - insert: O(N) pointer-chasing comparisons; cancel: O(1); expire-one: O(1);
//! - exact: deadlines are kept to the nanosecond and
//!   [`next_deadline`](TimerEngine::next_deadline) is the head's deadline;
//! - memory: one slab node per timer (value, deadline, two links).
//!
//! Use [`HeapEngine`](crate::HeapEngine) or [`WheelEngine`](crate::WheelEngine) instead; at
//! N = 1e6 the review measured 686.7 s to add the timers to the list versus 2.7 s to the heap.

use std::fmt;

use crate::dlist::{DList, Linked, Links};
use crate::engine::TimerEngine;
use crate::key::TimerKey;
use crate::slab::Slab;

/// A timer engine on a sorted doubly-linked list: O(N) insert, O(1) cancel (benchmark baseline).
///
/// # Example
///
/// ```
/// use agentry_timer::{ListEngine, TimerEngine};
///
/// let mut list = ListEngine::new();
/// list.insert(300, 'c');
/// list.insert(100, 'a');
/// let b = list.insert(200, 'b'); // walks past 'a' to sit before 'c'
/// assert_eq!(list.next_deadline(), Some(100));
/// assert_eq!(list.cancel(b), Some('b')); // O(1) unlink
///
/// let mut out = Vec::new();
/// list.expire(u64::MAX, &mut out);
/// let fired: Vec<char> = out.into_iter().map(|(_, value)| value).collect();
/// assert_eq!(fired, ['a', 'c']);
/// ```
#[derive(Clone)]
pub struct ListEngine<T> {
    list: DList,
    slab: Slab<ListNode<T>>,
}

/// A timer's slab node.
#[derive(Clone, Debug)]
struct ListNode<T> {
    deadline: u64,
    value: T,
    links: Links,
}

impl<T> Linked for ListNode<T> {
    fn links(&self) -> &Links {
        &self.links
    }

    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

impl<T> ListEngine<T> {
    /// An empty engine.
    #[must_use]
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty engine that holds `capacity` timers before it allocates. Their memory is
    /// written here, so those inserts take no page fault either.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            list: DList::EMPTY,
            slab: Slab::with_capacity(capacity),
        }
    }

    /// Checks the order and the links (tests only).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut count = 0;
        let mut prev = None;
        let mut cursor = self.list.head();
        while let Some(slot) = cursor {
            let node = self.slab.node(slot);
            assert_eq!(node.links.prev_slot(), prev);
            if let Some(prev) = prev {
                assert!(
                    self.slab.node(prev).deadline <= node.deadline,
                    "list out of order"
                );
            }
            prev = Some(slot);
            cursor = node.links.next_slot();
            count += 1;
        }
        assert_eq!(self.list.tail(), prev);
        assert_eq!(count, self.slab.len());
    }
}

impl<T> TimerEngine<T> for ListEngine<T> {
    fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        // Walk to the first later deadline: equal deadlines stay in insertion order.
        let mut before = self.list.head();
        while let Some(slot) = before {
            let node = self.slab.node(slot);
            if node.deadline > deadline {
                break;
            }
            before = node.links.next_slot();
        }
        let key = self.slab.insert(ListNode {
            deadline,
            value,
            links: Links::UNLINKED,
        });
        self.list.insert_before(&mut self.slab, before, key.slot());
        key
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        self.slab.get(key)?;
        self.list.unlink(&mut self.slab, key.slot());
        Some(self.slab.remove_slot(key.slot()).1.value)
    }

    fn next_deadline(&self) -> Option<u64> {
        self.list.head().map(|slot| self.slab.node(slot).deadline)
    }

    fn expire(&mut self, now: u64, out: &mut Vec<(TimerKey, T)>) {
        while let Some(slot) = self.list.head() {
            if self.slab.node(slot).deadline > now {
                break;
            }
            self.list.unlink(&mut self.slab, slot);
            let (key, node) = self.slab.remove_slot(slot);
            out.push((key, node.value));
        }
    }

    fn len(&self) -> usize {
        self.slab.len()
    }

    fn drain(&mut self, out: &mut Vec<(TimerKey, T)>) {
        out.reserve(self.slab.len());
        while let Some(slot) = self.list.pop_front(&mut self.slab) {
            let (key, node) = self.slab.remove_slot(slot);
            out.push((key, node.value));
        }
    }
}

impl<T> Default for ListEngine<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for ListEngine<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListEngine")
            .field("len", &self.len())
            .field("next_deadline", &self.next_deadline())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
