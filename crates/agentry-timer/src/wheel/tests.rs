use super::*;

/// A wheel whose tick is 1 ns, so ticks and deadlines coincide.
fn unit_wheel() -> WheelEngine<u32> {
    WheelEngine::with_tick(NonZeroU64::MIN, 0)
}

fn tick_wheel(tick_ns: u64) -> WheelEngine<u32> {
    WheelEngine::with_tick(NonZeroU64::new(tick_ns).expect("non-zero tick"), 0)
}

fn fire(engine: &mut WheelEngine<u32>, now: u64) -> Vec<u32> {
    let mut out = Vec::new();
    engine.expire(now, &mut out);
    engine.check_invariants();
    out.into_iter().map(|(_, value)| value).collect()
}

/// Which list the live timer `key` sits in.
fn list_of(engine: &WheelEngine<u32>, key: TimerKey) -> usize {
    usize::from(engine.slab.get(key).expect("live key").list)
}

/// The first tick of level `level` (level 6: the first overflowing tick from 0).
fn level_start(level: u32) -> u64 {
    1 << (SLOT_BITS * level)
}

#[test]
fn default_tick_is_one_millisecond() {
    let wheel = WheelEngine::<()>::new();
    assert_eq!(wheel.tick_ns(), 1_000_000);
    assert_eq!(DEFAULT_TICK_NS, 1_000_000);
}

#[test]
fn deadline_is_rounded_up_to_the_tick() {
    let mut wheel = tick_wheel(10);
    wheel.insert(21, 1); // tick 3
    wheel.insert(30, 2); // tick 3, on the boundary
    wheel.insert(31, 3); // tick 4
    assert_eq!(wheel.next_deadline(), Some(30));
    assert!(fire(&mut wheel, 29).is_empty(), "never early");
    assert_eq!(fire(&mut wheel, 30), [1, 2]);
    assert!(fire(&mut wheel, 39).is_empty());
    assert_eq!(fire(&mut wheel, 40), [3]);
}

#[test]
fn expires_at_exactly_the_effective_deadline() {
    let mut wheel = unit_wheel();
    wheel.insert(1_000, 1);
    assert!(fire(&mut wheel, 999).is_empty());
    assert_eq!(fire(&mut wheel, 1_000), [1]);
    assert!(wheel.is_empty());
}

#[test]
fn zero_deadline_fires_at_the_first_expire() {
    let mut wheel = WheelEngine::new();
    wheel.insert(0, 7);
    assert_eq!(wheel.next_deadline(), Some(0));
    assert_eq!(fire(&mut wheel, 0), [7]);
}

#[test]
fn timers_land_on_every_level_and_cascade_down_to_fire_on_time() {
    for level in 0..LEVELS as u32 {
        let mut wheel = unit_wheel();
        // An odd offset so every lower level's slot is non-zero and must cascade.
        let deadline = level_start(level) * 3 + level_start(level) / 2 + 1;
        let key = wheel.insert(deadline, level);
        wheel.check_invariants();
        assert_eq!(
            list_of(&wheel, key) / SLOTS,
            level as usize,
            "level of {deadline}"
        );

        // A driver that sleeps until next_deadline: at most one wake-up per level.
        let mut wakeups = 0;
        while let Some(next) = wheel.next_deadline() {
            assert!(
                next <= deadline,
                "next_deadline {next} later than {deadline}"
            );
            wakeups += 1;
            let fired = fire(&mut wheel, next);
            if next < deadline {
                assert!(fired.is_empty(), "fired early at {next}");
            } else {
                assert_eq!(fired, [level]);
            }
        }
        assert!(wakeups <= level + 1, "{wakeups} wake-ups for level {level}");
    }
}

#[test]
fn cascade_keeps_insertion_order_of_equal_ticks() {
    let mut wheel = unit_wheel();
    let deadline = 5 * level_start(3) + 77;
    wheel.insert(deadline, 0); // level 3
    wheel.insert(deadline + 1, 100);
    assert!(fire(&mut wheel, deadline - 70).is_empty()); // cascades it to level 1
    wheel.insert(deadline, 1); // lands next to the cascaded timer
    assert!(fire(&mut wheel, deadline - 3).is_empty());
    wheel.insert(deadline, 2);
    assert_eq!(fire(&mut wheel, deadline + 1), [0, 1, 2, 100]);
}

#[test]
fn big_jump_fires_across_levels_in_order() {
    let mut wheel = unit_wheel();
    let deadlines = [
        level_start(5) + 3,
        2,
        level_start(2) + 9,
        level_start(1),
        65,
        64,
        1 << 30,
    ];
    for (n, &deadline) in deadlines.iter().enumerate() {
        wheel.insert(deadline, n as u32);
    }
    let mut order: Vec<_> = (0..deadlines.len()).collect();
    order.sort_by_key(|&n| deadlines[n]);
    let expected: Vec<u32> = order.into_iter().map(|n| n as u32).collect();
    assert_eq!(fire(&mut wheel, u64::MAX), expected);
}

#[test]
fn deadline_beyond_the_top_level_waits_in_overflow() {
    let mut wheel = unit_wheel();
    let deadline = 3 * level_start(6) + 12_345;
    let key = wheel.insert(deadline, 1);
    assert_eq!(list_of(&wheel, key), OVERFLOW);
    assert_eq!(wheel.next_deadline(), Some(deadline));
    assert!(fire(&mut wheel, 3 * level_start(6)).is_empty());
    assert_eq!(
        list_of(&wheel, key) / SLOTS,
        2,
        "re-linked onto the levels at its epoch"
    );
    assert!(fire(&mut wheel, deadline - 1).is_empty());
    assert_eq!(list_of(&wheel, key) / SLOTS, 0);
    assert_eq!(fire(&mut wheel, deadline), [1]);
}

#[test]
fn overflow_is_relinked_before_elapsed_enters_its_epoch() {
    let mut wheel = unit_wheel();
    let epoch = level_start(6);
    let deadline = epoch + 100;
    let first = wheel.insert(deadline, 1);
    wheel.insert(epoch - 10, 0); // on level 5
    assert_eq!(fire(&mut wheel, epoch + 50), [0]);
    assert_ne!(list_of(&wheel, first), OVERFLOW);
    wheel.insert(deadline, 2); // same tick, inserted later: must fire after
    assert_eq!(fire(&mut wheel, deadline), [1, 2]);
}

#[test]
fn overflow_spanning_several_epochs() {
    let mut wheel = unit_wheel();
    let epoch = level_start(6);
    wheel.insert(7 * epoch + 3, 3);
    wheel.insert(2 * epoch, 1);
    wheel.insert(2 * epoch, 2);
    wheel.insert(5, 0);
    wheel.insert(u64::MAX, 4);
    assert_eq!(fire(&mut wheel, 2 * epoch), [0, 1, 2]);
    assert_eq!(wheel.next_deadline(), Some(7 * epoch + 3));
    assert_eq!(fire(&mut wheel, 7 * epoch + 3), [3]);
    assert_eq!(fire(&mut wheel, u64::MAX - 1), Vec::<u32>::new());
    assert_eq!(fire(&mut wheel, u64::MAX), [4]);
}

#[test]
fn cancelled_overflow_leaves_a_low_bound_that_only_wakes_early() {
    let mut wheel = unit_wheel();
    let epoch = level_start(6);
    let early = wheel.insert(epoch + 1, 1);
    wheel.insert(4 * epoch + 9, 2);
    assert_eq!(wheel.cancel(early), Some(1));
    let next = wheel.next_deadline().expect("one timer left");
    assert!(next <= 4 * epoch + 9);
    assert!(fire(&mut wheel, next).is_empty());
    assert_eq!(
        wheel.next_deadline(),
        Some(4 * epoch + 9),
        "exact once re-linked"
    );
    assert_eq!(fire(&mut wheel, 4 * epoch + 9), [2]);
}

#[test]
fn past_deadlines_go_to_the_due_list_in_order() {
    let mut wheel = unit_wheel();
    wheel.insert(1_000, 9);
    assert_eq!(fire(&mut wheel, 500), Vec::<u32>::new());
    wheel.insert(300, 2);
    wheel.insert(100, 0);
    wheel.insert(300, 3);
    wheel.insert(200, 1);
    wheel.insert(500, 4);
    assert_eq!(wheel.next_deadline(), Some(100));
    assert_eq!(fire(&mut wheel, 1_000), [0, 1, 2, 3, 4, 9]);
}

#[test]
fn earlier_now_fires_only_what_is_due_then() {
    let mut wheel = unit_wheel();
    wheel.insert(2_000, 9);
    assert!(fire(&mut wheel, 1_000).is_empty());
    wheel.insert(400, 1);
    wheel.insert(800, 2);
    assert_eq!(fire(&mut wheel, 500), [1], "time went back to 500");
    assert!(fire(&mut wheel, 700).is_empty());
    assert_eq!(fire(&mut wheel, 2_000), [2, 9]);
}

#[test]
fn cancel_from_every_kind_of_list_clears_occupancy() {
    let mut wheel = unit_wheel();
    assert!(fire(&mut wheel, 10).is_empty());
    let due = wheel.insert(3, 0);
    let keys: Vec<_> = (0..LEVELS as u32)
        .map(|level| wheel.insert(level_start(level) * 2 + 11, level + 1))
        .collect();
    let overflow = wheel.insert(level_start(6) * 2, 9);
    wheel.check_invariants();
    assert_eq!(list_of(&wheel, due), DUE);
    assert_eq!(list_of(&wheel, overflow), OVERFLOW);

    assert_eq!(wheel.cancel(due), Some(0));
    for (level, &key) in keys.iter().enumerate() {
        assert_eq!(wheel.cancel(key), Some(level as u32 + 1));
        wheel.check_invariants();
        assert_eq!(wheel.occupied[level], 0);
    }
    assert_eq!(wheel.cancel(overflow), Some(9));
    wheel.check_invariants();
    assert_eq!(wheel.overflow_min, u64::MAX);
    assert_eq!(wheel.next_deadline(), None);
    assert!(wheel.is_empty());
}

#[test]
fn cancel_one_of_a_slot_keeps_the_others() {
    let mut wheel = unit_wheel();
    let keys: Vec<_> = (0..5).map(|n| wheel.insert(40, n)).collect();
    assert_eq!(wheel.cancel(keys[2]), Some(2));
    assert_eq!(wheel.cancel(keys[0]), Some(0));
    assert_eq!(wheel.cancel(keys[4]), Some(4));
    wheel.check_invariants();
    assert_eq!(fire(&mut wheel, 40), [1, 3]);
}

#[test]
fn stale_key_cannot_cancel_the_timer_that_reused_its_slot() {
    let mut wheel = WheelEngine::new();
    let old = wheel.insert(5_000_000, 1);
    assert_eq!(wheel.cancel(old), Some(1));
    let new = wheel.insert(5_000_000, 2);
    assert_eq!(old.slot(), new.slot());
    assert_eq!(wheel.cancel(old), None);
    assert_eq!(fire(&mut wheel, 5_000_000), [2]);
    assert_eq!(wheel.cancel(new), None, "fired");
}

#[test]
fn next_deadline_is_a_lower_bound_on_a_higher_level() {
    let mut wheel = WheelEngine::new();
    let ms = 1_000_000;
    wheel.insert(100 * ms + 1, 1); // tick 101, level 1, slot 1 starts at tick 64
    assert_eq!(wheel.next_deadline(), Some(64 * ms));
    assert!(fire(&mut wheel, 64 * ms).is_empty());
    assert_eq!(wheel.next_deadline(), Some(101 * ms), "exact on level 0");
    assert_eq!(fire(&mut wheel, 101 * ms), [1]);
}

#[test]
fn huge_deadlines_saturate_next_deadline() {
    let mut wheel = WheelEngine::new();
    wheel.insert(u64::MAX, 1); // its tick times 1 ms is past u64::MAX
    assert_eq!(wheel.next_deadline(), Some(u64::MAX));
    assert!(
        fire(&mut wheel, u64::MAX).is_empty(),
        "its effective deadline is never reached"
    );
    assert_eq!(wheel.len(), 1);
}

#[test]
fn drain_empties_every_list() {
    let mut wheel = unit_wheel();
    assert!(fire(&mut wheel, 100).is_empty());
    let mut keys = vec![wheel.insert(5, 0)];
    keys.extend((0..7).map(|level| wheel.insert(100 + level_start(level), level + 1)));
    let mut out = Vec::new();
    wheel.drain(&mut out);
    wheel.check_invariants();
    assert!(wheel.is_empty());
    assert_eq!(wheel.next_deadline(), None);
    let mut drained: Vec<_> = out.into_iter().map(|(key, value)| (value, key)).collect();
    drained.sort_unstable();
    assert_eq!(
        drained,
        (0..8).zip(keys.iter().copied()).collect::<Vec<_>>()
    );
    assert!(keys.iter().all(|&key| wheel.cancel(key).is_none()));
    wheel.insert(200, 1);
    assert_eq!(fire(&mut wheel, 200), [1]);
}

#[test]
fn random_workload_keeps_the_ground_rules() {
    let mut wheel = tick_wheel(3);
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut now = 0;
    let mut keys = Vec::new();
    for n in 0..5_000 {
        let choice = next() % 10;
        if choice < 6 {
            let span = 1 << (next() % 44);
            keys.push(wheel.insert(now + next() % span, n));
        } else if choice < 8 && !keys.is_empty() {
            let key = keys.swap_remove((next() % keys.len() as u64) as usize);
            wheel.cancel(key);
        } else {
            now += next() % (1 << (next() % 40));
            let mut out = Vec::new();
            wheel.expire(now, &mut out);
        }
        wheel.check_invariants();
    }
}
