//! Multi-producer single-consumer queue: the cross-thread half of every mailbox.
//!
//! Algorithm: a block-based (segmented) unbounded queue, following crossbeam-channel's `list`
//! flavor (`crossbeam-channel/src/flavors/list.rs`: tail index with one sentinel offset per
//! block, the producer claiming a block's last slot installs the next block) with the
//! per-block layout and "slot ready" publication of tokio's `sync::mpsc` list
//! (`tokio/src/sync/mpsc/{list,block}.rs`), simplified for a single consumer. It replaced
//! Dmitry Vyukov's node-based queue, which allocated one node per push and freed it on the
//! consumer's thread.
//!
//! # Layout
//!
//! Values live in blocks of `CAP` slots (a const parameter: [`BLOCK_CAP`] by default,
//! [`SMALL_BLOCK_CAP`] for queues that are many and mostly short); each slot has a `ready`
//! flag. The tail index counts `LAP = CAP + 1` positions per block: offsets `0..CAP` are
//! slots, offset `CAP` is a sentinel meaning "the next block is being installed".
//!
//! - A producer claims a slot with one `compare_exchange` on the tail index (it must check
//!   the sentinel, so it is a CAS, not a `fetch_add`), then writes the value and sets the
//!   slot's `ready` flag (`Release`).
//! - The producer that claims a block's last slot moves the index onto the sentinel, takes
//!   the spare block (or allocates one), publishes it as the tail block, moves the index to
//!   the new block's first slot, and links it from the old block — all before writing its
//!   own value, so the consumer finds the link whenever it has read the old block's last slot.
//! - The consumer reads slots in index order and, after the last slot of a block, moves to
//!   the next block and recycles the old one as the single spare block (freeing the previous
//!   spare if nobody took it). In steady state no push or pop allocates.
//! - A producer dereferences a block only after its CAS claimed a slot in it, and the
//!   consumer retires a block only after reading every slot of it, so no producer can touch a
//!   retired block.
//! - A queue may have its first block inside it (`FIRST = 1`, a pool agent's queue: one
//!   allocation with its first block). That block takes part like any other, named by a tag
//!   that is resolved against the queue when followed (so the queue may still move), and is
//!   never freed: retired, it becomes the spare as usual; when it is the spare already, the
//!   retired heap block is freed instead, so the queue's own block stays in use.
//!
//! # Ground rules
//!
//! - Any number of threads may [`push`](MpscQueue::push) at once: one CAS on the tail index
//!   (retried under contention) and one `Release` store of the slot's `ready` flag. Producers
//!   never wait for the consumer. **They may wait for each other in one case**: while the
//!   producer that claimed a block's last slot installs the next block (a swap of the spare
//!   block, or one allocation when there is no spare), other producers spin, then yield. So
//!   producers are no longer wait-free; the wait is bounded by one block installation (unless
//!   the installing thread is descheduled in that window).
//! - Exactly one thread at a time may call [`pop`](MpscQueue::pop) (hence `unsafe`): the
//!   consumer owns the head position and retires blocks.
//! - A push becomes visible to the consumer when its producer has written its slot and set
//!   the slot's `ready` flag; until then the consumer sees the queue end before that slot
//!   (even if later slots are ready): [`pop`](MpscQueue::pop) returns `None` and
//!   [`is_empty`](MpscQueue::is_empty) returns true. So a producer must finish its push
//!   before it wakes the consumer (`parker.rs`), and the consumer may sleep while a push is
//!   half done: it is woken once the flag is set. The consumer never spins on another
//!   thread's progress.
//! - Order: values are taken in claim order (the order of the successful CASes), so FIFO per
//!   producer and overall.

use super::UnsafeCell;
#[cfg(not(loom))]
use super::UnsafeCellExt;
use super::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use super::thread;
use crossbeam_utils::CachePadded;
use std::mem::MaybeUninit;
use std::ops::Deref;
use std::ptr;

/// Slots per block (31: a block's index range plus its sentinel is a power of two).
#[cfg(not(loom))]
pub(crate) const BLOCK_CAP: usize = 31;
/// Tiny blocks under loom, so that models cross block boundaries and recycle blocks.
#[cfg(loom)]
pub(crate) const BLOCK_CAP: usize = 2;

/// Slots per block of a queue that is one of very many and mostly short (a pool agent's: a
/// block of 31 demands is ~2 KB per agent, one of 7 ~450 B, one of 3 ~200 B; 3 + the
/// sentinel is a power of two too). Its first block is inside the queue, so each slot is
/// 64 bytes of every pool agent, idle or not; a longer queue chains more blocks.
#[cfg(not(loom))]
pub(crate) const SMALL_BLOCK_CAP: usize = 3;
#[cfg(loom)]
pub(crate) const SMALL_BLOCK_CAP: usize = 2;

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    /// Set (`Release`) by the producer after writing `value`; reset by the consumer when it
    /// recycles the block.
    ready: AtomicBool,
}

struct Block<T, const CAP: usize> {
    /// The following block; stored by the producer that claimed this block's last slot,
    /// before it writes that slot.
    next: AtomicPtr<Block<T, CAP>>,
    slots: [Slot<T>; CAP],
}

impl<T, const CAP: usize> Block<T, CAP> {
    fn new() -> Self {
        Block {
            next: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                ready: AtomicBool::new(false),
            }),
        }
    }

    fn alloc() -> *mut Block<T, CAP> {
        Box::into_raw(Box::new(Block::new()))
    }
}

/// How a queue lays out its producers' part (the tail) and, right after it, its consumer's
/// part (the head).
pub(crate) trait Spacing {
    /// A part, laid out.
    type Of<X>: Deref<Target = X>;
    fn space<X>(part: X) -> Self::Of<X>;
}

/// Each part on cache lines of its own, so producers and the consumer never write to one
/// line (256 B a queue): for a queue that is one of few and busy from several threads at once
/// (a dispatcher's).
pub(crate) enum Padded {}

impl Spacing for Padded {
    type Of<X> = CachePadded<X>;
    fn space<X>(part: X) -> CachePadded<X> {
        CachePadded::new(part)
    }
}

/// Each part followed by a 64-byte gap, unaligned (176 B a queue): no byte of the tail and no
/// byte of the head can be on one 64-byte line, nor the head on a line with what follows the
/// queue in memory (another queue's producers' part, say), so producers and the consumer
/// never write to one line, yet the queue asks for no alignment (an aligned allocation costs
/// glibc's `malloc` a split and leaves a hole behind). For a queue that is one of very many,
/// mostly short (a pool agent's), where every line a message touches is likely a cache miss,
/// yet many threads may send at once while its consumer pops (a fan-in). What comes before
/// the tail may share its line: fields its producers write.
pub(crate) enum Apart {}

/// A part of an [`Apart`] queue, with the gap that keeps what follows off its lines.
#[repr(C)]
pub(crate) struct Spaced<X> {
    part: X,
    _gap: [MaybeUninit<u8>; 64],
}

impl<X> Deref for Spaced<X> {
    type Target = X;
    fn deref(&self) -> &X {
        &self.part
    }
}

impl Spacing for Apart {
    type Of<X> = Spaced<X>;
    fn space<X>(part: X) -> Spaced<X> {
        Spaced {
            part,
            _gap: [MaybeUninit::uninit(); 64],
        }
    }
}

/// Unbounded lock-free MPSC queue (see the module docs for the rules) with blocks of `CAP`
/// slots, its parts laid out by `S` (in this order: `repr(C)`).
///
/// With `FIRST = 1` its first block is its own, after its parts: a queue that is one of very
/// many (a pool agent's) is one allocation with that block. The block is used, linked and
/// recycled like the others, but the queue's pointers name it [`OWN`](Self::OWN) (an
/// address no allocation has), resolved against the queue where it is when one is followed,
/// so the queue may move like any value; it is never freed on its own.
#[repr(C)]
pub(crate) struct MpscQueue<
    T,
    const CAP: usize = BLOCK_CAP,
    S: Spacing = Padded,
    const FIRST: usize = 0,
> {
    /// The producers' part.
    tail: S::Of<Tail<T, CAP>>,
    /// The consumer's part.
    head: S::Of<Head<T, CAP>>,
    /// The first block, if it is the queue's own (`FIRST = 1`).
    own_block: [Block<T, CAP>; FIRST],
}

struct Tail<T, const CAP: usize> {
    /// Next position to claim: `lap * LAP + offset`, offset `CAP` being the sentinel.
    index: AtomicU64,
    /// The block of the current lap (published before `index` enters the lap).
    block: AtomicPtr<Block<T, CAP>>,
}

struct Head<T, const CAP: usize> {
    /// The consumer's block and the offset of the next slot to read in it.
    pos: UnsafeCell<(*mut Block<T, CAP>, usize)>,
    /// Values taken so far (written by the consumer only; for [`len`](MpscQueue::len)).
    popped: AtomicU64,
    /// One retired block kept for the next installation (taken with a `swap` by producers).
    spare: AtomicPtr<Block<T, CAP>>,
}

// SAFETY: values cross threads (producer → consumer), so `T: Send` suffices; the raw pointers
// are owned by the queue and only dereferenced under the rules in the module docs.
unsafe impl<T: Send, const CAP: usize, S: Spacing, const FIRST: usize> Send
    for MpscQueue<T, CAP, S, FIRST>
{
}
// SAFETY: `push` is safe from any thread; `pop` is `unsafe` and requires a single consumer.
unsafe impl<T: Send, const CAP: usize, S: Spacing, const FIRST: usize> Sync
    for MpscQueue<T, CAP, S, FIRST>
{
}

/// Waiting for another producer to install the next block: spin briefly, then yield.
struct Backoff(u32);

impl Backoff {
    fn snooze(&mut self) {
        #[cfg(not(loom))]
        if self.0 < 6 {
            for _ in 0..1u32 << self.0 {
                std::hint::spin_loop();
            }
            self.0 += 1;
            return;
        }
        thread::yield_now();
    }
}

impl<T, const CAP: usize> Tail<T, CAP> {
    fn starting_at(first: *mut Block<T, CAP>) -> Self {
        Tail {
            index: AtomicU64::new(0),
            block: AtomicPtr::new(first),
        }
    }
}

impl<T, const CAP: usize> Head<T, CAP> {
    fn starting_at(first: *mut Block<T, CAP>) -> Self {
        Head {
            pos: UnsafeCell::new((first, 0)),
            popped: AtomicU64::new(0),
            spare: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

impl<T, const CAP: usize, S: Spacing, const FIRST: usize> MpscQueue<T, CAP, S, FIRST> {
    /// Index positions per block: its slots plus the sentinel.
    const LAP: u64 = CAP as u64 + 1;

    /// What the queue's pointers hold for its own block (`FIRST = 1`): the dangling address of
    /// a block, which no allocation has.
    const OWN: *mut Block<T, CAP> = ptr::NonNull::dangling().as_ptr();

    /// An empty queue: its first block is allocated, or (`FIRST = 1`) its own.
    pub(crate) fn new() -> Self {
        const { assert!(FIRST <= 1, "a queue has at most one block of its own") };
        let first = if FIRST == 1 {
            Self::OWN
        } else {
            Block::alloc()
        };
        MpscQueue {
            tail: S::space(Tail::starting_at(first)),
            head: S::space(Head::starting_at(first)),
            own_block: std::array::from_fn(|_| Block::new()),
        }
    }

    /// The block `block` names, where it is now: the queue's own block for
    /// [`OWN`](Self::OWN), else `block` itself.
    #[inline(always)]
    fn resolve(&self, block: *mut Block<T, CAP>) -> *mut Block<T, CAP> {
        if FIRST == 1 && block == Self::OWN {
            // Blocks are shared through atomics and `UnsafeCell`s only: a pointer made from
            // `&self` may write to them.
            self.own_block.as_ptr().cast_mut()
        } else {
            block
        }
    }

    /// Appends `value`. Lock-free; waits only while another producer installs the next
    /// block (see the ground rules).
    pub(crate) fn push(&self, value: T) {
        let mut backoff = Backoff(0);
        // `Acquire` on every read of `index`: the value read is in the release sequence of
        // the store that opened its lap, which was preceded by the store of that lap's block.
        let mut index = self.tail.index.load(Ordering::Acquire);
        let mut block = self.tail.block.load(Ordering::Acquire);
        loop {
            let offset = usize::try_from(index % Self::LAP).expect("offset < LAP");
            if offset == CAP {
                // Another producer is installing the next block.
                backoff.snooze();
                index = self.tail.index.load(Ordering::Acquire);
                block = self.tail.block.load(Ordering::Acquire);
                continue;
            }
            match self.tail.index.compare_exchange_weak(
                index,
                index + 1,
                Ordering::Relaxed,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if offset + 1 == CAP {
                        // We claimed the last slot and moved `index` onto the sentinel: we
                        // install the next block; other producers wait until we open its lap.
                        let next = self.take_block();
                        self.tail.block.store(next, Ordering::Release);
                        self.tail.index.store(index + 2, Ordering::Release);
                        // SAFETY: `block` is the block of our claimed slot (the CAS succeeded
                        // on the index value read before loading `block`, see above); the
                        // consumer cannot retire it before reading our slot, not yet written.
                        unsafe { (*self.resolve(block)).next.store(next, Ordering::Release) };
                    }
                    // SAFETY: as above, `block` stays alive until our slot is read; the slot
                    // is ours alone (claimed by the CAS) and empty (fresh or reset on
                    // recycling, which happened before the block was published again).
                    let slot = unsafe { &(*self.resolve(block)).slots[offset] };
                    // SAFETY: the consumer reads the value only after seeing `ready`.
                    slot.value
                        .with_mut(|p| unsafe { p.write(MaybeUninit::new(value)) });
                    // Publishes the value (and, for the last slot, `next`). From here on the
                    // consumer may retire the block: no more accesses to it.
                    slot.ready.store(true, Ordering::Release);
                    return;
                }
                Err(actual) => {
                    index = actual;
                    block = self.tail.block.load(Ordering::Acquire);
                }
            }
        }
    }

    /// The spare block if the consumer left one, else a new allocation.
    fn take_block(&self) -> *mut Block<T, CAP> {
        // `Acquire` pairs with the consumer's `Release` swap: its resets of the block are
        // visible to us and to everyone we publish the block to.
        let spare = self.head.spare.swap(ptr::null_mut(), Ordering::Acquire);
        if spare.is_null() {
            Block::alloc()
        } else {
            spare
        }
    }

    /// Takes the oldest value whose push is complete.
    ///
    /// # Safety
    ///
    /// At most one thread may be inside `pop` or [`is_empty`](Self::is_empty)
    /// at any time (the single consumer).
    #[inline]
    pub(crate) unsafe fn pop(&self) -> Option<T> {
        self.head.pos.with_mut(|pos| {
            // SAFETY: single consumer (caller contract): nobody else touches `pos`.
            let (block, offset) = unsafe { *pos };
            // SAFETY: the consumer's block is alive until the consumer retires it.
            let slot = unsafe { &(*self.resolve(block)).slots[offset] };
            if !slot.ready.load(Ordering::Acquire) {
                return None;
            }
            // SAFETY: `ready` (Acquire, pairing with the producer's Release) says the value is
            // written; we move it out exactly once (the position advances below).
            let value = slot.value.with(|p| unsafe { p.read().assume_init() });
            if offset + 1 == CAP {
                // SAFETY: single consumer; the block's last slot was just read.
                unsafe { *pos = self.leave_block(block) };
            } else {
                // SAFETY: single consumer.
                unsafe { (*pos).1 = offset + 1 };
            }
            self.head.popped.store(
                self.head.popped.load(Ordering::Relaxed) + 1,
                Ordering::Relaxed,
            );
            Some(value)
        })
    }

    /// The consumer read the last slot of `block`: retires it and returns the position of the
    /// next block's first slot. Out of line: once in `CAP` pops.
    ///
    /// # Safety
    ///
    /// Only the consumer, which just read the last slot of `block`, its current block.
    #[cold]
    #[inline(never)]
    unsafe fn leave_block(&self, block: *mut Block<T, CAP>) -> (*mut Block<T, CAP>, usize) {
        // SAFETY: the block is alive (retired only below).
        let next = unsafe { (*self.resolve(block)).next.load(Ordering::Acquire) };
        assert!(
            !next.is_null(),
            "invariant: a block's last slot is written after its `next` link"
        );
        // SAFETY: every slot of `block` has been written and read: no producer accesses it any
        // more, and the consumer moves past it (the caller stores the position returned).
        unsafe { self.retire(block) };
        (next, 0)
    }

    /// Resets `block` and keeps it as the spare (freeing a spare nobody took). The queue's
    /// own first block, when it is the spare, stays the spare: `block` is freed instead.
    ///
    /// # Safety
    ///
    /// Only the consumer, with `block` unreachable for producers and consumer alike.
    unsafe fn retire(&self, block: *mut Block<T, CAP>) {
        // Only the consumer makes a block the spare; producers only take it: a spare found to
        // be the queue's own here is not replaced by anything but null meanwhile.
        if FIRST == 1 && block != Self::OWN && self.head.spare.load(Ordering::Relaxed) == Self::OWN
        {
            // SAFETY: the caller gives us `block` (a heap block: not the queue's own),
            // unreachable.
            unsafe { Self::free(block) };
            return;
        }
        // SAFETY: the caller gives us exclusive ownership of `block`.
        let b = unsafe { &*self.resolve(block) };
        b.next.store(ptr::null_mut(), Ordering::Relaxed);
        for slot in &b.slots {
            slot.ready.store(false, Ordering::Relaxed);
        }
        // `Release` publishes the resets to the producer that takes the block.
        let old = self.head.spare.swap(block, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: the swap took the previous spare out of the queue: nobody else holds it.
            unsafe { Self::free(old) };
        }
    }

    /// Frees `block` unless it is the queue's own.
    ///
    /// # Safety
    ///
    /// `block` is [`OWN`](Self::OWN) or was allocated by [`Block::alloc`], and nothing uses it
    /// any more.
    unsafe fn free(block: *mut Block<T, CAP>) {
        if FIRST == 0 || block != Self::OWN {
            // SAFETY: forwarded contract: a block of our own allocation, unused.
            drop(unsafe { Box::from_raw(block) });
        }
    }

    /// Number of values queued (approximate while producers push).
    pub(crate) fn len(&self) -> usize {
        let popped = self.head.popped.load(Ordering::Relaxed);
        let index = self.tail.index.load(Ordering::Relaxed);
        let pushed = index / Self::LAP * CAP as u64 + (index % Self::LAP).min(CAP as u64);
        usize::try_from(pushed.saturating_sub(popped)).unwrap_or(usize::MAX)
    }

    /// True when no complete push is waiting at the head (a half-done push counts as empty:
    /// its producer wakes the consumer when it completes).
    ///
    /// # Safety
    ///
    /// Same single-consumer contract as [`pop`](Self::pop).
    pub(crate) unsafe fn is_empty(&self) -> bool {
        // SAFETY: single consumer (caller contract).
        let (block, offset) = self.head.pos.with(|p| unsafe { *p });
        // SAFETY: the consumer's block is alive until the consumer retires it.
        !unsafe { &(*self.resolve(block)).slots[offset] }
            .ready
            .load(Ordering::Acquire)
    }
}

impl<T, const CAP: usize, S: Spacing, const FIRST: usize> Drop for MpscQueue<T, CAP, S, FIRST> {
    fn drop(&mut self) {
        // `&mut self`: no producer or consumer is active any more, so every claimed slot is
        // written.
        // SAFETY: exclusive access makes us the single consumer.
        while let Some(value) = unsafe { self.pop() } {
            drop(value);
        }
        // SAFETY: exclusive access; the blocks from the head on are owned by the queue (and
        // hold no values any more).
        let mut block = self.head.pos.with(|p| unsafe { (*p).0 });
        while !block.is_null() {
            // SAFETY: as above; each block is freed once, after reading its link.
            let next = unsafe { (*self.resolve(block)).next.load(Ordering::Relaxed) };
            // SAFETY: as above (the queue's own block is left to its field).
            unsafe { Self::free(block) };
            block = next;
        }
        let spare = self.head.spare.swap(ptr::null_mut(), Ordering::Relaxed);
        if !spare.is_null() {
            // SAFETY: exclusive access; the spare is owned by the queue.
            unsafe { Self::free(spare) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
