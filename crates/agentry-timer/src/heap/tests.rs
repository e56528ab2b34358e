use super::*;

fn fire(engine: &mut HeapEngine<u32>, now: u64) -> Vec<u32> {
    let mut out = Vec::new();
    engine.expire(now, &mut out);
    engine.check_invariants();
    out.into_iter().map(|(_, value)| value).collect()
}

/// A small deterministic generator (xorshift) so the tests need no dependency.
fn pseudo_random(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn fires_in_deadline_order() {
    let mut engine = HeapEngine::with_capacity(64);
    let mut seed = 0x9E37_79B9_7F4A_7C15;
    let mut deadlines = Vec::new();
    for n in 0..500 {
        let deadline = pseudo_random(&mut seed) % 10_000;
        engine.insert(deadline, n);
        engine.check_invariants();
        deadlines.push((deadline, n));
    }
    deadlines.sort_unstable();
    let expected: Vec<u32> = deadlines.iter().map(|&(_, n)| n).collect();
    assert_eq!(fire(&mut engine, u64::MAX), expected);
    assert!(engine.is_empty());
}

#[test]
fn equal_deadlines_fire_in_insertion_order() {
    let mut engine = HeapEngine::new();
    for n in 0..100 {
        engine.insert(if n % 2 == 0 { 7 } else { 3 }, n);
    }
    let odd = (1..100).step_by(2);
    let even = (0..100).step_by(2);
    assert_eq!(fire(&mut engine, 7), odd.chain(even).collect::<Vec<_>>());
}

#[test]
fn expires_at_exactly_the_deadline() {
    let mut engine = HeapEngine::new();
    engine.insert(1_000, 1);
    assert!(fire(&mut engine, 999).is_empty());
    assert_eq!(engine.next_deadline(), Some(1_000));
    assert_eq!(fire(&mut engine, 1_000), [1]);
    assert_eq!(engine.next_deadline(), None);
}

#[test]
fn cancel_root_middle_and_last_keeps_the_heap() {
    let mut engine = HeapEngine::new();
    let keys: Vec<_> = (0..10)
        .map(|n| engine.insert(u64::from(n) * 10, n))
        .collect();
    assert_eq!(engine.cancel(keys[0]), Some(0));
    engine.check_invariants();
    assert_eq!(engine.next_deadline(), Some(10));
    assert_eq!(engine.cancel(keys[5]), Some(5));
    engine.check_invariants();
    assert_eq!(engine.cancel(keys[9]), Some(9));
    engine.check_invariants();
    assert_eq!(engine.cancel(keys[5]), None, "already cancelled");
    assert_eq!(engine.len(), 7);
    assert_eq!(fire(&mut engine, u64::MAX), [1, 2, 3, 4, 6, 7, 8]);
}

#[test]
fn cancel_that_must_sift_up() {
    // Cancelling a node deep in one subtree moves the last leaf (small, from the other subtree)
    // into its place, where it is earlier than its new parent.
    let mut engine = HeapEngine::new();
    let deadlines = [0, 100, 1, 101, 102, 2, 3, 103, 104, 105, 106, 4, 5, 6, 7];
    let keys: Vec<_> = deadlines
        .iter()
        .map(|&d| engine.insert(d, d as u32))
        .collect();
    engine.check_invariants();
    assert_eq!(engine.cancel(keys[8]), Some(104));
    engine.check_invariants();
    let mut rest: Vec<u32> = deadlines
        .iter()
        .map(|&d| d as u32)
        .filter(|&d| d != 104)
        .collect();
    rest.sort_unstable();
    assert_eq!(fire(&mut engine, u64::MAX), rest);
}

#[test]
fn random_cancels_keep_the_heap() {
    let mut engine = HeapEngine::new();
    let mut seed = 42;
    let mut keys = Vec::new();
    for n in 0..300 {
        keys.push((engine.insert(pseudo_random(&mut seed) % 1_000, n), n));
    }
    let mut kept = Vec::new();
    for (i, &(key, n)) in keys.iter().enumerate() {
        if i % 3 == 0 {
            assert_eq!(engine.cancel(key), Some(n));
            engine.check_invariants();
        } else {
            kept.push(n);
        }
    }
    let mut fired = fire(&mut engine, u64::MAX);
    fired.sort_unstable();
    assert_eq!(fired, kept);
}

#[test]
fn stale_key_cannot_cancel_the_timer_that_reused_its_slot() {
    let mut engine = HeapEngine::new();
    let old = engine.insert(5, 1);
    assert_eq!(fire(&mut engine, 5), [1]);
    let new = engine.insert(5, 2);
    assert_eq!(old.slot(), new.slot());
    assert_eq!(engine.cancel(old), None);
    assert_eq!(engine.len(), 1);
    assert_eq!(engine.cancel(new), Some(2));
}

#[test]
fn fired_keys_are_the_inserted_keys() {
    let mut engine = HeapEngine::new();
    let a = engine.insert(2, 0);
    let b = engine.insert(1, 0);
    let mut out = Vec::new();
    engine.expire(2, &mut out);
    assert_eq!(out, [(b, 0), (a, 0)]);
}

#[test]
fn drain_removes_everything_and_stales_the_keys() {
    let mut engine = HeapEngine::new();
    let keys: Vec<_> = (0..20)
        .map(|n| engine.insert(u64::from(n % 4), n))
        .collect();
    let mut out = Vec::new();
    engine.drain(&mut out);
    assert!(engine.is_empty());
    assert_eq!(engine.next_deadline(), None);
    let mut drained: Vec<_> = out.iter().map(|&(key, value)| (value, key)).collect();
    drained.sort_unstable();
    assert_eq!(
        drained,
        (0..20).zip(keys.iter().copied()).collect::<Vec<_>>()
    );
    assert!(keys.iter().all(|&key| engine.cancel(key).is_none()));
    engine.check_invariants();

    engine.insert(1, 99);
    assert_eq!(fire(&mut engine, 1), [99]);
}

#[test]
fn extreme_deadlines() {
    let mut engine = HeapEngine::new();
    engine.insert(u64::MAX, 2);
    engine.insert(0, 1);
    assert_eq!(fire(&mut engine, 0), [1]);
    assert_eq!(fire(&mut engine, u64::MAX - 1), Vec::<u32>::new());
    assert_eq!(fire(&mut engine, u64::MAX), [2]);
}

#[test]
fn debug_shows_len_and_next_deadline_without_values() {
    struct Opaque;
    let mut engine = HeapEngine::new();
    engine.insert(9, Opaque);
    assert_eq!(
        format!("{engine:?}"),
        "HeapEngine { len: 1, next_deadline: Some(9), .. }"
    );
}

#[test]
fn ties_keep_insertion_order_across_sequence_wrap() {
    let mut engine = HeapEngine::new();
    engine.next_seq = u32::MAX - 5;
    let mut expected = Vec::new();
    for n in 0..12 {
        let deadline = [7, 3, 7, 5][n as usize % 4];
        engine.insert(deadline, n);
        engine.check_invariants();
        expected.push((deadline, n));
    }
    assert!(engine.next_seq < 20, "renumbered from the live count");
    expected.sort_by_key(|&(deadline, _)| deadline); // stable: ties stay in insertion order
    let expected: Vec<u32> = expected.into_iter().map(|(_, n)| n).collect();
    assert_eq!(fire(&mut engine, 7), expected);
}

#[test]
fn with_capacity_inserts_without_growing() {
    let mut engine: HeapEngine<u32> = HeapEngine::with_capacity(100);
    let (heap, slab) = (engine.heap.capacity(), engine.slab.len());
    for n in 0..100u32 {
        engine.insert(u64::from(n), n);
    }
    assert_eq!(engine.heap.capacity(), heap);
    assert_eq!(slab, 0);
    assert_eq!(engine.len(), 100);
}
