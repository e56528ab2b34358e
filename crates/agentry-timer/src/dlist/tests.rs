use super::*;

#[derive(Debug)]
struct Node {
    links: Links,
}

impl Linked for Node {
    fn links(&self) -> &Links {
        &self.links
    }

    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

fn slab_of(n: u32) -> Slab<Node> {
    let mut slab = Slab::with_capacity(n as usize);
    for _ in 0..n {
        slab.insert(Node {
            links: Links::UNLINKED,
        });
    }
    slab
}

/// The slots from head to tail, checking the back links on the way.
fn collect(list: &DList, slab: &Slab<Node>) -> Vec<u32> {
    let mut slots = Vec::new();
    let mut prev = None;
    let mut cursor = list.head();
    while let Some(slot) = cursor {
        assert_eq!(slab.node(slot).links.prev_slot(), prev);
        slots.push(slot);
        prev = Some(slot);
        cursor = slab.node(slot).links.next_slot();
    }
    assert_eq!(list.tail(), prev);
    slots
}

#[test]
fn push_back_keeps_order() {
    let mut slab = slab_of(3);
    let mut list = DList::EMPTY;
    assert!(list.is_empty());
    for slot in [2, 0, 1] {
        list.push_back(&mut slab, slot);
    }
    assert_eq!(collect(&list, &slab), [2, 0, 1]);
}

#[test]
fn insert_after_and_before_link_at_every_position() {
    let mut slab = slab_of(6);
    let mut list = DList::EMPTY;
    list.insert_after(&mut slab, None, 0); // [0]
    list.insert_before(&mut slab, None, 1); // [0 1]
    list.insert_after(&mut slab, None, 2); // [2 0 1]
    list.insert_after(&mut slab, Some(0), 3); // [2 0 3 1]
    list.insert_before(&mut slab, Some(2), 4); // [4 2 0 3 1]
    list.insert_after(&mut slab, Some(1), 5); // [4 2 0 3 1 5]
    assert_eq!(collect(&list, &slab), [4, 2, 0, 3, 1, 5]);
}

#[test]
fn unlink_head_middle_and_tail() {
    let mut slab = slab_of(5);
    let mut list = DList::EMPTY;
    for slot in 0..5 {
        list.push_back(&mut slab, slot);
    }
    list.unlink(&mut slab, 2);
    assert_eq!(slab.node(2).links, Links::UNLINKED);
    list.unlink(&mut slab, 0);
    list.unlink(&mut slab, 4);
    assert_eq!(collect(&list, &slab), [1, 3]);
    list.unlink(&mut slab, 1);
    list.unlink(&mut slab, 3);
    assert!(list.is_empty());
    assert_eq!(list, DList::EMPTY);
}

#[test]
fn pop_front_empties_in_order() {
    let mut slab = slab_of(3);
    let mut list = DList::EMPTY;
    for slot in [1, 2, 0] {
        list.push_back(&mut slab, slot);
    }
    let popped: Vec<_> = std::iter::from_fn(|| list.pop_front(&mut slab)).collect();
    assert_eq!(popped, [1, 2, 0]);
    assert!(list.is_empty());
}
