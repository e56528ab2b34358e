//! The agent slab: where registered agents live, addressed by slot.
//!
//! # Ground rules
//!
//! - Segments are allocated on demand (`slab/segments.rs`: doubling from 256 slots to 65,536,
//!   then all of 65,536) and never move or shrink while the slab lives, so the slot pointer in
//!   a demand ([`AgentRef`]) stays valid as long as the slab does. Every worker that runs
//!   demands holds an `Arc` of the slab.
//! - A slot's generation only grows: odd while an agent occupies the slot, even while it is
//!   free. A demand or id carries the generation it was made for, so it can never reach a
//!   later agent in the same slot.
//! - The registering thread writes a slot's body, *then* publishes the new generation
//!   (`Release`). After that, the body is touched only by the thread that runs the agent's
//!   dispatcher, and only after it read a matching generation (`Acquire`) from the demand it
//!   is running: [`AgentSlab::body_mut`] and [`AgentSlab::remove`] are `unsafe` for that.
//! - `remove` takes the body out, clears the id lookup entry, then publishes the next (even)
//!   generation, and only then returns the slot to the free list.
//! - Restart in place (supervision): a supervised agent's next incarnation stays in its slot
//!   and moves the generation on by two ([`AgentSlab::next_incarnation`], by the agent's own
//!   worker), so it has a new [`AgentId`]. The generations of one occupant form its
//!   *lineage*: the slot's state word packs the current generation with the one the lineage
//!   began with, in one atomic. A demand made for an earlier incarnation of the *same*
//!   occupant is admitted (the occupant's mbox keeps its messages across restarts); a demand
//!   of an earlier occupant never is, since a new occupant's lineage begins after every
//!   generation the slot had before. The exact-match test stays the hot path; the lineage
//!   test runs only on a mismatch.
//! - Tombstones: when an agent finishes, its slot keeps a weak reference to the agent's shared
//!   part (its counters) with the generations of its lineage, until that shared part is
//!   dropped — the last holder of its mbox let go ([`AgentSlab::bury`]). A sender that read
//!   "accepting" just before the agent stopped may still queue a message behind its finish
//!   demand; the dispatcher then finds no body for it, and the tombstone tells whose message
//!   it was, so the agent's own counters count it too ([`AgentSlab::finished_agent`]). The
//!   slot itself is free at once and may be reused meanwhile: tombstones sit beside the
//!   occupant. A message whose tombstone is gone belongs to an agent nobody can observe.

// The seam and the occupants hold no `unsafe`: the slab's allowance stops here.
#[deny(unsafe_code)]
pub(crate) mod body;
#[deny(unsafe_code)]
pub(crate) mod occupants;
pub(crate) mod segments;

use crate::ids::AgentId;
use body::{AgentBody, Body, Taken};
use occupants::{Occupancy, Occupant, Occupants};
use parking_lot::Mutex;
use segments::{Segments, locate, segment_len};
use std::any::Any;
use std::cell::UnsafeCell;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct AgentSlot {
    index: u32,
    /// Current generation (low half) and the first generation of the occupant's lineage (high
    /// half), see [`admits`].
    state: AtomicU64,
    body: UnsafeCell<Option<Body>>,
    /// Messages handled by the current agent (written by its worker only). Those it had no
    /// handler for are counted by the agent in its own counters (`stats/agent_counters.rs`).
    handled: AtomicU64,
}

// Every agent has one: the index, the state, the body and its handled count.
const _: () = assert!(std::mem::size_of::<AgentSlot>() == 40);

impl AgentSlot {
    fn vacant(index: u32) -> Self {
        AgentSlot {
            index,
            state: AtomicU64::new(0),
            body: UnsafeCell::new(None),
            handled: AtomicU64::new(0),
        }
    }
}

/// The address of a slot (stored flat inside demands).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SlotPtr(NonNull<AgentSlot>);

// SAFETY: an address; the slot behind it is dereferenced only under the slab's ground rules
// (slots are shared: atomics, a mutex, and a body cell whose access is confined to one thread
// by protocol). So are `AgentRef`s, bindings and demands, which hold one.
unsafe impl Send for SlotPtr {}
// SAFETY: as above.
unsafe impl Sync for SlotPtr {}

impl SlotPtr {
    /// The slot.
    ///
    /// # Safety
    ///
    /// The slab the slot belongs to must be alive (slot addresses never change while it lives).
    #[inline(always)]
    unsafe fn as_ref<'a>(self) -> &'a AgentSlot {
        // SAFETY: forwarded contract.
        unsafe { self.0.as_ref() }
    }
}

/// Asks the processor to bring the cache line at `at` closer (a hint: it never faults and
/// never changes memory, whatever the address).
#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

impl AgentRef {
    /// Asks for the agent's slot to be brought into cache: called as a demand for it is
    /// queued, so that the slot is there when the demand runs.
    #[inline(always)]
    pub(crate) fn prefetch_slot(self) {
        prefetch(self.slot.0.as_ptr().cast());
    }
}

fn pack(current: u32, first: u32) -> u64 {
    (u64::from(first) << 32) | u64::from(current)
}

fn current(state: u64) -> u32 {
    state as u32
}

/// True if a demand or id made for `generation` belongs to the slot's current occupant: its
/// current incarnation, or an earlier incarnation of the same lineage (ground rules).
#[inline(always)]
fn admits(state: u64, generation: u32) -> bool {
    current(state) == generation || admits_earlier(state, generation)
}

#[cold]
fn admits_earlier(state: u64, generation: u32) -> bool {
    let now = current(state);
    // Occupied (odd), and `generation` belongs to the occupant's lineage.
    now & 1 == 1 && in_lineage(now, first(state), generation)
}

/// The first generation of the lineage of the slot's current (or last) occupant.
fn first(state: u64) -> u32 {
    (state >> 32) as u32
}

/// True if `generation` is one of a lineage's, from `first` to `last` (wrapping distances:
/// generations of a slot only grow).
fn in_lineage(last: u32, first: u32, generation: u32) -> bool {
    generation & 1 == 1 && last.wrapping_sub(generation) <= last.wrapping_sub(first)
}

/// A reference from a demand to one agent: slot pointer + generation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct AgentRef {
    slot: SlotPtr,
    generation: u32,
}

impl AgentRef {
    pub(crate) fn id(self) -> AgentId {
        // SAFETY: slot pointers stay valid while the slab lives, and every `AgentRef` comes
        // from a live slab (ground rules); `index` never changes.
        let index = unsafe { self.slot.as_ref() }.index;
        AgentId::new(index, self.generation)
    }

    pub(crate) fn into_parts(self) -> (SlotPtr, u32) {
        (self.slot, self.generation)
    }

    pub(crate) fn from_parts(slot: SlotPtr, generation: u32) -> Self {
        AgentRef { slot, generation }
    }

    /// A reference that must never be dereferenced (queue unit tests, where no demand runs).
    #[cfg(test)]
    pub(crate) fn dangling() -> Self {
        AgentRef {
            slot: SlotPtr(NonNull::dangling()),
            generation: 1,
        }
    }
}

impl fmt::Debug for AgentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentRef({:p}.{})", self.slot.0, self.generation)
    }
}

/// What a body may do to its slot while it runs a supervisor's control demand
/// (`body::control`): move on to a new incarnation, and count the messages it handles.
pub(crate) struct IncarnationCx<'a> {
    slab: &'a AgentSlab,
    target: AgentRef,
    handled: u64,
}

impl<'a> IncarnationCx<'a> {
    /// # Safety
    ///
    /// As [`AgentSlab::body_mut`]: created by the agent's worker for the demand it is running,
    /// and used only while it runs it.
    pub(crate) unsafe fn new(slab: &'a AgentSlab, target: AgentRef) -> Self {
        IncarnationCx {
            slab,
            target,
            handled: 0,
        }
    }

    /// See [`AgentSlab::next_incarnation`].
    pub(crate) fn next_incarnation(&mut self) -> AgentRef {
        // SAFETY: the contract of `new`.
        let next = unsafe { self.slab.next_incarnation(self.target) };
        self.target = next;
        next
    }

    /// Counts a message the body took, if it handled it (see [`AgentSlab::count`]).
    pub(crate) fn count(&mut self, taken: Taken) {
        if taken == Taken::Handled {
            self.handled += 1;
        }
    }

    /// Adds the handled messages to the agent's slot.
    pub(crate) fn publish(self) {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules); the contract of
        // `new` makes this thread the counter's single writer.
        let handled = &unsafe { self.target.slot.as_ref() }.handled;
        handled.store(
            handled.load(Ordering::Relaxed) + self.handled,
            Ordering::Relaxed,
        );
    }
}

struct Allocation {
    free: Vec<u32>,
    next_unused: u32,
}

/// Storage of every agent of one environment.
pub(crate) struct AgentSlab {
    /// The slots, by segment (`slab/segments.rs`).
    slots: Segments<AgentSlot>,
    /// Who each slot holds (`slab/occupants.rs`): an `Occupants<O>` for the one type of
    /// occupant the slab was made for.
    occupants: Box<dyn Occupancy>,
    allocation: Mutex<Allocation>,
}

// SAFETY: slots are shared between the registering thread and one dispatcher thread under the
// generation protocol described in the module docs.
unsafe impl Sync for AgentSlab {}
// SAFETY: the slab owns its segments.
unsafe impl Send for AgentSlab {}

impl AgentSlab {
    /// An empty slab whose agents' shared parts are `O`s.
    pub(crate) fn new<O: Occupant>() -> Self {
        AgentSlab {
            slots: Segments::new(),
            occupants: Box::new(Occupants::<O>::new()),
            allocation: Mutex::new(Allocation {
                free: Vec::new(),
                next_unused: 0,
            }),
        }
    }

    fn slot(&self, index: u32) -> Option<&AgentSlot> {
        self.slots.get(index)
    }

    /// The occupants, as the `O`s the slab was made for.
    fn occupants_as<O: Occupant>(&self) -> &Occupants<O> {
        let any: &dyn Any = &*self.occupants;
        any.downcast_ref()
            .expect("invariant: a slab holds occupants of the one type it was made for")
    }

    /// Allocates a slot for a new agent whose shared part is `shared` and body `body`.
    pub(crate) fn insert<O: Occupant>(&self, shared: &Arc<O>, body: Body) -> AgentRef {
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
                        self.occupants.grow(segment);
                        let slots = (0..segment_len(segment))
                            .map(|i| AgentSlot::vacant(index + i as u32))
                            .collect();
                        self.slots.publish(segment, slots);
                    }
                    index
                }
            }
        };
        let slot = self
            .slot(index)
            .expect("invariant: the segment was published above");
        let generation = current(slot.state.load(Ordering::Relaxed)).wrapping_add(1) | 1;
        let aref = AgentRef {
            slot: SlotPtr(NonNull::from(slot)),
            generation,
        };
        // SAFETY: the slot is free (even generation): no demand matches it, so no other thread
        // touches the body until the generation below is published.
        unsafe { *slot.body.get() = Some(body) };
        slot.handled.store(0, Ordering::Relaxed);
        self.occupants_as::<O>().occupy(index, shared);
        slot.state
            .store(pack(generation, generation), Ordering::Release);
        aref
    }

    /// The body of the agent `r` refers to, if that agent still occupies the slot.
    ///
    /// # Safety
    ///
    /// Only the thread running the dispatcher the agent is bound to may call this, for a demand
    /// taken from that dispatcher's queue, and must not hold two such references at once.
    #[inline]
    // `&self` → `&mut`: the body sits in an `UnsafeCell`, and the contract below grants one
    // thread exclusive access to it.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn body_mut(&self, r: AgentRef) -> Option<&mut (dyn AgentBody + 'static)> {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let slot = unsafe { r.slot.as_ref() };
        if !admits(slot.state.load(Ordering::Acquire), r.generation) {
            return None;
        }
        // SAFETY: admitted generation + caller contract: this thread alone touches the body.
        unsafe { (*slot.body.get()).as_deref_mut() }
    }

    /// Takes the body of the agent `r` refers to out of its slot, leaving the slot occupied
    /// (a supervisor's control demand replaces it with [`put_body`](Self::put_body)).
    ///
    /// # Safety
    ///
    /// As [`body_mut`](Self::body_mut); no reference from `body_mut` may be alive.
    pub(crate) unsafe fn take_body(&self, r: AgentRef) -> Option<Body> {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let slot = unsafe { r.slot.as_ref() };
        if !admits(slot.state.load(Ordering::Acquire), r.generation) {
            return None;
        }
        // SAFETY: caller contract (see `body_mut`).
        unsafe { (*slot.body.get()).take() }
    }

    /// Puts a body back into the slot [`take_body`](Self::take_body) emptied.
    ///
    /// # Safety
    ///
    /// As [`take_body`](Self::take_body), on the same thread, for the same agent.
    pub(crate) unsafe fn put_body(&self, r: AgentRef, body: Body) {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let slot = unsafe { r.slot.as_ref() };
        debug_assert!(admits(slot.state.load(Ordering::Relaxed), r.generation));
        // SAFETY: caller contract: this thread alone touches the body, which is empty.
        unsafe { *slot.body.get() = Some(body) };
    }

    /// Moves the agent `r` refers to on to its next incarnation: the generation grows by two
    /// (a new [`AgentId`]), the lineage stays, so demands made for earlier incarnations are
    /// still admitted. Returns the new incarnation's reference.
    ///
    /// # Safety
    ///
    /// As [`body_mut`](Self::body_mut): only the agent's worker, while it runs one of the
    /// agent's demands.
    pub(crate) unsafe fn next_incarnation(&self, r: AgentRef) -> AgentRef {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let slot = unsafe { r.slot.as_ref() };
        // Only this thread changes an occupied slot's state (caller contract).
        let state = slot.state.load(Ordering::Relaxed);
        debug_assert!(admits(state, r.generation));
        let next = current(state).wrapping_add(2);
        slot.state
            .store(pack(next, (state >> 32) as u32), Ordering::Release);
        AgentRef {
            slot: r.slot,
            generation: next,
        }
    }

    /// Takes the body out of the slot, leaves the agent's tombstone (ground rules) and frees
    /// the slot.
    ///
    /// # Safety
    ///
    /// As [`body_mut`](Self::body_mut); the agent must have finished.
    pub(crate) unsafe fn remove(&self, r: AgentRef) -> Option<Body> {
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let slot = unsafe { r.slot.as_ref() };
        let state = slot.state.load(Ordering::Acquire);
        if !admits(state, r.generation) {
            return None;
        }
        // SAFETY: caller contract (see `body_mut`).
        let body = unsafe { (*slot.body.get()).take() };
        self.occupants.vacate(slot, state);
        self.allocation.lock().free.push(slot.index);
        body
    }

    /// The live agent `r` refers to (any incarnation of it), if it still occupies its slot.
    pub(crate) fn live_agent(&self, r: AgentRef) -> Option<Arc<dyn Occupant>> {
        // SAFETY: `r` was made by this slab, whose slots live as long as it does.
        let slot = unsafe { r.slot.as_ref() };
        self.occupants.live(slot, r.generation)
    }

    /// The finished agent a demand made for `r` belongs to, if someone still holds its mbox
    /// (the demand is then counted as the agent's too; ground rules).
    pub(crate) fn finished_agent(&self, r: AgentRef) -> Option<Arc<dyn Occupant>> {
        // SAFETY: `r` was made by this slab, whose slots live as long as it does.
        let slot = unsafe { r.slot.as_ref() };
        self.occupants.finished(slot.index, r.generation)
    }

    /// Removes the tombstone of the finished agent whose last incarnation is `r`: its shared
    /// part is being dropped (ground rules).
    pub(crate) fn bury(&self, r: AgentRef) {
        // SAFETY: `r` was made by this slab, whose slots live as long as it does.
        let slot = unsafe { r.slot.as_ref() };
        self.occupants.bury(slot.index, r.generation);
    }

    /// Counts one message the agent `r` handled (a deferred message is counted when its next
    /// incarnation takes it; one it had no handler for, by the agent in its own counters, as
    /// the slot keeps no count of what many agents never see).
    ///
    /// # Safety
    ///
    /// As [`body_mut`](Self::body_mut): only the agent's worker counts.
    #[inline]
    pub(crate) unsafe fn count(&self, r: AgentRef, taken: Taken) {
        if taken != Taken::Handled {
            return;
        }
        // SAFETY: slot pointers stay valid while the slab lives (ground rules).
        let handled = &unsafe { r.slot.as_ref() }.handled;
        // Single writer: a plain load and store, no locked instruction.
        handled.store(handled.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The messages the agent `r` has handled, if it still occupies its slot.
    pub(crate) fn live_handled(&self, r: AgentRef) -> Option<u64> {
        // SAFETY: `r` was made by this slab, whose slots live as long as it does.
        let slot = unsafe { r.slot.as_ref() };
        let handled = slot.handled.load(Ordering::Relaxed);
        // Any incarnation of the occupant: its counters span its restarts.
        admits(slot.state.load(Ordering::Acquire), r.generation).then_some(handled)
    }

    /// The shared part of the live agent `id`, if it still exists.
    pub(crate) fn lookup<O: Occupant>(&self, id: AgentId) -> Option<Arc<O>> {
        let slot = self.slot(id.slot())?;
        self.occupants_as::<O>().lookup(slot, id.generation())
    }

    /// Every agent whose counters can still be read, with `true` for the live ones: the
    /// occupants, and the finished agents whose shared part someone still holds (tombstones).
    /// Read-only, for reports (`EnvHandle::agent_type_stats`): it takes each slot's lock in
    /// turn, never two at once, and returns the shared parts so that none of them is dropped
    /// (and folded into its class's retired totals, `mbox/class.rs`) while the caller reads them.
    pub(crate) fn agents_for_report<O: Occupant>(&self) -> Vec<(Arc<O>, bool)> {
        let allocated = self.allocation.lock().next_unused;
        let occupants = self.occupants_as::<O>();
        let mut out = Vec::new();
        for index in 0..allocated {
            if self.slot(index).is_some() {
                occupants.report(index, &mut out);
            }
        }
        out
    }

    /// Number of agents currently in the slab.
    pub(crate) fn live(&self) -> usize {
        let a = self.allocation.lock();
        a.next_unused as usize - a.free.len()
    }
}

#[cfg(test)]
mod tests;
