//! Multi-producer single-consumer queue: the cross-thread half of every mailbox.
//!
//! Algorithm: Dmitry Vyukov's non-intrusive MPSC node-based queue
//! (<https://www.1024cores.net/home/lock-free-algorithms/queues/non-intrusive-mpsc-node-based-queue>),
//! the same one old `std::sync::mpsc` used.
//!
//! # Ground rules
//!
//! - Any number of threads may [`push`](MpscQueue::push) at once: one `swap` on `head` and one
//!   store into the previous node. Producers never wait for each other or for the consumer.
//! - Exactly one thread at a time may call [`pop`](MpscQueue::pop) (hence `unsafe`): the
//!   consumer owns `tail` and frees nodes.
//! - A push becomes visible to the consumer when its producer stores the link from the previous
//!   node; until then (after its `swap`) the consumer sees the queue end before it. So a
//!   producer must finish its push before it wakes the consumer (`parker.rs`), and the
//!   consumer may sleep while a push is half done: it is woken once the link is stored. The
//!   consumer never spins on another thread's progress.

use super::UnsafeCell;
#[cfg(not(loom))]
use super::UnsafeCellExt;
use super::atomic::{AtomicPtr, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::ptr;

struct Node<T> {
    next: AtomicPtr<Node<T>>,
    value: Option<T>,
}

impl<T> Node<T> {
    fn alloc(value: Option<T>) -> *mut Node<T> {
        Box::into_raw(Box::new(Node {
            next: AtomicPtr::new(ptr::null_mut()),
            value,
        }))
    }
}

/// Unbounded lock-free MPSC queue (see the module docs for the rules).
pub(crate) struct MpscQueue<T> {
    /// The most recently pushed node; producers swap themselves in here.
    head: CachePadded<Head<T>>,
    /// The consumer's stub: the last node taken (its value already moved out).
    tail: CachePadded<UnsafeCell<*mut Node<T>>>,
    /// Values taken so far (written by the consumer only; for [`len`](MpscQueue::len)).
    popped: AtomicU64,
}

/// The producers' cache line: the head pointer and the count of pushes (counting costs one
/// more atomic add on a line the push owns anyway).
struct Head<T> {
    node: AtomicPtr<Node<T>>,
    pushed: AtomicU64,
}

// SAFETY: values cross threads (producer → consumer), so `T: Send` suffices; the raw pointers
// are owned by the queue and only dereferenced under the rules in the module docs.
unsafe impl<T: Send> Send for MpscQueue<T> {}
// SAFETY: `push` is safe from any thread; `pop` is `unsafe` and requires a single consumer.
unsafe impl<T: Send> Sync for MpscQueue<T> {}

impl<T> MpscQueue<T> {
    /// An empty queue (one stub node is allocated).
    pub(crate) fn new() -> Self {
        let stub = Node::alloc(None);
        MpscQueue {
            head: CachePadded::new(Head {
                node: AtomicPtr::new(stub),
                pushed: AtomicU64::new(0),
            }),
            tail: CachePadded::new(UnsafeCell::new(stub)),
            popped: AtomicU64::new(0),
        }
    }

    /// Appends `value`; wait-free for producers.
    pub(crate) fn push(&self, value: T) {
        let node = Node::alloc(Some(value));
        let prev = self.head.node.swap(node, Ordering::AcqRel);
        self.head.pushed.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `prev` was the head, so the consumer cannot have freed it: the consumer frees a
        // node only after moving `tail` past it, which requires its `next` to be non-null, and
        // only this producer (the one that swapped it out of `head`) stores that `next`.
        unsafe { (*prev).next.store(node, Ordering::Release) };
    }

    /// Takes the oldest value whose push is complete.
    ///
    /// # Safety
    ///
    /// At most one thread may be inside `pop` or [`is_empty`](Self::is_empty)
    /// at any time (the single consumer).
    pub(crate) unsafe fn pop(&self) -> Option<T> {
        self.tail.with_mut(|tail_slot| {
            // SAFETY: single consumer (caller contract): nobody else touches `tail`.
            let tail = unsafe { *tail_slot };
            // SAFETY: `tail` is the consumer's stub, alive until the consumer frees it below.
            let next = unsafe { (*tail).next.load(Ordering::Acquire) };
            if !next.is_null() {
                // SAFETY: single consumer; `next` is fully published (Acquire above pairs with
                // the producer's Release store of the link).
                unsafe { *tail_slot = next };
                // SAFETY: `next` becomes the new stub; we own its value now.
                let value = unsafe { (*next).value.take() }
                    .expect("invariant: every non-stub node carries a value");
                // SAFETY: the old stub is unreachable for producers (its `next` is set) and for
                // the consumer (tail moved past it), so it can be freed.
                drop(unsafe { Box::from_raw(tail) });
                self.popped
                    .store(self.popped.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                return Some(value);
            }
            None
        })
    }

    /// Number of values queued (approximate while producers push).
    pub(crate) fn len(&self) -> usize {
        let popped = self.popped.load(Ordering::Relaxed);
        let pushed = self.head.pushed.load(Ordering::Relaxed);
        usize::try_from(pushed.saturating_sub(popped)).unwrap_or(usize::MAX)
    }

    /// True when no complete push is waiting (a half-done push counts as empty: its producer
    /// wakes the consumer when it completes).
    ///
    /// # Safety
    ///
    /// Same single-consumer contract as [`pop`](Self::pop).
    pub(crate) unsafe fn is_empty(&self) -> bool {
        // SAFETY: single consumer (caller contract); the stub lives until the consumer frees it.
        let tail = self.tail.with(|t| unsafe { *t });
        // SAFETY: as above.
        unsafe { (*tail).next.load(Ordering::Acquire).is_null() }
    }
}

impl<T> Drop for MpscQueue<T> {
    fn drop(&mut self) {
        // `&mut self`: no producer or consumer is active any more.
        // SAFETY: exclusive access makes us the single consumer (and no push is half done).
        while let Some(value) = unsafe { self.pop() } {
            drop(value);
        }
        // SAFETY: exclusive access; the remaining stub is owned by the queue.
        self.tail.with_mut(|t| drop(unsafe { Box::from_raw(*t) }));
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
