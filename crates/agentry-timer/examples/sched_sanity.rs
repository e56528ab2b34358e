//! Quick timing sanity check of the engines (the real figures come from `agentry-bench`).
//!
//! `sched`: N timers at random deadlines uniform in 0–60 s are inserted, then all cancelled in
//! insertion order, on a fresh engine and again on the warm one (slots reused), then once more
//! cancelled in random order; `timer_churn`: with N live timers, cancel a random one and insert
//! a new one. The list engine is capped at 20,000 timers. Every cancel checks its value.
//!
//! ```text
//! cargo run --release -p agentry-timer --example sched_sanity [N] [heap|wheel|list ...]
//! ```
//!
//! `cargo test` runs it on 2,000 timers, for its checks rather than its timings.

use std::hint::black_box;
use std::time::Instant;

use agentry_timer::{AnyEngine, EngineKind, TimerEngine, TimerKey};

const SPAN_NS: u64 = 60_000_000_000;
const LIST_CAP: usize = 20_000;
const RUNS: usize = 3;

/// splitmix64: a dependency-free, reproducible source of deadlines.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(bound)) >> 64) as u64
    }
}

fn ns_per(start: Instant, ops: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / ops as f64
}

/// Inserts `n` timers and returns their keys and ns per insert.
fn insert_all(engine: &mut AnyEngine<u64>, rng: &mut Rng, n: usize) -> (Vec<TimerKey>, f64) {
    let deadlines: Vec<u64> = (0..n).map(|_| rng.below(SPAN_NS)).collect();
    let mut keys = Vec::with_capacity(n);
    let start = Instant::now();
    for (value, &deadline) in deadlines.iter().enumerate() {
        keys.push(engine.insert(deadline, value as u64));
    }
    (keys, ns_per(start, n))
}

/// Cancels every key in `order`, checking each value, and returns ns per cancel.
fn cancel_all(engine: &mut AnyEngine<u64>, keys: &[TimerKey], order: &[usize]) -> f64 {
    let start = Instant::now();
    let mut checksum = 0u64;
    for &index in order {
        checksum += engine.cancel(keys[index]).expect("live timer") ^ index as u64;
    }
    let ns = ns_per(start, order.len());
    assert_eq!(checksum, 0, "a cancel returned the wrong value");
    assert!(engine.is_empty());
    ns
}

fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    order
}

/// With `n` live timers: cancel a random one, insert a new one; ns per pair.
fn churn(engine: &mut AnyEngine<u64>, rng: &mut Rng, n: usize, pairs: usize) -> f64 {
    let (mut keys, _) = insert_all(engine, rng, n);
    let victims: Vec<usize> = (0..pairs).map(|_| rng.below(n as u64) as usize).collect();
    let deadlines: Vec<u64> = (0..pairs).map(|_| rng.below(SPAN_NS)).collect();
    let start = Instant::now();
    for (&victim, &deadline) in victims.iter().zip(&deadlines) {
        black_box(engine.cancel(keys[victim]).expect("live timer"));
        keys[victim] = engine.insert(deadline, victim as u64);
    }
    let ns = ns_per(start, pairs);
    assert_eq!(engine.len(), n);
    let mut out = Vec::with_capacity(n);
    engine.drain(&mut out);
    assert_eq!(out.len(), n);
    ns
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |arg| arg.parse().expect("N"));
    let kinds: Vec<EngineKind> = args.map(|arg| arg.parse().expect("engine kind")).collect();
    report(
        n,
        if kinds.is_empty() {
            &EngineKind::ALL
        } else {
            &kinds
        },
    );
}

/// Runs every workload on every engine of `kinds` and prints the best figures.
fn report(n: usize, kinds: &[EngineKind]) {
    println!("ns per operation (add, del) or per add+del pair; best of {RUNS} runs");
    println!("fresh: new engine; warm: slots reused; random: deleted in random order");
    println!(
        "{:<6}{:>9} {:>7}{:>7}{:>7} {:>7}{:>7}{:>7} {:>7}{:>7} {:>7}",
        "engine", "N", "add", "del", "fresh", "add", "del", "warm", "del", "random", "churn"
    );
    for &kind in kinds {
        let n = if kind == EngineKind::List {
            n.min(LIST_CAP)
        } else {
            n
        };
        let mut best = [f64::INFINITY; 9];
        for run in 0..RUNS {
            let mut rng = Rng(0x5EED + run as u64);
            let mut engine = AnyEngine::with_capacity(kind, n);
            let in_order: Vec<usize> = (0..n).collect();

            let (keys, fresh_add) = insert_all(&mut engine, &mut rng, n);
            let fresh_del = cancel_all(&mut engine, &keys, &in_order);

            let (keys, warm_add) = insert_all(&mut engine, &mut rng, n);
            let warm_del = cancel_all(&mut engine, &keys, &in_order);

            let (keys, random_add) = insert_all(&mut engine, &mut rng, n);
            let random = shuffled(n, &mut rng);
            let random_del = cancel_all(&mut engine, &keys, &random);

            let churn = churn(&mut engine, &mut rng, n, n.min(1_000_000));
            let figures = [
                fresh_add,
                fresh_del,
                fresh_add + fresh_del,
                warm_add,
                warm_del,
                warm_add + warm_del,
                random_del,
                random_add + random_del,
                churn,
            ];
            for (best, figure) in best.iter_mut().zip(figures) {
                *best = best.min(figure);
            }
        }
        print!("{:<6}{:>9}", kind.name(), n);
        for (i, figure) in best.iter().enumerate() {
            let gap = if matches!(i, 0 | 3 | 6 | 8) { " " } else { "" };
            print!("{gap}{figure:>7.1}");
        }
        println!();
    }
}

#[test]
fn every_workload_checks_out_on_a_small_population() {
    report(2_000, &EngineKind::ALL);
}
