use super::EventLanes;
use crate::demand::Demand;
use crate::ids::MboxId;
use crate::message::LimitSlot;
use crate::message::payload::Payload;
use crate::slab::AgentRef;

fn demand(priority: u8, n: u64) -> Demand {
    Demand::message(
        AgentRef::dangling(),
        MboxId::next(),
        Payload::new(n),
        LimitSlot::NONE,
        priority,
    )
}

fn drain(lanes: &mut EventLanes) -> Vec<(u8, u64)> {
    std::iter::from_fn(|| lanes.pop())
        .map(|d| {
            let p = d.priority();
            (p, d.payload.expect("message").take::<u64>().expect("type"))
        })
        .collect()
}

#[test]
fn highest_priority_first_and_fifo_within_a_priority() {
    let mut lanes = EventLanes::new();
    let sent = [
        (0, 1),
        (3, 2),
        (0, 3),
        (7, 4),
        (3, 5),
        (1, 6),
        (7, 7),
        (0, 8),
    ];
    for (p, n) in sent {
        lanes.push(demand(p, n));
    }
    assert_eq!(lanes.len(), sent.len());
    let order = drain(&mut lanes);
    assert_eq!(
        order,
        [
            (7, 4),
            (7, 7),
            (3, 2),
            (3, 5),
            (1, 6),
            (0, 1),
            (0, 3),
            (0, 8)
        ]
    );
    assert!(lanes.is_empty());
    assert_eq!(lanes.len(), 0);
}

#[test]
fn a_raised_demand_overtakes_what_waits_below_it_at_any_time() {
    let mut lanes = EventLanes::new();
    for n in 0..1000 {
        lanes.push(demand(0, n));
    }
    assert_eq!(lanes.pop().map(|d| d.priority()), Some(0));
    lanes.push(demand(5, 5000));
    let order = drain(&mut lanes);
    assert_eq!(order[0], (5, 5000));
    assert_eq!(order.len(), 1000);
    assert_eq!(order[1], (0, 1));
    assert!(order[1..].windows(2).all(|w| w[0].1 + 1 == w[1].1));
}

#[test]
fn only_normal_demands_allocate_no_raised_lanes() {
    let mut lanes = EventLanes::new();
    lanes.push(demand(0, 1));
    assert!(lanes.raised.is_none());
    assert_eq!(drain(&mut lanes), [(0, 1)]);
    lanes.push(demand(2, 2));
    assert!(lanes.raised.is_some());
    assert!(!lanes.is_empty());
    assert_eq!(drain(&mut lanes), [(2, 2)]);
    assert!(lanes.is_empty());
}
