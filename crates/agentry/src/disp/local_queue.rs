//! A worker thread's queue of demands sent by the worker itself: a FIFO of fixed-capacity
//! blocks.
//!
//! Why not one `VecDeque`: a backlog of a million demands would grow it by doubling into a
//! single buffer of tens of megabytes, which the allocator maps fresh (and the kernel zeroes
//! page by page) every time, and copies on every growth. Blocks of `BLOCK` demands never move
//! once allocated, stay below the allocator's mmap threshold (so freed memory can be reused
//! rather than returned to the kernel), and emptied blocks are recycled through a small free
//! list.
//!
//! # Ground rules
//!
//! - A block is a boxed array of `BLOCK` slots, filled by pushes from its front and emptied
//!   from its front by taking the demands out of their slots (`Option::take`), so a push and
//!   a pop are each a plain write at an index the array's length bounds, with no wrap-around
//!   and no capacity check (a `VecDeque` per block made each of them compute a wrapped index
//!   and check its capacity; a `Vec` per block made the push `Vec::push`, which the compiler
//!   kept out of line: 18 % of a same-thread ping-pong's serving thread).
//! - Pushes go to the *tail* block, at `tail_len`; pops take from the oldest block — the first
//!   full block if there is one, else the tail block — at `head`. Every block between is full,
//!   so the length is constant work. A slot outside the queued range is `None`.
//! - When the tail block empties (its last demand taken), `head` and `tail_len` go back to 0:
//!   a queue that holds one demand at a time (ping-pong) uses the same slot over and over and
//!   never touches the list of full blocks.
//! - The tail block is made by the first push (a queue that is never used costs no block);
//!   it stays when the queue empties. A new block's slots are set to `None` once (14 KiB,
//!   when a backlog outgrows the blocks it has); emptied blocks are all `None` again, so a
//!   recycled block is used as it is.
//! - `push` and `pop` are forced inline into the serving loops: with `pop` out of line the
//!   call cost what the layout saved (instruction counts in `bench-results/2026-11-25.md`).

use crate::demand::Demand;
use std::collections::VecDeque;

/// Demands per block (56-byte demands: 14 KiB blocks).
const BLOCK: usize = 256;
/// Emptied blocks kept for reuse.
const SPARE_BLOCKS: usize = 64;

/// `BLOCK` slots; those outside the queued range are `None`.
type Block = Box<[Option<Demand>; BLOCK]>;

/// A block of empty slots.
fn new_block() -> Block {
    let slots: Box<[Option<Demand>]> = (0..BLOCK).map(|_| None).collect();
    match slots.try_into() {
        Ok(block) => block,
        Err(_) => unreachable!("invariant: BLOCK slots were made"),
    }
}

/// FIFO of demands (single thread, no synchronisation).
pub(crate) struct LocalQueue {
    /// Full blocks, oldest first: their demands go before the tail block's.
    full: VecDeque<Block>,
    /// The block pushes go to (`None` until the first push).
    tail: Option<Block>,
    /// Slots of the tail block pushed to since it was last empty.
    tail_len: usize,
    /// Where the next pop takes from, in the oldest block.
    head: usize,
    spare: Vec<Block>,
}

impl LocalQueue {
    pub(crate) const fn new() -> Self {
        LocalQueue {
            full: VecDeque::new(),
            tail: None,
            tail_len: 0,
            head: 0,
            spare: Vec::new(),
        }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, demand: Demand) {
        match &mut self.tail {
            Some(block) if self.tail_len < BLOCK => {
                block[self.tail_len] = Some(demand);
                self.tail_len += 1;
            }
            _ => self.push_to_new_block(demand),
        }
    }

    /// The tail block is full (or there is none yet): it joins the full ones and a new (or
    /// spare) block becomes the tail.
    #[cold]
    #[inline(never)]
    fn push_to_new_block(&mut self, demand: Demand) {
        let block = self.spare.pop().unwrap_or_else(new_block);
        if let Some(full) = self.tail.replace(block) {
            self.full.push_back(full);
        }
        self.tail_len = 0;
        self.push(demand);
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<Demand> {
        if !self.full.is_empty() {
            return self.pop_full();
        }
        let block = self.tail.as_mut()?;
        if self.head == self.tail_len {
            return None;
        }
        let demand = block[self.head].take();
        self.head += 1;
        if self.head == self.tail_len {
            self.head = 0;
            self.tail_len = 0;
        }
        demand
    }

    /// The next demand of the oldest full block (a backlog of more than a block).
    #[inline(always)]
    fn pop_full(&mut self) -> Option<Demand> {
        let oldest = self.full.front_mut()?;
        let demand = oldest[self.head].take();
        self.head += 1;
        if self.head == BLOCK {
            self.head = 0;
            self.recycle_oldest();
        }
        demand
    }

    /// The oldest full block is empty (all `None`): kept for reuse, or freed.
    #[cold]
    #[inline(never)]
    fn recycle_oldest(&mut self) {
        let block = self
            .full
            .pop_front()
            .expect("invariant: the oldest full block exists");
        if self.spare.len() < SPARE_BLOCKS {
            self.spare.push(block);
        }
    }

    /// Number of demands queued, in constant time: every block before the tail is full.
    pub(crate) fn len(&self) -> usize {
        self.full.len() * BLOCK + self.tail_len - self.head
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.full.is_empty() && self.tail_len == self.head
    }
}

#[cfg(test)]
mod tests;
