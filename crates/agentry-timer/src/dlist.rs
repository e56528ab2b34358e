//! [`DList`]: an intrusive doubly-linked list threaded through slab nodes by slot index.
//!
//! The wheel's slots and the list engine are built from it. Nodes carry their own [`Links`];
//! a list is just its two ends, so it is `Copy` and costs nothing to keep 386 of them. Linking
//! and unlinking are O(1) and never allocate: the nodes already live in the [`Slab`].

use crate::slab::Slab;

/// The "no node" slot index.
pub(crate) const NIL: u32 = u32::MAX;

/// A node's neighbours in the one list it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Links {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Links {
    /// The links of a node that is in no list yet.
    pub(crate) const UNLINKED: Self = Self {
        prev: NIL,
        next: NIL,
    };

    /// The previous node, if any.
    pub(crate) fn prev_slot(&self) -> Option<u32> {
        (self.prev != NIL).then_some(self.prev)
    }

    /// The next node, if any.
    pub(crate) fn next_slot(&self) -> Option<u32> {
        (self.next != NIL).then_some(self.next)
    }
}

/// A slab node that can sit in a [`DList`].
pub(crate) trait Linked {
    fn links(&self) -> &Links;
    fn links_mut(&mut self) -> &mut Links;
}

/// The two ends of a list of slab nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DList {
    head: u32,
    tail: u32,
}

impl DList {
    pub(crate) const EMPTY: Self = Self {
        head: NIL,
        tail: NIL,
    };

    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The first node.
    pub(crate) fn head(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The last node.
    pub(crate) fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// Appends the unlinked node `slot`.
    pub(crate) fn push_back<N: Linked>(&mut self, slab: &mut Slab<N>, slot: u32) {
        let tail = self.tail;
        *slab.node_mut(slot).links_mut() = Links {
            prev: tail,
            next: NIL,
        };
        if tail == NIL {
            self.head = slot;
        } else {
            slab.node_mut(tail).links_mut().next = slot;
        }
        self.tail = slot;
    }

    /// Links the unlinked node `slot` right after `after` (`None`: at the front).
    pub(crate) fn insert_after<N: Linked>(
        &mut self,
        slab: &mut Slab<N>,
        after: Option<u32>,
        slot: u32,
    ) {
        let (prev, next) = match after {
            Some(after) => (after, slab.node(after).links().next),
            None => (NIL, self.head),
        };
        *slab.node_mut(slot).links_mut() = Links { prev, next };
        if prev == NIL {
            self.head = slot;
        } else {
            slab.node_mut(prev).links_mut().next = slot;
        }
        if next == NIL {
            self.tail = slot;
        } else {
            slab.node_mut(next).links_mut().prev = slot;
        }
    }

    /// Links the unlinked node `slot` right before `before` (`None`: at the back).
    pub(crate) fn insert_before<N: Linked>(
        &mut self,
        slab: &mut Slab<N>,
        before: Option<u32>,
        slot: u32,
    ) {
        let after = match before {
            Some(before) => {
                let prev = slab.node(before).links().prev;
                (prev != NIL).then_some(prev)
            }
            None => self.tail(),
        };
        self.insert_after(slab, after, slot);
    }

    /// Unlinks `slot`, which must be in this list.
    pub(crate) fn unlink<N: Linked>(&mut self, slab: &mut Slab<N>, slot: u32) {
        let Links { prev, next } =
            std::mem::replace(slab.node_mut(slot).links_mut(), Links::UNLINKED);
        if prev == NIL {
            self.head = next;
        } else {
            slab.node_mut(prev).links_mut().next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            slab.node_mut(next).links_mut().prev = prev;
        }
    }

    /// Unlinks and returns the first node.
    pub(crate) fn pop_front<N: Linked>(&mut self, slab: &mut Slab<N>) -> Option<u32> {
        let head = self.head()?;
        self.unlink(slab, head);
        Some(head)
    }
}

#[cfg(test)]
mod tests;
