//! A worker thread's queue of demands sent by the worker itself: a FIFO of fixed-capacity
//! blocks.
//!
//! Why not one `VecDeque`: a backlog of a million demands would grow it by doubling into a
//! single buffer of tens of megabytes, which the allocator maps fresh (and the kernel zeroes
//! page by page) every time, and copies on every growth. Blocks of `BLOCK` demands never move
//! once allocated, stay below the allocator's mmap threshold (so freed memory can be reused
//! rather than returned to the kernel), and emptied blocks are recycled through a small free
//! list. The last block stays in place even when empty, so a queue that holds one demand at
//! a time (ping-pong) never juggles blocks.

use crate::demand::Demand;
use std::collections::VecDeque;

/// Demands per block (56-byte demands: 14 KiB blocks).
const BLOCK: usize = 256;
/// Emptied blocks kept for reuse.
const SPARE_BLOCKS: usize = 64;

/// FIFO of demands (single thread, no synchronisation).
pub(crate) struct LocalQueue {
    /// Oldest block first; only the last block may have room, only the first may be empty.
    blocks: VecDeque<VecDeque<Demand>>,
    spare: Vec<VecDeque<Demand>>,
}

impl LocalQueue {
    pub(crate) const fn new() -> Self {
        LocalQueue {
            blocks: VecDeque::new(),
            spare: Vec::new(),
        }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, demand: Demand) {
        match self.blocks.back_mut() {
            Some(tail) if tail.len() < BLOCK => tail.push_back(demand),
            _ => self.push_to_new_block(demand),
        }
    }

    #[cold]
    fn push_to_new_block(&mut self, demand: Demand) {
        let mut block = self
            .spare
            .pop()
            .unwrap_or_else(|| VecDeque::with_capacity(BLOCK));
        block.push_back(demand);
        self.blocks.push_back(block);
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Demand> {
        let several = self.blocks.len() > 1;
        let head = self.blocks.front_mut()?;
        let demand = head.pop_front();
        if several && head.is_empty() {
            self.recycle_front();
        }
        demand
    }

    #[cold]
    fn recycle_front(&mut self) {
        let block = self
            .blocks
            .pop_front()
            .expect("invariant: the head block exists");
        if self.spare.len() < SPARE_BLOCKS {
            self.spare.push(block);
        }
    }

    /// Number of demands queued, in constant time: every block between the first and the
    /// last is full.
    pub(crate) fn len(&self) -> usize {
        match (self.blocks.front(), self.blocks.back()) {
            (Some(first), Some(last)) if self.blocks.len() > 1 => {
                first.len() + last.len() + (self.blocks.len() - 2) * BLOCK
            }
            (Some(only), _) => only.len(),
            _ => 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.front().is_none_or(VecDeque::is_empty)
    }
}

#[cfg(test)]
mod tests;
