//! Every engine behaves like a reference model: a `BTreeMap` keyed by (effective deadline,
//! insertion sequence), over random sequences of insert, cancel (live and stale keys), advance
//! and expire (forwards, backwards, to `next_deadline`) and drain. For the wheel, the model
//! rounds deadlines up to the tick.

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroU64;

use agentry_timer::{HeapEngine, ListEngine, TimerEngine, TimerKey, WheelEngine};
use proptest::prelude::*;

/// The reference: which timers are live, in firing order.
struct Model {
    /// Nanoseconds per tick; 1 for the exact engines.
    tick: u64,
    /// Whether `next_deadline` must be the earliest deadline (heap, list) or may be earlier
    /// (wheel).
    exact: bool,
    /// (tick, seq) -> (key, value)
    timers: BTreeMap<(u64, u64), (TimerKey, u32)>,
    by_key: HashMap<TimerKey, (u64, u64)>,
    seq: u64,
}

impl Model {
    fn new(tick: u64, exact: bool) -> Self {
        Self {
            tick,
            exact,
            timers: BTreeMap::new(),
            by_key: HashMap::new(),
            seq: 0,
        }
    }

    fn insert(&mut self, deadline: u64, key: TimerKey, value: u32) -> Result<(), TestCaseError> {
        let at = (deadline.div_ceil(self.tick), self.seq);
        self.seq += 1;
        prop_assert!(
            self.by_key.insert(key, at).is_none(),
            "engine handed out a live key twice"
        );
        self.timers.insert(at, (key, value));
        Ok(())
    }

    fn cancel(&mut self, key: TimerKey) -> Option<u32> {
        let at = self.by_key.remove(&key)?;
        self.timers.remove(&at).map(|(_, value)| value)
    }

    fn expire(&mut self, now: u64) -> Vec<(TimerKey, u32)> {
        let later = match (now / self.tick).checked_add(1) {
            Some(first_later) => self.timers.split_off(&(first_later, 0)),
            None => BTreeMap::new(),
        };
        let fired: Vec<_> = std::mem::replace(&mut self.timers, later)
            .into_values()
            .collect();
        for (key, _) in &fired {
            self.by_key.remove(key);
        }
        fired
    }

    fn drain(&mut self) -> Vec<(TimerKey, u32)> {
        self.by_key.clear();
        std::mem::take(&mut self.timers).into_values().collect()
    }

    /// The earliest effective deadline in nanoseconds (saturated), if any.
    fn earliest(&self) -> Option<u64> {
        self.timers
            .keys()
            .next()
            .map(|&(tick, _)| tick.saturating_mul(self.tick))
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// A deadline `delta` after `now` (or before it when `past`).
    Insert {
        past: bool,
        delta: u64,
    },
    /// Cancel the `n`-th key ever issued (modulo their number): live, fired or cancelled.
    Cancel(usize),
    /// Move `now` forwards and expire.
    Advance(u64),
    /// Move `now` backwards and expire.
    Rewind(u64),
    /// Expire at `next_deadline()`, as a driver that slept until it does.
    Drive,
    Drain,
}

/// A value whose bit length is uniform in `0..=max_bits`: small and huge spans alike.
fn spread(max_bits: u32) -> impl Strategy<Value = u64> {
    (0..=max_bits, any::<u64>()).prop_map(|(bits, raw)| {
        if bits == 0 {
            0
        } else {
            raw >> (u64::BITS - bits)
        }
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::bool::weighted(0.1), spread(64))
            .prop_map(|(past, delta)| Op::Insert { past, delta }),
        3 => any::<usize>().prop_map(Op::Cancel),
        3 => spread(44).prop_map(Op::Advance),
        1 => spread(40).prop_map(Op::Rewind),
        2 => Just(Op::Drive),
        1 => Just(Op::Drain),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 0..300)
}

fn check_state<E: TimerEngine<u32>>(engine: &E, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(engine.len(), model.timers.len());
    prop_assert_eq!(engine.is_empty(), model.timers.is_empty());
    let next = engine.next_deadline();
    match model.earliest() {
        None => prop_assert_eq!(next, None),
        Some(earliest) if model.exact => prop_assert_eq!(next, Some(earliest)),
        Some(earliest) => {
            let next = next.ok_or_else(|| TestCaseError::fail("next_deadline None with timers"))?;
            prop_assert!(
                next <= earliest,
                "next_deadline {} after earliest {}",
                next,
                earliest
            );
        }
    }
    Ok(())
}

fn expire_both<E: TimerEngine<u32>>(
    engine: &mut E,
    model: &mut Model,
    now: u64,
    out: &mut Vec<(TimerKey, u32)>,
) -> Result<(), TestCaseError> {
    out.clear();
    engine.expire(now, out);
    prop_assert_eq!(&*out, &model.expire(now)[..], "expire({})", now);
    Ok(())
}

fn run<E: TimerEngine<u32>>(mut engine: E, model: Model, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = model;
    let mut issued: Vec<TimerKey> = Vec::new();
    let mut out = Vec::new();
    let mut now = 0u64;
    let mut value = 0u32;
    for op in ops {
        match *op {
            Op::Insert { past, delta } => {
                let deadline = if past {
                    now.saturating_sub(delta)
                } else {
                    now.saturating_add(delta)
                };
                let key = engine.insert(deadline, value);
                model.insert(deadline, key, value)?;
                issued.push(key);
                value += 1;
            }
            Op::Cancel(n) => {
                if !issued.is_empty() {
                    let key = issued[n % issued.len()];
                    prop_assert_eq!(engine.cancel(key), model.cancel(key), "cancel({:?})", key);
                }
            }
            Op::Advance(delta) => {
                now = now.saturating_add(delta);
                expire_both(&mut engine, &mut model, now, &mut out)?;
            }
            Op::Rewind(delta) => {
                expire_both(&mut engine, &mut model, now.saturating_sub(delta), &mut out)?;
            }
            Op::Drive => {
                if let Some(next) = engine.next_deadline() {
                    now = now.max(next);
                    expire_both(&mut engine, &mut model, next, &mut out)?;
                }
            }
            Op::Drain => {
                out.clear();
                engine.drain(&mut out);
                let mut expected = model.drain();
                out.sort_unstable();
                expected.sort_unstable();
                prop_assert_eq!(&out, &expected);
            }
        }
        check_state(&engine, &model)?;
    }

    // A driver that sleeps until next_deadline empties the engine in a bounded number of
    // wake-ups (the wheel may wake early, at most once per cascade), unless a timer's effective
    // deadline lies beyond u64::MAX.
    let budget = 8 * engine.len() + 8;
    for _ in 0..budget {
        let Some(next) = engine.next_deadline() else {
            break;
        };
        expire_both(&mut engine, &mut model, next, &mut out)?;
        check_state(&engine, &model)?;
        if next == u64::MAX {
            break;
        }
    }
    prop_assert!(
        engine.next_deadline().is_none_or(|next| next == u64::MAX),
        "driver loop did not converge"
    );
    Ok(())
}

proptest! {
    // 512 cases unless PROPTEST_CASES says otherwise.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn heap_matches_model(ops in ops()) {
        run(HeapEngine::new(), Model::new(1, true), &ops)?;
    }

    #[test]
    fn list_matches_model(ops in ops()) {
        run(ListEngine::new(), Model::new(1, true), &ops)?;
    }

    #[test]
    fn wheel_matches_model_rounding_up_to_the_tick(
        tick in prop_oneof![Just(1u64), Just(7), Just(1_000), Just(1_000_000)],
        ops in ops(),
    ) {
        let engine = WheelEngine::with_tick(NonZeroU64::new(tick).expect("non-zero"), 0);
        run(engine, Model::new(tick, false), &ops)?;
    }
}
