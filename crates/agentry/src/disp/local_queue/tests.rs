use super::{BLOCK, LocalQueue};
use crate::demand::Demand;
use crate::ids::MboxId;
use crate::message::LimitSlot;
use crate::message::payload::Payload;
use crate::slab::AgentRef;
use std::sync::Arc;

fn demand(target: AgentRef, n: u64, marker: &Arc<()>) -> Demand {
    Demand::message(
        target,
        MboxId::next(),
        Payload::new((n, Arc::clone(marker))),
        LimitSlot::NONE,
        0,
    )
}

fn number(d: Demand) -> u64 {
    d.payload
        .expect("message")
        .take::<(u64, Arc<()>)>()
        .expect("type")
        .0
}

fn some_target() -> ((), AgentRef) {
    ((), AgentRef::dangling())
}

#[test]
fn fifo_across_many_blocks_and_back_to_empty() {
    let (_slab, target) = some_target();
    let marker = Arc::new(());
    let mut q = LocalQueue::new();
    assert!(q.is_empty() && q.pop().is_none());
    let n = (3 * BLOCK + 7) as u64;
    for i in 0..n {
        q.push(demand(target, i, &marker));
        assert_eq!(q.len() as u64, i + 1);
    }
    for i in 0..n {
        assert_eq!(number(q.pop().expect("queued")), i);
        assert_eq!(q.len() as u64, n - i - 1);
    }
    assert!(q.is_empty() && q.pop().is_none());
    assert_eq!(q.len(), 0);
    // Interleaved pushes and pops keep the order too.
    for round in 0..(2 * BLOCK as u64) {
        q.push(demand(target, round, &marker));
        q.push(demand(target, round + 1_000_000, &marker));
        assert_eq!(number(q.pop().expect("queued")), round);
        assert_eq!(number(q.pop().expect("queued")), round + 1_000_000);
    }
    assert_eq!(Arc::strong_count(&marker), 1);
}

#[test]
fn dropping_the_queue_drops_queued_demands() {
    let (_slab, target) = some_target();
    let marker = Arc::new(());
    let mut q = LocalQueue::new();
    for i in 0..(BLOCK as u64 + 3) {
        q.push(demand(target, i, &marker));
    }
    let _ = q.pop();
    drop(q);
    assert_eq!(Arc::strong_count(&marker), 1);
}

fn tail_len(q: &LocalQueue) -> usize {
    q.tail_len
}

#[test]
fn one_demand_at_a_time_reuses_the_first_slot_of_one_block() {
    let (_slab, target) = some_target();
    let marker = Arc::new(());
    let mut q = LocalQueue::new();
    for i in 0..(3 * BLOCK as u64) {
        q.push(demand(target, i, &marker));
        assert_eq!((q.head, tail_len(&q)), (0, 1));
        assert_eq!(number(q.pop().expect("queued")), i);
        assert_eq!(
            (q.head, tail_len(&q)),
            (0, 0),
            "an emptied tail starts over"
        );
    }
    assert!(
        q.full.is_empty() && q.spare.is_empty(),
        "one block, never a second"
    );
}

#[test]
fn a_backlog_recycles_its_blocks() {
    let (_slab, target) = some_target();
    let marker = Arc::new(());
    let mut q = LocalQueue::new();
    let n = 4 * BLOCK as u64 + 1;
    for i in 0..n {
        q.push(demand(target, i, &marker));
    }
    assert_eq!((q.full.len(), tail_len(&q)), (4, 1));
    for i in 0..n {
        assert_eq!(number(q.pop().expect("queued")), i);
    }
    assert!(q.is_empty() && q.full.is_empty());
    assert_eq!(q.spare.len(), 4, "the emptied full blocks are kept");
    for i in 0..n {
        q.push(demand(target, i, &marker));
    }
    assert_eq!(q.spare.len(), 0, "and used again");
    assert_eq!(q.len() as u64, n);
    drop(q);
    assert_eq!(Arc::strong_count(&marker), 1);
}
