//! `timer_accuracy`: T periodic timers of period P (10,000 × 10 ms) run for D on the system
//! clock and one agent stamps every tick; reports how late the ticks arrived — p50, p99 and
//! max — with the indexed heap and with the hierarchical wheel (1 ms tick).
//!
//! Lateness of the k-th tick (k = 1, 2, …) of timer i is `now − (created_i + k·P)`, where
//! `created_i` is read just before `send_periodic` (so the service's own deadline is never
//! earlier) and `now` is read in the handler: it is the whole path — the timer thread's wake-up,
//! the engine, the send, the dispatcher's queue — not the engine alone. Periodic timers are
//! fixed-rate, so lateness does not accumulate over the run.
//!
//! The benchmark verifies: no tick arrived before its deadline; no timer ticked more often than
//! its deadlines due by the moment it was cancelled; every timer ticked; and once every handle
//! is cancelled no timer is left in the environment.

use super::support::setup;
use crate::harness::{
    BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, ensure, verify_eq,
};
use agentry::timer::EngineKind;
use agentry::{Agent, Ctx, Define, DefineError, Env};
use std::time::{Duration, Instant};

pub static BENCH: BenchDef = BenchDef {
    id: "timer_accuracy",
    description: "T periodic timers of 10 ms on the system clock for a few seconds; lateness of \
                  each tick as the handler sees it: p50 / p99 / max (heap vs wheel)",
    cases,
    charts: &[ChartKind::Bars],
};

const PERIOD: Duration = Duration::from_millis(10);

/// The deadline of a request to the stamper for its report.
const REPORT_DEADLINE: Duration = Duration::from_secs(30);

fn cases(scale: Scale) -> Vec<Case> {
    // The seed load (10,000 timers: a million ticks a second, fired by one timer thread)
    // and a light one (1,000), which shows the wake-up latency alone.
    let populations = scale.pick(vec![100], vec![1_000, 10_000], vec![1_000, 10_000]);
    let run_for = scale.pick(
        Duration::from_millis(200),
        Duration::from_millis(500),
        Duration::from_secs(3),
    );
    let mut cases = Vec::new();
    for timers in populations {
        for (engine, name) in [(EngineKind::Heap, "heap"), (EngineKind::Wheel, "wheel")] {
            cases.push(
                Case::builder(format!(
                    "{timers} timers x {} ms for {} ms",
                    PERIOD.as_millis(),
                    run_for.as_millis()
                ))
                .impl_name(name)
                .dispatcher("one_thread")
                .threads(1)
                .param("timers", timers as u64)
                .param("period_ms", PERIOD.as_millis() as u64)
                .param("run_ms", run_for.as_millis() as u64)
                .phase(PhaseSpec::msgs("ticks"))
                .runner(move || run(engine, timers, run_for)),
            );
        }
    }
    cases
}

/// One tick of timer `index`, created at `created`.
#[derive(Clone, Copy)]
struct Tick {
    index: u32,
    created: Instant,
}

/// Asks the stamper for what it saw.
struct Collect;

/// What the stamper saw: ticks per timer, the lateness of each tick, ticks that came early.
struct Seen {
    ticks: Vec<u32>,
    lateness: Vec<Duration>,
    early: u64,
}

struct Stamper {
    seen: Seen,
}

impl Agent for Stamper {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Stamper, _: &mut Ctx<Stamper>, t: Tick| s.stamp(t))?;
        def.on_request(|s: &mut Stamper, _: &mut Ctx<Stamper>, Collect| {
            std::mem::replace(
                &mut s.seen,
                Seen {
                    ticks: Vec::new(),
                    lateness: Vec::new(),
                    early: 0,
                },
            )
        })?;
        Ok(())
    }
}

impl Stamper {
    fn stamp(&mut self, Tick { index, created }: Tick) {
        let now = Instant::now();
        let ticks = &mut self.seen.ticks[index as usize];
        *ticks += 1;
        let deadline = created + PERIOD * *ticks;
        match now.checked_duration_since(deadline) {
            Some(late) => self.seen.lateness.push(late),
            None => self.seen.early += 1,
        }
    }
}

fn run(engine: EngineKind, timers: usize, run_for: Duration) -> Result<Sample, BenchError> {
    let env = Env::builder()
        .timer_engine(engine)
        .build()
        .map_err(setup("build the environment"))?;
    let handle = env.handle().clone();
    let per_run = (run_for.as_millis() / PERIOD.as_millis()) as usize + 1;
    let stamper = handle
        .register_agent(Stamper {
            seen: Seen {
                ticks: vec![0; timers],
                lateness: Vec::with_capacity(timers * per_run),
                early: 0,
            },
        })
        .map_err(setup("register the stamper"))?;
    let runner = std::thread::spawn(move || env.run());

    let started = Instant::now();
    let mut running = Vec::with_capacity(timers);
    for index in 0..timers {
        let created = Instant::now();
        let tick = Tick {
            index: index as u32,
            created,
        };
        let timer = handle.send_periodic(&stamper, PERIOD, PERIOD, tick);
        running.push((timer, created));
    }
    std::thread::sleep(run_for.saturating_sub(started.elapsed()));
    // Once `cancel` returns, the timer's messages are never handled (the cancel guarantee):
    // what it can have ticked is bounded by the deadlines due by then.
    let due: Vec<u32> = running
        .into_iter()
        .map(|(timer, created)| {
            timer.cancel();
            (created.elapsed().as_nanos() / PERIOD.as_nanos()) as u32
        })
        .collect();
    let elapsed = started.elapsed();
    let seen = stamper
        .request::<Collect, Seen>(Collect, REPORT_DEADLINE)
        .map_err(setup("collect the stamps"))?;
    let left = handle.stats().timers;
    handle.stop();
    runner
        .join()
        .map_err(|_| BenchError::Harness("the environment thread panicked".into()))?;

    verify_eq("ticks before their deadline", 0, seen.early)?;
    verify_eq("timers left after every cancel", 0, left)?;
    for (index, (&ticked, &due)) in seen.ticks.iter().zip(&due).enumerate() {
        ensure(
            ticked >= 1,
            format!("timer {index} never ticked in {run_for:?}"),
        )?;
        ensure(
            ticked <= due,
            format!("timer {index} ticked {ticked} times, only {due} deadlines were due"),
        )?;
    }
    let total: u64 = seen.ticks.iter().map(|&t| u64::from(t)).sum();
    verify_eq(
        "ticks stamped",
        total,
        seen.lateness.len() as u64 + seen.early,
    )?;

    let mut lateness = seen.lateness;
    lateness.sort_unstable();
    let micros = |q: f64| {
        let at = ((lateness.len() as f64 - 1.0) * q).round() as usize;
        lateness.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    // The phase counts the nominal ticks (every timer, every period of the run) so that the
    // unit count is the same in every repetition; the ticks stamped are a metric.
    let nominal = (timers as u64) * (run_for.as_nanos() / PERIOD.as_nanos()) as u64;
    Ok(Sample::new()
        .phase("ticks", elapsed, nominal)
        .metric("ticks_stamped", total as f64)
        .metric("late_p50_us", micros(0.50))
        .metric("late_p99_us", micros(0.99))
        .metric("late_max_us", micros(1.0)))
}
