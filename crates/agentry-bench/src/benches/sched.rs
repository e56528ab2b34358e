//! `sched` (Asterisk review 160, 2009): the scheduler table. N timers at uniformly random
//! deadlines in 0–60 s are added to an empty engine, then all of them are deleted; the time of
//! the N adds and of the N deletes is reported for the sorted list (Asterisk before 2009), the
//! indexed heap (Asterisk since) and the hierarchical wheel, beside the review's figures.
//!
//! # Workload, exactly
//!
//! One repetition, per N and engine (`list`, `heap`, `wheel` from `agentry-timer`, called
//! through the [`TimerEngine`] trait, monomorphised):
//! 1. untimed: an empty engine with room for N timers (`with_capacity(N)`), N deadlines drawn
//!    uniformly from 0..60 s in nanoseconds by a seeded RNG (the same for every engine and
//!    repetition at one N), and a random permutation of 0..N;
//! 2. phase `add`: N inserts, the i-th with the i-th deadline and the value i;
//! 3. phase `delete`: N cancels **in insertion order**, the Asterisk test's order
//!    (`test_sched.c` deletes `sched_ids[0..N]` in the order they were added);
//! 4. untimed: a fresh engine rebuilt into the state the timed adds left (the same timers in
//!    the same slots, which the runner checks). The heap and the wheel simply repeat the adds;
//!    the list, whose adds cost O(N²), is rebuilt in O(N log N) (see `rebuild_list`);
//! 5. phase `delete_random`: N cancels in the random order of the permutation. Deadlines are
//!    random, so insertion order is already a random order *in time*, but it walks the slab in
//!    slot order; random order also scatters the slab accesses, the worst case for memory
//!    latency. No seed figure (the review did not measure it). The Asterisk order (phase
//!    `delete`) is the primary figure, the one the seed and the chart's `delete` compare.
//!
//! No time passes (nothing expires), as in the review's test.
//!
//! # Checks
//!
//! Each add returned a distinct key; each cancel returned exactly the value inserted with its
//! key (and the values sum to N(N-1)/2); the engine is empty after each delete phase.
//!
//! # Seed and ratios
//!
//! The review's list ("trunk") and heap ("team/russell/heap") times, converted to ops/s, are the
//! seeds of the `add` and `delete` phases of the list and heap cases; the wheel has no seed.
//! Heap and wheel cases name the list of the same N as their peer, so the `ratio` column is
//! ours / list in ops/s, which is list time / our time: the review's "heap time as a percentage
//! of trunk" is 100 / ratio.
//!
//! # The list is capped
//!
//! The list's insert is O(N), a repetition O(N²): at 1M the review needed 686.7 s. List cases
//! carry a per-repetition budget (`.budget` + `.cap_series("list")`): once a list case needed
//! more than the budget for one repetition, the larger list cases are skipped by the harness;
//! and a list case whose repetition is predicted (quadratically, from the largest list case
//! already run) to exceed the budget skips itself before running. Both print the reason.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use agentry_timer::{EngineKind, HeapEngine, ListEngine, TimerEngine, TimerKey, WheelEngine};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::harness::{
    BenchDef, BenchError, Case, ChartKind, ChartY, MIN_REPS, PhaseSpec, Sample, Scale, ensure,
    verify_eq,
};

pub static BENCH: BenchDef = BenchDef {
    id: "sched",
    description: "N timers at random deadlines in 0-60 s added, then all deleted in insertion \
                  order (Asterisk); delete_random: the same state deleted in random order; list \
                  vs heap vs wheel; ratio = ours/list in ops/s = list time/our time",
    cases,
    charts: &[ChartKind::LogLog {
        x_param: "N",
        y: ChartY::MedianSeconds,
    }],
};

/// The deadlines span 0..60 s, in nanoseconds (the review: `ast_random() % 60000` ms).
pub(super) const DEADLINE_SPAN_NS: u64 = 60_000_000_000;

/// One row of the review's "Testing Done" tables: average time of N adds and of N deletes.
struct SeedRow {
    n: u64,
    list_add_s: f64,
    list_delete_s: f64,
    heap_add_s: f64,
    heap_delete_s: f64,
}

/// Asterisk review 160 (Core 2 Duo 2.33 GHz; each add includes a malloc and a mutex
/// lock/unlock, each delete a free and a lock/unlock).
const SEED: [SeedRow; 7] = [
    SeedRow {
        n: 100,
        list_add_s: 0.3e-3,
        list_delete_s: 0.034e-3,
        heap_add_s: 0.3e-3,
        heap_delete_s: 0.040e-3,
    },
    SeedRow {
        n: 500,
        list_add_s: 1.6e-3,
        list_delete_s: 0.19e-3,
        heap_add_s: 1.5e-3,
        heap_delete_s: 0.21e-3,
    },
    SeedRow {
        n: 1_000,
        list_add_s: 3.9e-3,
        list_delete_s: 0.38e-3,
        heap_add_s: 2.9e-3,
        heap_delete_s: 0.44e-3,
    },
    SeedRow {
        n: 5_000,
        list_add_s: 47.0e-3,
        list_delete_s: 1.8e-3,
        heap_add_s: 15.0e-3,
        heap_delete_s: 2.2e-3,
    },
    SeedRow {
        n: 10_000,
        list_add_s: 149.8e-3,
        list_delete_s: 3.4e-3,
        heap_add_s: 29.9e-3,
        heap_delete_s: 4.4e-3,
    },
    SeedRow {
        n: 100_000,
        list_add_s: 53.8,
        list_delete_s: 42.0e-3,
        heap_add_s: 0.278,
        heap_delete_s: 60.3e-3,
    },
    SeedRow {
        n: 1_000_000,
        list_add_s: 686.7,
        list_delete_s: 436.3e-3,
        heap_add_s: 2.7,
        heap_delete_s: 603.0e-3,
    },
];

/// The engines, in run order: the list first, so that its cap applies and the others can
/// name it as their peer.
const ENGINES: [EngineKind; 3] = [EngineKind::List, EngineKind::Heap, EngineKind::Wheel];

/// At or below this N a repetition is short and noisy: more repetitions are measured.
const SMALL_N: u64 = 10_000;
const SMALL_N_REPS: u32 = 15;

fn cases(scale: Scale) -> Vec<Case> {
    let sizes: Vec<u64> = scale.pick(
        vec![100, 500],
        SEED.iter()
            .map(|row| row.n)
            .filter(|&n| n <= 100_000)
            .collect(),
        SEED.iter().map(|row| row.n).collect(),
    );
    let list_budget = scale.pick(
        Duration::from_secs(1),
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    let list_cap = ListCap {
        budget: list_budget,
        largest_run: Rc::new(Cell::new(None)),
    };
    let mut cases = Vec::with_capacity(sizes.len() * ENGINES.len());
    for n in sizes {
        let seed = SEED.iter().find(|row| row.n == n);
        for kind in ENGINES {
            let (add_s, delete_s) = match (kind, seed) {
                (EngineKind::List, Some(row)) => (Some(row.list_add_s), Some(row.list_delete_s)),
                (EngineKind::Heap, Some(row)) => (Some(row.heap_add_s), Some(row.heap_delete_s)),
                _ => (None, None),
            };
            let mut add = PhaseSpec::ops("add");
            if let Some(seconds) = add_s {
                add = add.seed(n as f64 / seconds);
            }
            let mut delete = PhaseSpec::ops("delete");
            if let Some(seconds) = delete_s {
                delete = delete.seed(n as f64 / seconds);
            }
            let mut builder = Case::builder(format!("N={n}"))
                .impl_name(kind.name())
                .param("N", n)
                .phase(add)
                .phase(delete)
                .phase(PhaseSpec::ops("delete_random"))
                .reps(if n <= SMALL_N { SMALL_N_REPS } else { MIN_REPS });
            let case = if kind == EngineKind::List {
                builder = builder.budget(list_budget).cap_series("list");
                let cap = list_cap.clone();
                builder.runner(move || {
                    cap.admit(n)?;
                    let start = Instant::now();
                    let sample = run_engine(kind, n);
                    cap.record(n, start.elapsed());
                    sample
                })
            } else {
                builder
                    .peer(EngineKind::List.name())
                    .runner(move || run_engine(kind, n))
            };
            cases.push(case);
        }
    }
    cases
}

/// Skips list cases whose repetition would exceed the budget, predicted from the largest list
/// case already run (the list's repetition is O(N²)).
#[derive(Clone)]
struct ListCap {
    budget: Duration,
    /// (N, wall time of its latest repetition) of the largest list case run so far.
    largest_run: Rc<Cell<Option<(u64, Duration)>>>,
}

impl ListCap {
    fn admit(&self, n: u64) -> Result<(), BenchError> {
        let Some((ran_n, ran_wall)) = self.largest_run.get() else {
            return Ok(());
        };
        if n <= ran_n {
            return Ok(());
        }
        let factor = (n as f64 / ran_n as f64).powi(2);
        let predicted = ran_wall.as_secs_f64() * factor;
        if predicted <= self.budget.as_secs_f64() {
            return Ok(());
        }
        Err(BenchError::Skip(format!(
            "capped: the sorted list is O(N) per insert; one repetition is predicted to take \
             {predicted:.1} s ({:.3} s at N={ran_n} x (N/{ran_n})^2), over the budget of {} s",
            ran_wall.as_secs_f64(),
            self.budget.as_secs_f64()
        )))
    }

    fn record(&self, n: u64, wall: Duration) {
        if self.largest_run.get().is_none_or(|(ran_n, _)| n >= ran_n) {
            self.largest_run.set(Some((n, wall)));
        }
    }
}

/// One repetition on a fresh engine of `kind`.
fn run_engine(kind: EngineKind, n: u64) -> Result<Sample, BenchError> {
    let capacity = usize::try_from(n).map_err(|_| BenchError::Harness(format!("N={n}")))?;
    match kind {
        EngineKind::List => run_rep(n, || ListEngine::with_capacity(capacity), rebuild_list),
        EngineKind::Heap => run_rep(n, || HeapEngine::with_capacity(capacity), add_in_order),
        EngineKind::Wheel => run_rep(n, || WheelEngine::with_capacity(capacity), add_in_order),
    }
}

/// N deadlines uniform in 0..60 s (ns), the same for every engine and repetition at one N.
pub(super) fn random_deadlines(rng: &mut StdRng, count: usize) -> Vec<u64> {
    (0..count)
        .map(|_| rng.random_range(0..DEADLINE_SPAN_NS))
        .collect()
}

/// Builds the state the timed adds built: the i-th deadline with the value i.
type Rebuild<E> = fn(&mut E, &[u64]) -> Result<Vec<TimerKey>, BenchError>;

fn run_rep<E: TimerEngine<u64>>(
    n: u64,
    make: impl Fn() -> E,
    rebuild: Rebuild<E>,
) -> Result<Sample, BenchError> {
    let count = n as usize;
    let mut rng = StdRng::seed_from_u64(0x5C4E_D000 ^ n);
    let deadlines = random_deadlines(&mut rng, count);
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.shuffle(&mut rng);
    let mut engine = make();
    let mut keys: Vec<TimerKey> = Vec::with_capacity(count);

    let start = Instant::now();
    for (value, &deadline) in (0u64..).zip(&deadlines) {
        keys.push(engine.insert(deadline, value));
    }
    let add = start.elapsed();
    verify_eq("live timers after the adds", count, engine.len())?;

    let start = Instant::now();
    let (sum, wrong) = cancel_all(&mut engine, (0u64..).zip(&keys));
    let delete = start.elapsed();
    check_deleted(&engine, "insertion order", n, sum, wrong)?;
    drop(engine);

    // The random-order phase starts from the state the timed adds left: a fresh engine with
    // the same timers in the same slots.
    let mut engine = make();
    let keys_again = rebuild(&mut engine, &deadlines)?;
    verify_eq("live timers after the rebuild", count, engine.len())?;
    let moved = keys
        .iter()
        .zip(&keys_again)
        .filter(|(first, again)| first.slot() != again.slot())
        .count();
    verify_eq("timers in another slot after the rebuild", 0, moved)?;

    let start = Instant::now();
    let (sum, wrong) = cancel_all(
        &mut engine,
        order
            .iter()
            .map(|&value| (u64::from(value), &keys_again[value as usize])),
    );
    let delete_random = start.elapsed();
    check_deleted(&engine, "random order", n, sum, wrong)?;

    ensure_distinct(&keys, "the adds")?;
    ensure_distinct(&keys_again, "the rebuild")?;
    Ok(Sample::new()
        .phase("add", add, n)
        .phase("delete", delete, n)
        .phase("delete_random", delete_random, n))
}

/// The heap's and the wheel's rebuild: the timed adds again, untimed (O(N log N) or O(N)).
fn add_in_order<E: TimerEngine<u64>>(
    engine: &mut E,
    deadlines: &[u64],
) -> Result<Vec<TimerKey>, BenchError> {
    Ok((0u64..)
        .zip(deadlines)
        .map(|(value, &deadline)| engine.insert(deadline, value))
        .collect())
}

/// The list's rebuild in O(N log N) instead of the adds' O(N²) (36 s at N = 100k on a 2-core
/// EPYC VM): the same sorted list with every timer in the slot the timed adds gave it.
///
/// Inserting in descending deadline order makes each insert stop at the head. The slab hands
/// out freed slots last-freed first, so N placeholder timers (descending deadlines, O(1) each)
/// are cancelled in ascending deadline order of the timers that will take their slots; then
/// the timer of the i-th deadline, inserted in descending order, lands in slot i as it did in
/// the timed adds. (Timers with equal deadlines, which nanosecond deadlines practically never
/// produce, end up in reverse order among themselves; the caller checks every slot.)
fn rebuild_list(
    engine: &mut ListEngine<u64>,
    deadlines: &[u64],
) -> Result<Vec<TimerKey>, BenchError> {
    const PLACEHOLDER: u64 = u64::MAX;
    let placeholders: Vec<TimerKey> = (1..=deadlines.len() as u64)
        .rev()
        .map(|deadline| engine.insert(deadline, PLACEHOLDER))
        .collect();
    let mut by_deadline: Vec<u32> = (0..deadlines.len() as u32).collect();
    by_deadline.sort_unstable_by_key(|&i| (deadlines[i as usize], i));
    let mut missing = 0;
    for &i in &by_deadline {
        if engine.cancel(placeholders[i as usize]) != Some(PLACEHOLDER) {
            missing += 1;
        }
    }
    verify_eq("placeholders that did not cancel", 0, missing)?;
    let mut keyed: Vec<(u32, TimerKey)> = by_deadline
        .iter()
        .rev()
        .map(|&i| (i, engine.insert(deadlines[i as usize], u64::from(i))))
        .collect();
    keyed.sort_unstable_by_key(|&(i, _)| i);
    Ok(keyed.into_iter().map(|(_, key)| key).collect())
}

/// Cancels every `(expected value, key)`; returns the sum of the values handed back and how
/// many cancels returned nothing or another value.
#[inline]
fn cancel_all<'k, E: TimerEngine<u64>>(
    engine: &mut E,
    pairs: impl Iterator<Item = (u64, &'k TimerKey)>,
) -> (u64, u64) {
    let mut sum = 0u64;
    let mut wrong = 0u64;
    for (expected, &key) in pairs {
        match engine.cancel(key) {
            Some(value) => {
                sum += value;
                wrong += u64::from(value != expected);
            }
            None => wrong += 1,
        }
    }
    (sum, wrong)
}

fn check_deleted<E: TimerEngine<u64>>(
    engine: &E,
    order: &str,
    n: u64,
    sum: u64,
    wrong: u64,
) -> Result<(), BenchError> {
    verify_eq(
        &format!("cancels ({order}) that did not return their own value"),
        0,
        wrong,
    )?;
    verify_eq(
        &format!("sum of the cancelled values ({order})"),
        n * n.saturating_sub(1) / 2,
        sum,
    )?;
    verify_eq(
        &format!("live timers after the deletes ({order})"),
        0,
        engine.len(),
    )?;
    verify_eq(
        &format!("next deadline after the deletes ({order})"),
        None,
        engine.next_deadline(),
    )
}

/// Fails unless every key of `keys` is distinct.
pub(super) fn ensure_distinct(keys: &[TimerKey], what: &str) -> Result<(), BenchError> {
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    let duplicates = sorted.windows(2).filter(|pair| pair[0] == pair[1]).count();
    ensure(
        duplicates == 0,
        format!("{what} returned {duplicates} duplicate key(s)"),
    )
}

#[cfg(test)]
mod tests {
    use super::{ListCap, SEED};
    use crate::harness::BenchError;
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::Duration;

    #[test]
    fn list_cap_skips_only_predicted_overruns() {
        let cap = ListCap {
            budget: Duration::from_secs(1),
            largest_run: Rc::new(Cell::new(None)),
        };
        assert_eq!(
            cap.admit(1_000_000),
            Ok(()),
            "nothing run yet: no prediction"
        );
        cap.record(10_000, Duration::from_millis(200));
        assert_eq!(cap.admit(20_000), Ok(()), "0.8 s predicted");
        assert!(
            matches!(cap.admit(100_000), Err(BenchError::Skip(reason)) if reason.contains("20.0 s"))
        );
        cap.record(5_000, Duration::from_millis(1));
        assert!(
            cap.admit(100_000).is_err(),
            "a smaller case does not replace the largest run"
        );
    }

    #[test]
    fn seed_rows_are_the_review_table() {
        assert!(SEED.windows(2).all(|rows| rows[0].n < rows[1].n));
        let million = &SEED[6];
        assert_eq!(million.n, 1_000_000);
        assert!((million.n as f64 / million.list_add_s - 1_456.24).abs() < 0.01);
        assert!((million.n as f64 / million.heap_delete_s - 1_658_374.8).abs() < 0.1);
    }
}
