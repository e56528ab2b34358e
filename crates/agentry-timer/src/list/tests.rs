use super::*;

fn fire(engine: &mut ListEngine<u32>, now: u64) -> Vec<u32> {
    let mut out = Vec::new();
    engine.expire(now, &mut out);
    engine.check_invariants();
    out.into_iter().map(|(_, value)| value).collect()
}

#[test]
fn insert_keeps_the_list_sorted() {
    let mut engine = ListEngine::new();
    for (n, deadline) in [50, 10, 40, 20, 30, 60, 0].into_iter().enumerate() {
        engine.insert(deadline, n as u32);
        engine.check_invariants();
    }
    assert_eq!(engine.next_deadline(), Some(0));
    assert_eq!(fire(&mut engine, 35), [6, 1, 3, 4]);
    assert_eq!(fire(&mut engine, u64::MAX), [2, 0, 5]);
}

#[test]
fn equal_deadlines_fire_in_insertion_order() {
    let mut engine = ListEngine::new();
    for n in 0..10 {
        engine.insert(u64::from(n % 2), n);
    }
    assert_eq!(fire(&mut engine, 1), [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]);
}

#[test]
fn expires_at_exactly_the_deadline() {
    let mut engine = ListEngine::new();
    engine.insert(1_000, 1);
    assert!(fire(&mut engine, 999).is_empty());
    assert_eq!(fire(&mut engine, 1_000), [1]);
}

#[test]
fn cancel_unlinks_head_middle_and_tail() {
    let mut engine = ListEngine::new();
    let keys: Vec<_> = (0..5).map(|n| engine.insert(u64::from(n), n)).collect();
    assert_eq!(engine.cancel(keys[0]), Some(0));
    assert_eq!(engine.cancel(keys[2]), Some(2));
    assert_eq!(engine.cancel(keys[4]), Some(4));
    engine.check_invariants();
    assert_eq!(engine.cancel(keys[4]), None);
    assert_eq!(engine.len(), 2);
    assert_eq!(fire(&mut engine, 10), [1, 3]);
}

#[test]
fn stale_key_cannot_cancel_the_timer_that_reused_its_slot() {
    let mut engine = ListEngine::new();
    let old = engine.insert(5, 1);
    assert_eq!(fire(&mut engine, 5), [1]);
    let new = engine.insert(6, 2);
    assert_eq!(old.slot(), new.slot());
    assert_eq!(engine.cancel(old), None);
    assert_eq!(engine.cancel(new), Some(2));
}

#[test]
fn drain_returns_everything_in_order() {
    let mut engine = ListEngine::new();
    let keys: Vec<_> = [3, 1, 2]
        .into_iter()
        .map(|d| engine.insert(d, d as u32))
        .collect();
    let mut out = Vec::new();
    engine.drain(&mut out);
    assert!(engine.is_empty());
    assert_eq!(out, [(keys[1], 1), (keys[2], 2), (keys[0], 3)]);
    assert!(keys.iter().all(|&key| engine.cancel(key).is_none()));
}
