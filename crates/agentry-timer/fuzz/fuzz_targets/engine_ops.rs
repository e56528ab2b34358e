//! Decodes bytes into a sequence of timer operations, runs it on the heap, the list and the
//! wheel, each next to a reference model (a `BTreeMap` keyed by (effective deadline, seq)), and
//! asserts they all agree: every key, value and order fired, every cancel, len and
//! next_deadline. The heap and the list must also fire exactly the same values.

#![no_main]

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroU64;

use agentry_timer::{HeapEngine, ListEngine, TimerEngine, TimerKey, WheelEngine};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Op {
    /// A deadline `spread(bits, raw)` after (or before, when `past`) `now`.
    Insert {
        past: bool,
        bits: u8,
        raw: u64,
    },
    /// Cancel the `n`-th key ever issued: live, fired or cancelled.
    Cancel(u16),
    Advance {
        bits: u8,
        raw: u64,
    },
    Rewind {
        bits: u8,
        raw: u64,
    },
    /// Expire at `next_deadline()`.
    Drive,
    Drain,
}

#[derive(Arbitrary, Debug)]
struct Input {
    tick: u8,
    ops: Vec<Op>,
}

/// A value of about `bits` bits, so tiny and huge spans are equally likely.
fn spread(bits: u8, raw: u64) -> u64 {
    match bits % 65 {
        0 => 0,
        bits => raw >> (64 - u32::from(bits)),
    }
}

/// An engine next to its model.
struct Checked<E> {
    engine: E,
    tick: u64,
    exact: bool,
    timers: BTreeMap<(u64, u64), (TimerKey, u32)>,
    by_key: HashMap<TimerKey, (u64, u64)>,
    seq: u64,
    issued: Vec<TimerKey>,
    out: Vec<(TimerKey, u32)>,
}

impl<E: TimerEngine<u32>> Checked<E> {
    fn new(engine: E, tick: u64, exact: bool) -> Self {
        Self {
            engine,
            tick,
            exact,
            timers: BTreeMap::new(),
            by_key: HashMap::new(),
            seq: 0,
            issued: Vec::new(),
            out: Vec::new(),
        }
    }

    fn insert(&mut self, deadline: u64, value: u32) {
        let key = self.engine.insert(deadline, value);
        let at = (deadline.div_ceil(self.tick), self.seq);
        self.seq += 1;
        assert!(
            self.by_key.insert(key, at).is_none(),
            "live key issued twice"
        );
        self.timers.insert(at, (key, value));
        self.issued.push(key);
    }

    fn cancel(&mut self, n: u16) {
        if self.issued.is_empty() {
            return;
        }
        let key = self.issued[usize::from(n) % self.issued.len()];
        let expected = self
            .by_key
            .remove(&key)
            .and_then(|at| self.timers.remove(&at));
        assert_eq!(
            self.engine.cancel(key),
            expected.map(|(_, value)| value),
            "cancel {key:?}"
        );
    }

    /// Expires at `now` and returns the values fired.
    fn expire(&mut self, now: u64) -> Vec<u32> {
        self.out.clear();
        self.engine.expire(now, &mut self.out);
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
        assert_eq!(self.out, fired, "expire({now})");
        fired.into_iter().map(|(_, value)| value).collect()
    }

    fn drain(&mut self) {
        self.out.clear();
        self.engine.drain(&mut self.out);
        let mut expected: Vec<_> = std::mem::take(&mut self.timers).into_values().collect();
        self.by_key.clear();
        self.out.sort_unstable();
        expected.sort_unstable();
        assert_eq!(self.out, expected, "drain");
    }

    fn check(&self) {
        assert_eq!(self.engine.len(), self.timers.len());
        assert_eq!(self.engine.is_empty(), self.timers.is_empty());
        let earliest = self
            .timers
            .keys()
            .next()
            .map(|&(tick, _)| tick.saturating_mul(self.tick));
        let next = self.engine.next_deadline();
        match earliest {
            None => assert_eq!(next, None),
            Some(earliest) if self.exact => assert_eq!(next, Some(earliest)),
            Some(earliest) => assert!(next.is_some_and(|next| next <= earliest)),
        }
    }
}

fuzz_target!(|input: Input| {
    let tick = [1, 3, 64, 1_000, 1_000_000][usize::from(input.tick) % 5];
    let mut heap = Checked::new(HeapEngine::new(), 1, true);
    let mut list = Checked::new(ListEngine::new(), 1, true);
    let wheel_engine = WheelEngine::with_tick(NonZeroU64::new(tick).expect("non-zero"), 0);
    let mut wheel = Checked::new(wheel_engine, tick, false);
    let mut now = 0u64;
    // Bound the list's O(N) inserts so one input stays fast.
    for (value, op) in (0u32..).zip(input.ops.into_iter().take(4_096)) {
        match op {
            Op::Insert { past, bits, raw } => {
                let delta = spread(bits, raw);
                let deadline = if past {
                    now.saturating_sub(delta)
                } else {
                    now.saturating_add(delta)
                };
                heap.insert(deadline, value);
                list.insert(deadline, value);
                wheel.insert(deadline, value);
            }
            Op::Cancel(n) => {
                heap.cancel(n);
                list.cancel(n);
                wheel.cancel(n);
            }
            Op::Advance { bits, raw } | Op::Rewind { bits, raw } => {
                let delta = spread(bits, raw);
                let at = if let Op::Advance { .. } = op {
                    now = now.saturating_add(delta);
                    now
                } else {
                    now.saturating_sub(delta)
                };
                assert_eq!(heap.expire(at), list.expire(at));
                wheel.expire(at);
            }
            Op::Drive => {
                if let Some(next) = heap.engine.next_deadline() {
                    now = now.max(next);
                    assert_eq!(heap.expire(next), list.expire(next));
                }
                if let Some(next) = wheel.engine.next_deadline() {
                    now = now.max(next);
                    wheel.expire(next);
                }
            }
            Op::Drain => {
                heap.drain();
                list.drain();
                wheel.drain();
            }
        }
        heap.check();
        list.check();
        wheel.check();
    }
});
