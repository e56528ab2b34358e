use super::*;

#[test]
fn insert_hands_out_consecutive_slots_at_generation_zero() {
    let mut slab = Slab::with_capacity(4);
    let keys: Vec<_> = (0..3).map(|n| slab.insert(n)).collect();
    assert_eq!(
        keys,
        [
            TimerKey::new(0, 0),
            TimerKey::new(1, 0),
            TimerKey::new(2, 0)
        ]
    );
    assert_eq!(slab.len(), 3);
    assert_eq!(slab.get(keys[1]), Some(&1));
    assert_eq!(*slab.node(2), 2);
}

#[test]
fn removed_slot_is_reused_lifo_with_a_new_generation() {
    let mut slab = Slab::with_capacity(4);
    let a = slab.insert('a');
    let b = slab.insert('b');
    assert_eq!(slab.remove_slot(a.slot()), (a, 'a'));
    assert_eq!(slab.remove_slot(b.slot()), (b, 'b'));
    assert_eq!(slab.len(), 0);
    assert_eq!(slab.get(a), None);

    let c = slab.insert('c');
    let d = slab.insert('d');
    assert_eq!(c, TimerKey::new(b.slot(), 1), "last freed slot first");
    assert_eq!(d, TimerKey::new(a.slot(), 1));
    assert_eq!(slab.get(b), None, "stale key must not see the new node");
    assert_eq!(slab.get(c), Some(&'c'));
}

#[test]
fn get_rejects_out_of_range_and_vacant_slots() {
    let mut slab = Slab::with_capacity(1);
    assert_eq!(slab.get(TimerKey::new(7, 0)), None);
    let key = slab.insert(1u8);
    slab.remove_slot(key.slot());
    assert_eq!(
        slab.get(TimerKey::new(key.slot(), 1)),
        None,
        "vacant slot with the next generation"
    );
}

#[test]
fn node_mut_writes_through() {
    let mut slab = Slab::with_capacity(1);
    let key = slab.insert(1u32);
    *slab.node_mut(key.slot()) += 41;
    assert_eq!(slab.get(key), Some(&42));
}

#[test]
#[should_panic(expected = "invariant")]
fn node_of_a_vacant_slot_is_an_invariant_violation() {
    let mut slab = Slab::with_capacity(1);
    let key = slab.insert(1u32);
    slab.remove_slot(key.slot());
    slab.node(key.slot());
}
