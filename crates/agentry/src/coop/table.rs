//! The registry's coops by slot: a generational table indexed by [`CoopId::slot`], so that a
//! coop is found by an index and a comparison of sequence numbers — no hashing — and coops
//! registered one after the other sit next to each other (a tree of 10^6 coops started by
//! `Ctx::spawn` is walked in the order it was made).
//!
//! # Ground rules
//!
//! - Plain data behind the registry's lock (`coop/registry.rs`); no `unsafe`.
//! - A slot holds one coop at a time. An id reaches its coop only while the slot's occupant has
//!   the id's sequence number, which is unique in the process: an id of a gone coop, or of a
//!   coop of another environment, finds nothing.
//! - Slots live in chunks of [`CHUNK`] that are allocated as the table grows and never move or
//!   shrink (growing copies no entry, and a table of 10^6 coops wastes at most one chunk);
//!   vacant slots form a free list, the last freed reused first.

use crate::ids::CoopId;
use std::num::NonZeroU64;

/// Slots per chunk.
const CHUNK: usize = 1024;

/// No slot (the end of a free list or of a sibling list).
pub(super) const NO_SLOT: u32 = u32::MAX;

enum Slot<E> {
    Vacant { next_free: u32 },
    Occupied { seq: NonZeroU64, entry: E },
}

/// Coops of type `E` by slot.
pub(super) struct CoopTable<E> {
    chunks: Vec<Box<[Slot<E>]>>,
    /// The first vacant slot (`NO_SLOT`: none, the next insert takes a new slot).
    free: u32,
    /// Slots ever taken: the next new slot.
    taken: u32,
    len: usize,
}

impl<E> Default for CoopTable<E> {
    fn default() -> Self {
        CoopTable {
            chunks: Vec::new(),
            free: NO_SLOT,
            taken: 0,
            len: 0,
        }
    }
}

fn at(slot: u32) -> (usize, usize) {
    let slot = slot as usize;
    (slot / CHUNK, slot % CHUNK)
}

impl<E> CoopTable<E> {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn slot(&self, slot: u32) -> Option<&Slot<E>> {
        let (chunk, i) = at(slot);
        self.chunks.get(chunk).map(|c| &c[i])
    }

    fn slot_mut(&mut self, slot: u32) -> Option<&mut Slot<E>> {
        let (chunk, i) = at(slot);
        self.chunks.get_mut(chunk).map(|c| &mut c[i])
    }

    /// Records a new coop made by `make` from its id; returns the id.
    pub(super) fn insert(&mut self, make: impl FnOnce(CoopId) -> E) -> CoopId {
        let slot = if self.free != NO_SLOT {
            self.free
        } else {
            let slot = self.taken;
            assert!(
                slot != NO_SLOT,
                "invariant: fewer than 2^32 - 1 coops at once"
            );
            if at(slot).1 == 0 {
                self.chunks.push(
                    (0..CHUNK)
                        .map(|_| Slot::Vacant { next_free: NO_SLOT })
                        .collect(),
                );
            }
            self.taken += 1;
            slot
        };
        let id = CoopId::next_in(slot);
        let seq = id.seq();
        let place = self
            .slot_mut(slot)
            .expect("invariant: a free or new slot is in a chunk");
        let Slot::Vacant { next_free } = *place else {
            unreachable!("invariant: the free list holds vacant slots");
        };
        *place = Slot::Occupied {
            seq,
            entry: make(id),
        };
        if slot == self.free {
            self.free = next_free;
        }
        self.len += 1;
        id
    }

    pub(super) fn get(&self, id: CoopId) -> Option<&E> {
        match self.slot(id.slot())? {
            Slot::Occupied { seq, entry } if *seq == id.seq() => Some(entry),
            _ => None,
        }
    }

    pub(super) fn get_mut(&mut self, id: CoopId) -> Option<&mut E> {
        match self.slot_mut(id.slot())? {
            Slot::Occupied { seq, entry } if *seq == id.seq() => Some(entry),
            _ => None,
        }
    }

    /// The coop in `slot`, whoever it is (slots linked by the registry's sibling lists).
    pub(super) fn by_slot(&self, slot: u32) -> Option<(CoopId, &E)> {
        match self.slot(slot)? {
            Slot::Occupied { seq, entry } => Some((CoopId::in_slot(slot, *seq), entry)),
            Slot::Vacant { .. } => None,
        }
    }

    /// The coop in `slot`, mutably.
    pub(super) fn by_slot_mut(&mut self, slot: u32) -> Option<&mut E> {
        match self.slot_mut(slot)? {
            Slot::Occupied { entry, .. } => Some(entry),
            Slot::Vacant { .. } => None,
        }
    }

    /// Removes the coop `id`; its slot is the next one reused.
    pub(super) fn remove(&mut self, id: CoopId) -> Option<E> {
        self.get(id)?;
        let free = self.free;
        let place = self
            .slot_mut(id.slot())
            .expect("invariant: the coop was found in its slot");
        let Slot::Occupied { entry, .. } =
            std::mem::replace(place, Slot::Vacant { next_free: free })
        else {
            unreachable!("invariant: the coop was found in its slot");
        };
        self.free = id.slot();
        self.len -= 1;
        Some(entry)
    }

    /// Every coop, by slot.
    pub(super) fn iter(&self) -> impl Iterator<Item = (CoopId, &E)> {
        self.chunks
            .iter()
            .flat_map(|chunk| chunk.iter())
            .zip(0u32..)
            .filter_map(|(place, slot)| match place {
                Slot::Occupied { seq, entry } => Some((CoopId::in_slot(slot, *seq), entry)),
                Slot::Vacant { .. } => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::{CHUNK, CoopTable};

    #[test]
    fn an_id_finds_its_coop_only_while_it_is_there_and_a_freed_slot_is_reused_first() {
        let mut table = CoopTable::default();
        let a = table.insert(|_| "a");
        let b = table.insert(|_| "b");
        assert_eq!(
            (table.get(a), table.get(b), table.len()),
            (Some(&"a"), Some(&"b"), 2)
        );
        assert_eq!(table.remove(a), Some("a"));
        assert_eq!(table.get(a), None);
        assert_eq!((table.remove(a), table.len()), (None, 1));
        // The freed slot is reused: the new coop's id differs, the old id finds nothing.
        let c = table.insert(|_| "c");
        assert_eq!(c.slot(), a.slot());
        assert_ne!(c, a);
        assert_eq!((table.get(a), table.get(c)), (None, Some(&"c")));
        let listed: Vec<_> = table.iter().map(|(id, e)| (id, *e)).collect();
        assert_eq!(listed, vec![(c, "c"), (b, "b")]);
    }

    #[test]
    fn the_table_grows_by_chunks_and_every_coop_keeps_its_slot() {
        let mut table = CoopTable::default();
        let ids: Vec<_> = (0..CHUNK * 2 + 3).map(|i| table.insert(|_| i)).collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(table.get(*id), Some(&i));
            assert_eq!(table.by_slot(id.slot()).map(|(found, _)| found), Some(*id));
        }
        let mut last_freed = None;
        for id in ids.iter().step_by(2) {
            assert!(table.remove(*id).is_some());
            last_freed = Some(id.slot());
        }
        assert_eq!(table.len(), ids.len() / 2);
        assert_eq!(table.iter().count(), ids.len() / 2);
        // Slots freed last are reused first; no new chunk is made while any is free.
        let again = table.insert(|_| 0);
        assert_eq!(Some(again.slot()), last_freed);
    }

    #[test]
    fn an_id_of_another_table_finds_nothing() {
        let mut one = CoopTable::default();
        let mut other = CoopTable::default();
        let here = one.insert(|_| 1);
        let there = other.insert(|_| 2);
        assert_eq!(here.slot(), there.slot());
        assert_eq!((one.get(there), other.get(here)), (None, None));
    }
}
