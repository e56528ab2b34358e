//! The tombstones of a slot (the slab's tests, `slab/tests.rs`, drive the table through the
//! slab).

use super::{Tombstone, Tombstones};
use std::sync::Weak;

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
    let mut ts = Tombstones::default();
    ts.push(t(1, 1));
    ts.push(t(3, 5));
    ts.push(t(7, 7));
    assert_eq!(ts.find(5).map(|t| t.last), Some(5));
    ts.remove(1);
    assert!(ts.find(1).is_none());
    assert_eq!(ts.find(7).map(|t| t.first), Some(7));
    ts.remove(7);
    ts.remove(5);
    assert!(ts.one.is_none() && ts.more.is_none());
}
