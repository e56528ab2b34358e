//! Who the slab's slots hold: each slot's occupant (the agent's shared part, for lookups by id)
//! and the tombstones of its finished occupants (`slab.rs`, ground rules).
//!
//! The slab sits below the mboxes, whose `AgentShared` (`mbox/direct.rs`) is what it holds, so
//! it knows an occupant only as an [`Occupant`]: the few things it and the dispatchers ask of
//! one. The table is generic over the occupant's type, so a slot's entry holds a thin `Arc`
//! (32 bytes an entry, asserted below), and the slab keeps it as one `Box<dyn Occupancy>`: one
//! vtable for the whole slab, not a fat pointer per slot. The paths that reach the table
//! through it — an agent's finish, a demand discarded for an agent that is gone, a tombstone's
//! burial — make one dynamic call each; the env's typed paths (insert, lookup by id, reports)
//! downcast it to [`Occupants<O>`] once per call. None of them is a message's path.
//!
//! # Ground rules
//!
//! - A slot's entry is read and written under its lock. A reader takes the lock, then reads the
//!   slot's generation; [`Occupancy::vacate`] moves the generation on before it lets the lock
//!   go. So a reader never sees an occupant with a generation that is not its own.
//! - An occupant's `Arc` is dropped outside the lock: its drop buries its tombstone
//!   ([`Occupancy::bury`]), which takes the lock.

use super::segments::{Segments, segment_len};
use super::{AgentSlot, admits, current, first, in_lineage, pack};
use crate::ids::CoopId;
use crate::stats::AgentCounters;
use parking_lot::Mutex;
use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// What the slab and the dispatchers ask of an agent's shared part (implemented by
/// `AgentShared`, `mbox/direct.rs`).
pub(crate) trait Occupant: Send + Sync + 'static {
    /// Its counters: the slab publishes its final handled count into them as it
    /// leaves its slot.
    fn stats(&self) -> &AgentCounters;
    /// The name of its type (for the trace of a message it did not get).
    fn agent_type(&self) -> &'static str;
    /// A message for it was dropped because its dispatcher shut down.
    fn count_dropped_on_shutdown(&self);
    /// A message for it was dropped because it no longer runs.
    fn count_not_running(&self);
    /// It has left `coop`: its worker dropped its body (the body's `Exit`, `slab/body.rs`).
    fn left(&self, coop: CoopId);
}

/// The slab's table of occupants, its occupant type erased: what the slab's untyped paths do
/// to it.
pub(super) trait Occupancy: Any + Send + Sync {
    /// Makes the entries of `segment` (before the segment is published).
    fn grow(&self, segment: usize);
    /// The occupant of `slot` leaves it: its final handled count is published, it becomes a
    /// tombstone, and the slot's state moves from `state` to the next (even, free) generation.
    fn vacate(&self, slot: &AgentSlot, state: u64);
    /// The occupant of `slot` (any incarnation of it), if `generation` is one of its.
    fn live(&self, slot: &AgentSlot, generation: u32) -> Option<Arc<dyn Occupant>>;
    /// The finished occupant of slot `index` whose lineage has `generation`, if its shared
    /// part is still held.
    fn finished(&self, index: u32, generation: u32) -> Option<Arc<dyn Occupant>>;
    /// Removes the tombstone of the finished occupant of slot `index` whose last incarnation
    /// is `last`.
    fn bury(&self, index: u32, last: u32);
}

/// The occupants of a slab whose agents' shared parts are `O`s.
pub(crate) struct Occupants<O> {
    /// Each slot's entry, by segment and offset (the slots' layout, `slab/segments.rs`).
    entries: Segments<Mutex<SlotAgents<O>>>,
}

/// Who a slot holds, kept apart from the slot: only registration, finish, lookups by id and
/// the gone path touch it, so the slots that dispatchers touch on every demand stay small and
/// dense.
struct SlotAgents<O> {
    /// The occupant, or while there is none the last finished one whose shared part is still
    /// held: most slots hold one or the other, so the two share 16 bytes.
    head: Head<O>,
    /// The other finished occupants whose shared part is still held (a slot reused while
    /// earlier occupants' mboxes are held: rare). A boxed `Vec` on purpose: 8 bytes in every
    /// slot's entry for what most never fill.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Tombstone<O>>>>,
}

/// See [`SlotAgents::head`].
enum Head<O> {
    /// The occupant (for lookups by id from any thread); `None` while there is none and no
    /// tombstone either.
    Live(Option<Arc<O>>),
    /// The slot's finished occupant (ground rules of `slab.rs`), while it has no occupant.
    Finished(Tombstone<O>),
}

/// A finished occupant of a slot: its lineage and its shared part.
struct Tombstone<O> {
    first: u32,
    last: u32,
    agent: Weak<O>,
}

// Every slot has a `Mutex<SlotAgents>`: the lock, the occupant or one tombstone, and the
// pointer to the rest.
const _: () = assert!(std::mem::size_of::<Mutex<SlotAgents<()>>>() == 32);

// Not derived: a derive would ask `O: Default`.
impl<O> Default for SlotAgents<O> {
    fn default() -> Self {
        SlotAgents {
            head: Head::Live(None),
            more: None,
        }
    }
}

impl<O> Tombstone<O> {
    /// True if a demand or id made for `generation` was made for this agent.
    fn covers(&self, generation: u32) -> bool {
        in_lineage(self.last, self.first, generation)
    }
}

impl<O> SlotAgents<O> {
    /// The occupant, if there is one.
    fn live(&self) -> Option<&Arc<O>> {
        match &self.head {
            Head::Live(live) => live.as_ref(),
            Head::Finished(_) => None,
        }
    }

    /// `agent` occupies the slot (which has no occupant).
    fn occupy(&mut self, agent: Arc<O>) {
        match std::mem::replace(&mut self.head, Head::Live(Some(agent))) {
            Head::Live(before) => debug_assert!(before.is_none(), "a slot has one occupant"),
            Head::Finished(t) => self.more.get_or_insert_default().push(t),
        }
    }

    /// The occupant leaves; it is kept as a tombstone made by `tombstone` (its shared part
    /// given back, to be dropped outside the lock).
    fn vacate(&mut self, tombstone: impl FnOnce(&Arc<O>) -> Tombstone<O>) -> Option<Arc<O>> {
        let Head::Live(live) = &mut self.head else {
            // No occupant (its finish raced another): the tombstone stays.
            return None;
        };
        let agent = live.take()?;
        self.head = Head::Finished(tombstone(&agent));
        Some(agent)
    }

    fn tombstones(&self) -> impl Iterator<Item = &Tombstone<O>> {
        let head = match &self.head {
            Head::Finished(t) => Some(t),
            Head::Live(_) => None,
        };
        head.into_iter()
            .chain(self.more.iter().flat_map(|more| more.iter()))
    }

    fn find(&self, generation: u32) -> Option<&Tombstone<O>> {
        self.tombstones().find(|t| t.covers(generation))
    }

    /// Removes the tombstone of the agent whose last generation is `last`.
    fn bury(&mut self, last: u32) {
        if matches!(&self.head, Head::Finished(t) if t.last == last) {
            self.head = match self.more.as_mut().and_then(|more| more.pop()) {
                Some(t) => Head::Finished(t),
                None => Head::Live(None),
            };
        } else if let Some(more) = &mut self.more {
            more.retain(|t| t.last != last);
        }
        if self.more.as_ref().is_some_and(|more| more.is_empty()) {
            self.more = None;
        }
    }
}

impl<O: Occupant> Occupants<O> {
    pub(super) fn new() -> Self {
        Occupants {
            entries: Segments::new(),
        }
    }

    /// The entry of slot `index` (of a published segment).
    fn entry(&self, index: u32) -> &Mutex<SlotAgents<O>> {
        self.entries
            .get(index)
            .expect("invariant: a segment's occupants are made before its slots are published")
    }

    /// `agent` occupies slot `index` (registration, before the slot's generation is published).
    pub(super) fn occupy(&self, index: u32, agent: &Arc<O>) {
        self.entry(index).lock().occupy(Arc::clone(agent));
    }

    /// The occupant of `slot` if its current incarnation is `generation` (an id names one
    /// incarnation).
    pub(super) fn lookup(&self, slot: &AgentSlot, generation: u32) -> Option<Arc<O>> {
        let agents = self.entry(slot.index).lock();
        if current(slot.state.load(Ordering::Acquire)) != generation {
            return None;
        }
        agents.live().cloned()
    }

    /// Adds the occupant of slot `index` (with `true`) and its finished occupants whose shared
    /// part is still held (with `false`) to `out`.
    pub(super) fn report(&self, index: u32, out: &mut Vec<(Arc<O>, bool)>) {
        let agents = self.entry(index).lock();
        if let Some(live) = agents.live() {
            out.push((Arc::clone(live), true));
        }
        out.extend(
            agents
                .tombstones()
                .filter_map(|t| t.agent.upgrade())
                .map(|a| (a, false)),
        );
    }
}

impl<O: Occupant> Occupancy for Occupants<O> {
    fn grow(&self, segment: usize) {
        let entries = (0..segment_len(segment))
            .map(|_| Mutex::new(SlotAgents::default()))
            .collect();
        self.entries.publish(segment, entries);
    }

    fn vacate(&self, slot: &AgentSlot, state: u64) {
        let mut agents = self.entry(slot.index).lock();
        let live = agents.vacate(|agent| {
            // Published before the generation moves on (readers check it after reading).
            agent
                .stats()
                .publish_final(slot.handled.load(Ordering::Relaxed));
            Tombstone {
                first: first(state),
                last: current(state),
                agent: Arc::downgrade(agent),
            }
        });
        // From the current incarnation (a finish demand may have been made for an earlier one).
        slot.state.store(
            pack(current(state).wrapping_add(1), first(state)),
            Ordering::Release,
        );
        drop(agents);
        // Outside the lock (ground rules).
        drop(live);
    }

    fn live(&self, slot: &AgentSlot, generation: u32) -> Option<Arc<dyn Occupant>> {
        let agents = self.entry(slot.index).lock();
        if !admits(slot.state.load(Ordering::Acquire), generation) {
            return None;
        }
        agents.live().map(|a| Arc::clone(a) as Arc<dyn Occupant>)
    }

    fn finished(&self, index: u32, generation: u32) -> Option<Arc<dyn Occupant>> {
        let agents = self.entry(index).lock();
        let agent = agents.find(generation)?.agent.upgrade()?;
        Some(agent)
    }

    fn bury(&self, index: u32, last: u32) {
        self.entry(index).lock().bury(last);
    }
}

#[cfg(test)]
mod tests;
