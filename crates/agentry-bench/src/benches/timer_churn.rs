//! `timer_churn`: a live population of timers that are mostly cancelled before they fire
//! (request deadlines, idle timeouts). Each operation cancels a random live timer and adds a
//! new one; the figure is the time of one such pair at a constant population.
//!
//! # Workload, exactly
//!
//! One repetition, per population P and engine (`heap` and `wheel`; the sorted `list` only at
//! P = 1e3, where its O(P) insert is still affordable):
//! 1. untimed: an empty engine with room for P timers (`with_capacity(P)`), filled with P
//!    timers at deadlines uniform in 0..60 s (ns, seeded RNG); a `Vec` of the live keys;
//! 2. untimed warm-up churn: 3·P pairs as in step 4, so that about 95 % of the live timers
//!    have been replaced once. A freshly filled engine is unrealistically cache-friendly: its
//!    timers sit in the slab in insertion order, and the heap's array positions (and the
//!    wheel's slot lists) follow that order too, so a random cancel touches few cache lines.
//!    Churn scatters them; without the warm-up the heap's figure depends on K (at P = 1e6,
//!    K = 1e6 on a 2-core EPYC VM: about 430 ns per pair from a fresh fill, about 550 ns after
//!    the warm-up; no difference was measurable at P <= 1e5, nor for the wheel);
//! 3. untimed: K random indices in 0..P and K new deadlines, drawn in advance so that the RNG
//!    is not timed;
//! 4. phase `cancel_add` (K units, one unit = one pair): K times, take the live key at the next
//!    random index out of the `Vec` (`swap_remove`), cancel it, insert a new timer at the next
//!    deadline and push its key. No time passes (nothing expires), so the population stays P.
//!
//! # Checks
//!
//! Every cancel returned the value inserted with its key; afterwards the engine holds exactly
//! P timers, and draining it returns exactly the keys and values the `Vec` still holds; the
//! values cancelled plus those drained sum to the sum of every value inserted.
//!
//! # Ratios
//!
//! Wheel (and list) cases name the heap of the same P as their peer: the `ratio` column is
//! ours / heap in pairs per second.

use std::time::Instant;

use agentry_timer::{EngineKind, HeapEngine, ListEngine, TimerEngine, TimerKey, WheelEngine};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::sched::{DEADLINE_SPAN_NS, ensure_distinct, random_deadlines};
use crate::harness::{
    BenchDef, BenchError, Case, ChartKind, ChartY, PhaseSpec, Sample, Scale, verify_eq,
};

pub static BENCH: BenchDef = BenchDef {
    id: "timer_churn",
    description: "live population of P timers at random deadlines, churned 3P times untimed; \
                  then K times: cancel a random live timer + add a new one at a random \
                  deadline; ns per pair; heap vs wheel (list at P=1e3)",
    cases,
    charts: &[ChartKind::LogLog {
        x_param: "population",
        y: ChartY::NsPerUnit,
    }],
};

/// Untimed churn before the timed one, in pairs per live timer (step 2 of the module docs):
/// a timer survives it unreplaced with probability e^-3, about 5 %.
const WARMUP_ROUNDS: u64 = 3;

/// The sorted list only runs at populations up to this one.
const LIST_MAX_POPULATION: u64 = 1_000;

fn cases(scale: Scale) -> Vec<Case> {
    let populations: Vec<u64> = scale.pick(
        vec![1_000],
        vec![1_000, 10_000, 100_000],
        vec![1_000, 10_000, 100_000, 1_000_000],
    );
    let k: u64 = scale.pick(1_000, 200_000, 1_000_000);
    let mut cases = Vec::new();
    for population in populations {
        for kind in [EngineKind::Heap, EngineKind::Wheel, EngineKind::List] {
            if kind == EngineKind::List && population > LIST_MAX_POPULATION {
                continue;
            }
            let mut builder = Case::builder(format!("population={population} K={k}"))
                .impl_name(kind.name())
                .param("population", population)
                .param("K", k)
                .phase(PhaseSpec::ops("cancel_add"));
            if kind != EngineKind::Heap {
                builder = builder.peer(EngineKind::Heap.name());
            }
            cases.push(builder.runner(move || run_engine(kind, population, k)));
        }
    }
    cases
}

/// One repetition on a fresh engine of `kind`.
fn run_engine(kind: EngineKind, population: u64, k: u64) -> Result<Sample, BenchError> {
    let capacity = usize::try_from(population)
        .map_err(|_| BenchError::Harness(format!("population={population}")))?;
    match kind {
        EngineKind::List => run_rep(ListEngine::with_capacity(capacity), population, k),
        EngineKind::Heap => run_rep(HeapEngine::with_capacity(capacity), population, k),
        EngineKind::Wheel => run_rep(WheelEngine::with_capacity(capacity), population, k),
    }
}

fn run_rep<E: TimerEngine<u64>>(
    mut engine: E,
    population: u64,
    k: u64,
) -> Result<Sample, BenchError> {
    let (count, ops) = (population as usize, k as usize);
    let mut rng = StdRng::seed_from_u64(0xC4A2_0000 ^ population);
    let mut live: Vec<(TimerKey, u64)> = Vec::with_capacity(count);
    for (value, deadline) in (0u64..).zip(random_deadlines(&mut rng, count)) {
        live.push((engine.insert(deadline, value), value));
    }
    let warm_ops = population * WARMUP_ROUNDS;
    let mut churn = Churn {
        live,
        next_value: population,
        cancelled_sum: 0,
        wrong: 0,
    };
    for _ in 0..warm_ops {
        let pick = rng.random_range(0..population as u32);
        let deadline = rng.random_range(0..DEADLINE_SPAN_NS);
        churn.pair(&mut engine, pick, deadline);
    }
    let picks: Vec<u32> = (0..ops)
        .map(|_| rng.random_range(0..population as u32))
        .collect();
    let deadlines = random_deadlines(&mut rng, ops);

    let start = Instant::now();
    churn.run(&mut engine, &picks, &deadlines);
    let elapsed = start.elapsed();

    let Churn {
        mut live,
        cancelled_sum,
        wrong,
        next_value,
    } = churn;
    verify_eq("cancels that did not return their own value", 0, wrong)?;
    verify_eq("live timers after the churn", count, engine.len())?;
    let keys: Vec<TimerKey> = live.iter().map(|&(key, _)| key).collect();
    ensure_distinct(&keys, "the live keys")?;
    let mut drained = Vec::with_capacity(count);
    engine.drain(&mut drained);
    drained.sort_unstable();
    live.sort_unstable();
    verify_eq(
        "the drained timers are the live keys and values",
        true,
        drained == live,
    )?;
    let inserted = population + warm_ops + k;
    verify_eq("values inserted", inserted, next_value)?;
    let drained_sum: u64 = drained.iter().map(|&(_, value)| value).sum();
    verify_eq(
        "values cancelled + values drained",
        inserted * (inserted - 1) / 2,
        cancelled_sum + drained_sum,
    )?;
    Ok(Sample::new().phase("cancel_add", elapsed, k))
}

/// The live timers (key and value) and the tallies the checks need.
struct Churn {
    live: Vec<(TimerKey, u64)>,
    /// The value of the next timer inserted (values are 0, 1, 2, ... in insertion order).
    next_value: u64,
    cancelled_sum: u64,
    /// Cancels that returned nothing or another timer's value.
    wrong: u64,
}

impl Churn {
    /// One pair: cancel the live timer at index `pick`, add one at `deadline`.
    #[inline]
    fn pair<E: TimerEngine<u64>>(&mut self, engine: &mut E, pick: u32, deadline: u64) {
        let (key, expected) = self.live.swap_remove(pick as usize);
        match engine.cancel(key) {
            Some(got) => {
                self.cancelled_sum += got;
                self.wrong += u64::from(got != expected);
            }
            None => self.wrong += 1,
        }
        let value = self.next_value;
        self.next_value += 1;
        self.live.push((engine.insert(deadline, value), value));
    }

    fn run<E: TimerEngine<u64>>(&mut self, engine: &mut E, picks: &[u32], deadlines: &[u64]) {
        for (&pick, &deadline) in picks.iter().zip(deadlines) {
            self.pair(engine, pick, deadline);
        }
    }
}
