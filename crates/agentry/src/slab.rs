//! The agent slab: where registered agents live, addressed by slot.
//!
//! # Ground rules
//!
//! - Segments are allocated on demand and never move or shrink while the slab lives, so the
//!   slot pointer in a demand ([`AgentRef`]) stays valid as long as the slab does. Every
//!   worker that runs demands holds an `Arc` of the slab.
//! - A slot's generation only grows: odd while an agent occupies the slot, even while it is
//!   free. A demand or id carries the generation it was made for, so it can never reach a
//!   later agent in the same slot.
//! - The registering thread writes a slot's body, *then* publishes the new generation
//!   (`Release`). After that, the body is touched only by the thread that runs the agent's
//!   dispatcher, and only after it read a matching generation (`Acquire`) from the demand it
//!   is running: [`AgentSlab::body_mut`] and [`AgentSlab::remove`] are `unsafe` for that.
//! - `remove` takes the body out, clears the id lookup entry, then publishes the next (even)
//!   generation, and only then returns the slot to the free list.

use crate::agent::cell::AgentBody;
use crate::agent::shared::AgentShared;
use crate::ids::AgentId;
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::fmt;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// Slots in the first segment; segment `k` holds `FIRST_SEGMENT << k` slots.
const FIRST_SEGMENT: usize = 256;
/// Enough segments for more than 2^32 slots.
const SEGMENTS: usize = 25;

struct AgentSlot {
    generation: AtomicU32,
    body: UnsafeCell<Option<Box<dyn AgentBody>>>,
    /// For lookups by [`AgentId`] from any thread.
    shared: Mutex<Option<Arc<AgentShared>>>,
}

impl AgentSlot {
    fn vacant() -> Self {
        AgentSlot {
            generation: AtomicU32::new(0),
            body: UnsafeCell::new(None),
            shared: Mutex::new(None),
        }
    }
}

/// A reference from a demand to one agent: slot pointer + generation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct AgentRef {
    slot: NonNull<AgentSlot>,
    index: u32,
    generation: u32,
}

// SAFETY: an `AgentRef` is an address plus two integers; dereferencing the slot follows the
// slab's ground rules (slots are `Sync`: atomics, a mutex, and a body cell whose access is
// confined to one thread by protocol).
unsafe impl Send for AgentRef {}
// SAFETY: as above.
unsafe impl Sync for AgentRef {}

impl AgentRef {
    pub(crate) fn id(self) -> AgentId {
        AgentId::new(self.index, self.generation)
    }
}

impl fmt::Debug for AgentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentRef({}.{})", self.index, self.generation)
    }
}

struct Allocation {
    free: Vec<u32>,
    next_unused: u32,
}

/// Storage of every agent of one environment.
pub(crate) struct AgentSlab {
    segments: [AtomicPtr<AgentSlot>; SEGMENTS],
    allocation: Mutex<Allocation>,
}

// SAFETY: slots are shared between the registering thread and one dispatcher thread under the
// generation protocol described in the module docs.
unsafe impl Sync for AgentSlab {}
// SAFETY: the slab owns its segments.
unsafe impl Send for AgentSlab {}

fn locate(index: u32) -> (usize, usize) {
    let i = index as usize / FIRST_SEGMENT + 1;
    let segment = (usize::BITS - 1 - i.leading_zeros()) as usize;
    let offset = index as usize - FIRST_SEGMENT * ((1 << segment) - 1);
    (segment, offset)
}

fn segment_len(segment: usize) -> usize {
    FIRST_SEGMENT << segment
}

impl AgentSlab {
    pub(crate) fn new() -> Self {
        AgentSlab {
            segments: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            allocation: Mutex::new(Allocation {
                free: Vec::new(),
                next_unused: 0,
            }),
        }
    }

    fn slot(&self, index: u32) -> Option<&AgentSlot> {
        let (segment, offset) = locate(index);
        let base = self.segments.get(segment)?.load(Ordering::Acquire);
        if base.is_null() {
            return None;
        }
        // SAFETY: a published segment has `segment_len(segment)` initialised slots and lives as
        // long as the slab; `offset` is within it by construction of `locate`.
        Some(unsafe { &*base.add(offset) })
    }

    /// Allocates a slot for a new agent; `make` builds the body knowing the agent's id.
    pub(crate) fn insert(
        &self,
        shared: &Arc<AgentShared>,
        make: impl FnOnce(AgentRef) -> Box<dyn AgentBody>,
    ) -> AgentRef {
        let index = {
            let mut a = self.allocation.lock();
            match a.free.pop() {
                Some(index) => index,
                None => {
                    let index = a.next_unused;
                    a.next_unused = index
                        .checked_add(1)
                        .expect("invariant: fewer than 2^32 agents");
                    let (segment, offset) = locate(index);
                    if offset == 0 {
                        let slots: Box<[AgentSlot]> = (0..segment_len(segment))
                            .map(|_| AgentSlot::vacant())
                            .collect();
                        let base = Box::into_raw(slots).cast::<AgentSlot>();
                        self.segments[segment].store(base, Ordering::Release);
                    }
                    index
                }
            }
        };
        let slot = self
            .slot(index)
            .expect("invariant: the segment was published above");
        let generation = slot.generation.load(Ordering::Relaxed).wrapping_add(1) | 1;
        let aref = AgentRef {
            slot: NonNull::from(slot),
            index,
            generation,
        };
        let body = make(aref);
        // SAFETY: the slot is free (even generation): no demand matches it, so no other thread
        // touches the body until the generation below is published.
        unsafe { *slot.body.get() = Some(body) };
        *slot.shared.lock() = Some(Arc::clone(shared));
        slot.generation.store(generation, Ordering::Release);
        aref
    }

    /// The body of the agent `r` refers to, if that agent still occupies the slot.
    ///
    /// # Safety
    ///
    /// Only the thread running the dispatcher the agent is bound to may call this, for a demand
    /// taken from that dispatcher's queue, and must not hold two such references at once.
    #[inline]
    pub(crate) unsafe fn body_mut(&self, r: AgentRef) -> Option<&mut (dyn AgentBody + 'static)> {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let slot = unsafe { r.slot.as_ref() };
        if slot.generation.load(Ordering::Acquire) != r.generation {
            return None;
        }
        // SAFETY: matching generation + caller contract: this thread alone touches the body.
        unsafe { (*slot.body.get()).as_deref_mut() }
    }

    /// Takes the body out of the slot and frees the slot.
    ///
    /// # Safety
    ///
    /// As [`body_mut`](Self::body_mut); the agent must have finished.
    pub(crate) unsafe fn remove(&self, r: AgentRef) -> Option<Box<dyn AgentBody>> {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let slot = unsafe { r.slot.as_ref() };
        if slot.generation.load(Ordering::Acquire) != r.generation {
            return None;
        }
        // SAFETY: caller contract (see `body_mut`).
        let body = unsafe { (*slot.body.get()).take() };
        slot.shared.lock().take();
        slot.generation
            .store(r.generation.wrapping_add(1), Ordering::Release);
        self.allocation.lock().free.push(r.index);
        body
    }

    /// The shared part of the live agent `id`, if it still exists.
    pub(crate) fn lookup(&self, id: AgentId) -> Option<Arc<AgentShared>> {
        let slot = self.slot(id.slot())?;
        let shared = slot.shared.lock();
        if slot.generation.load(Ordering::Acquire) != id.generation() {
            return None;
        }
        shared.clone()
    }

    /// Number of agents currently in the slab.
    pub(crate) fn live(&self) -> usize {
        let a = self.allocation.lock();
        a.next_unused as usize - a.free.len()
    }
}

impl Drop for AgentSlab {
    fn drop(&mut self) {
        for (segment, base) in self.segments.iter_mut().enumerate() {
            let base = *base.get_mut();
            if !base.is_null() {
                let slots = ptr::slice_from_raw_parts_mut(base, segment_len(segment));
                // SAFETY: `base` came from `Box::into_raw` of a boxed slice of this length, and
                // `&mut self` means no demand runs any more.
                drop(unsafe { Box::from_raw(slots) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::locate;

    #[test]
    fn segments_tile_the_index_space() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(255), (0, 255));
        assert_eq!(locate(256), (1, 0));
        assert_eq!(locate(767), (1, 511));
        assert_eq!(locate(768), (2, 0));
        assert_eq!(locate(u32::MAX).0, 24);
    }
}
