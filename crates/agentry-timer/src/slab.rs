//! [`Slab`]: the generational slot store shared by every engine.
//!
//! Engines keep their per-timer nodes here and link them by slot index (never by pointer).
//! A removed slot goes onto a LIFO free list and its generation is bumped, which is what makes
//! an old [`TimerKey`] stale. Slots are reused before the vector grows, so a steady population of
//! timers allocates nothing; `with_capacity` creates its slots up front, so the first `capacity`
//! inserts do not even touch fresh memory.

use crate::key::TimerKey;

/// End of the free list; never a valid slot (lists use the same value as "no node").
const NO_FREE: u32 = u32::MAX;

/// The most slots a slab has: `u32::MAX - 1`, so slot indices, heap positions and the heap's
/// sequence counter all fit in a `u32` with a value to spare.
const MAX_SLOTS: u32 = u32::MAX - 1;

/// One slab entry: a live node, or a link in the free list.
#[derive(Clone, Debug)]
enum Entry<E> {
    Occupied { generation: u32, node: E },
    Vacant { generation: u32, next_free: u32 },
}

/// A generational slab of engine nodes.
#[derive(Clone, Debug)]
pub(crate) struct Slab<E> {
    entries: Vec<Entry<E>>,
    free_head: u32,
    len: usize,
}

impl<E> Slab<E> {
    /// An empty slab whose first `capacity` slots already exist, linked in order on the free
    /// list: writing them here commits their memory, so inserts up to `capacity` neither
    /// allocate nor take a page fault.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let slots = capacity.min(MAX_SLOTS as usize) as u32;
        let entries = (0..slots)
            .map(|slot| Entry::Vacant {
                generation: 0,
                next_free: if slot + 1 == slots { NO_FREE } else { slot + 1 },
            })
            .collect();
        Self {
            entries,
            free_head: if slots == 0 { NO_FREE } else { 0 },
            len: 0,
        }
    }

    /// Number of live nodes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores `node` and returns its key.
    ///
    /// # Panics
    ///
    /// If `u32::MAX - 1` nodes are already live (the documented capacity limit of an engine).
    pub(crate) fn insert(&mut self, node: E) -> TimerKey {
        if self.free_head != NO_FREE {
            let slot = self.free_head;
            let entry = &mut self.entries[slot as usize];
            let (generation, next_free) = match *entry {
                Entry::Vacant {
                    generation,
                    next_free,
                } => Some((generation, next_free)),
                Entry::Occupied { .. } => None,
            }
            .expect("invariant: the free list only holds vacant slots");
            self.free_head = next_free;
            *entry = Entry::Occupied { generation, node };
            self.len += 1;
            return TimerKey::new(slot, generation);
        }
        let slot = u32::try_from(self.entries.len())
            .ok()
            .filter(|&slot| slot < MAX_SLOTS)
            .expect("invariant: fewer than u32::MAX - 1 timers are live at once");
        self.entries.push(Entry::Occupied {
            generation: 0,
            node,
        });
        self.len += 1;
        TimerKey::new(slot, 0)
    }

    /// The node named by `key`, if the key is live.
    pub(crate) fn get(&self, key: TimerKey) -> Option<&E> {
        match self.entries.get(key.slot() as usize) {
            Some(Entry::Occupied { generation, node }) if *generation == key.generation() => {
                Some(node)
            }
            _ => None,
        }
    }

    /// Removes the live node in `slot` and returns it with the key it had.
    pub(crate) fn remove_slot(&mut self, slot: u32) -> (TimerKey, E) {
        let entry = &mut self.entries[slot as usize];
        let generation = match entry {
            Entry::Occupied { generation, .. } | Entry::Vacant { generation, .. } => *generation,
        };
        let vacant = Entry::Vacant {
            generation: generation.wrapping_add(1),
            next_free: self.free_head,
        };
        let node = match std::mem::replace(entry, vacant) {
            Entry::Occupied { node, .. } => Some(node),
            Entry::Vacant { .. } => None,
        }
        .expect("invariant: engines only remove live slots");
        self.free_head = slot;
        self.len -= 1;
        (TimerKey::new(slot, generation), node)
    }

    /// The live node in `slot`.
    pub(crate) fn node(&self, slot: u32) -> &E {
        match &self.entries[slot as usize] {
            Entry::Occupied { node, .. } => Some(node),
            Entry::Vacant { .. } => None,
        }
        .expect("invariant: engines only follow links to live slots")
    }

    /// The live node in `slot`, mutably.
    pub(crate) fn node_mut(&mut self, slot: u32) -> &mut E {
        match &mut self.entries[slot as usize] {
            Entry::Occupied { node, .. } => Some(node),
            Entry::Vacant { .. } => None,
        }
        .expect("invariant: engines only follow links to live slots")
    }
}

#[cfg(test)]
mod tests;
