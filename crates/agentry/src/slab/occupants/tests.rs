//! The tombstones of a slot (the slab's tests, `slab/tests.rs`, drive the table through the
//! slab).

use super::{Head, SlotAgents, Tombstone};
use std::sync::{Arc, Weak};

#[test]
fn a_tombstone_covers_its_agents_lineage_only() {
    // An occupant that began at 7 and was restarted twice: its last incarnation is 11.
    let t = Tombstone::<()> {
        first: 7,
        last: 11,
        agent: Weak::new(),
    };
    for g in [7, 9, 11] {
        assert!(t.covers(g), "incarnation {g} of the agent");
    }
    for g in [5, 13, 12] {
        assert!(!t.covers(g), "generation {g} is not the agent's");
    }
}

#[test]
fn tombstones_are_found_and_removed_by_lineage() {
    let t = |first, last| Tombstone::<()> {
        first,
        last,
        agent: Weak::new(),
    };
    let mut agents = SlotAgents::default();
    // Three occupants in turn, each finished while its mbox is still held.
    for (first, last) in [(1, 1), (3, 5), (7, 7)] {
        agents.occupy(Arc::new(()));
        assert!(agents.live().is_some());
        assert!(agents.vacate(|_| t(first, last)).is_some());
        assert!(agents.live().is_none());
    }
    assert!(agents.vacate(|_| t(9, 9)).is_none(), "nobody to vacate");
    assert_eq!(agents.find(5).map(|t| t.last), Some(5));
    assert_eq!(agents.tombstones().count(), 3);
    agents.bury(1);
    assert!(agents.find(1).is_none());
    assert_eq!(agents.find(7).map(|t| t.first), Some(7));
    // A new occupant while two tombstones are kept.
    agents.occupy(Arc::new(()));
    assert_eq!(agents.tombstones().count(), 2);
    agents.bury(7);
    agents.bury(5);
    assert!(agents.live().is_some());
    assert!(agents.more.is_none(), "no tombstone left");
    assert!(matches!(agents.head, Head::Live(Some(_))));
}
