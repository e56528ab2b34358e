//! `savina`: two programs of the Savina suite (Imam & Sarkar, AGERE! 2014), on `one_thread`
//! and on a `thread_pool` of 2 threads — the pool against the single thread where one agent
//! feeds another (`counting`) and where the work spreads over many agents (`fjthroughput`).
//!
//! - `counting`: a producer sends N increments to a counter, then asks it for its count
//!   (a `Retrieve` carrying its own mbox); the counter answers, the producer checks N.
//! - `fjthroughput` (fork-join throughput): one sender sends N messages to each of K
//!   workers, round robin; each worker does a small computation per message (Savina's
//!   `performComputation`, a sine sum here) and reports when it has had its N.
//!
//! Savina's defaults: counting N = 1,000,000; fjthroughput K = 60, N = 10,000.

use super::support::{Finish, Placement, Tally, env, run, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, Mbox, UserError};
use std::sync::Arc;
use std::time::Duration;

pub static BENCH: BenchDef = BenchDef {
    id: "savina",
    description: "Savina counting (1 producer -> 1 counter) and fjthroughput (1 -> K workers), one_thread vs a 2-thread pool",
    cases,
    charts: &[ChartKind::Bars],
};

/// Threads of the `thread_pool` cases.
const POOL_THREADS: usize = 2;

fn cases(scale: Scale) -> Vec<Case> {
    let counting = scale.pick(1_000u64, 1_000_000, 1_000_000);
    let (workers, per_worker) = scale.pick((4u64, 100u64), (60, 10_000), (60, 10_000));
    let placements = [Placement::OneThread, Placement::ThreadPool(POOL_THREADS)];
    let mut cases = Vec::new();
    for placement in placements {
        cases.push(
            Case::builder(format!("counting {} N={counting}", label(placement)))
                .dispatcher(placement.label())
                .threads(placement.threads(2))
                .param("N", counting)
                .phase(PhaseSpec::msgs("counting"))
                .runner(move || {
                    let t = run_counting(counting, placement)?;
                    Ok(Sample::new().phase("counting", t, counting + 2))
                }),
        );
    }
    for placement in placements {
        cases.push(
            Case::builder(format!(
                "fjthroughput {} K={workers} N={per_worker}",
                label(placement)
            ))
            .dispatcher(placement.label())
            .threads(placement.threads(workers + 1))
            .param("K", workers)
            .param("N", per_worker)
            .phase(PhaseSpec::msgs("fjthroughput"))
            .runner(move || {
                let t = run_fork_join(workers, per_worker, placement)?;
                Ok(Sample::new().phase("fjthroughput", t, workers * per_worker))
            }),
        );
    }
    cases
}

fn label(placement: Placement) -> String {
    match placement {
        Placement::ThreadPool(threads) => format!("thread_pool T={threads}"),
        other => other.label().to_owned(),
    }
}

/// `counting`: one increment.
struct Increment;
/// `counting`: the producer asks for the count.
struct Retrieve(Mbox);
/// `counting`: the counter's answer.
struct Count(u64);

struct Producer {
    counter: Mbox,
    increments: u64,
    finish: Arc<Finish>,
    counted: Tally,
}

impl Agent for Producer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |p: &mut Producer, ctx: &mut Ctx<Producer>, Count(n): Count| {
                p.counted.set(n);
                if p.finish.arrive() {
                    ctx.stop_env();
                }
            },
        )?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.finish
            .start()
            .expect("invariant: only the producer starts the clock, once");
        for _ in 0..self.increments {
            self.counter.send(Increment);
        }
        self.counter.send(Retrieve(ctx.mbox().clone()));
        Ok(())
    }
}

struct Counter(u64);

impl Agent for Counter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Counter, _: &mut Ctx<Counter>, _: Increment| c.0 += 1)?;
        def.on(
            |c: &mut Counter, _: &mut Ctx<Counter>, Retrieve(to): Retrieve| {
                to.send(Count(c.0));
            },
        )?;
        Ok(())
    }
}

/// Savina `counting` with `increments` increments, the producer agent 0 and the counter
/// agent 1 of `placement`; the time from the producer's start to the answer, after checking
/// the count.
pub(crate) fn run_counting(increments: u64, placement: Placement) -> Result<Duration, BenchError> {
    let env = env()?;
    let binders = placement.binders(env.handle())?;
    let finish = Finish::new(1);
    let counted = Tally::default();
    let mut coop = env.handle().new_coop();
    let counter = coop.add_with(Counter(0), binders.of(1, 2));
    coop.add_with(
        Producer {
            counter,
            increments,
            finish: Arc::clone(&finish),
            counted: counted.clone(),
        },
        binders.of(0, 2),
    );
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the producer and the counter"))?;
    run(env);
    let t = finish.elapsed()?;
    verify_eq("increments counted", increments, counted.get())?;
    Ok(t)
}

/// `fjthroughput`: one message to a worker.
struct Work;

struct ForkJoinWorker {
    expected: u64,
    handled: u64,
    /// What the computations add up to (kept, so the work is not optimised away).
    acc: f64,
    finish: Arc<Finish>,
    sums: Tally,
}

impl Agent for ForkJoinWorker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(ForkJoinWorker::on_work)?;
        Ok(())
    }
}

impl ForkJoinWorker {
    fn on_work(&mut self, ctx: &mut Ctx<Self>, _: Work) {
        self.acc += perform_computation(self.handled as f64);
        self.handled += 1;
        if self.handled == self.expected {
            std::hint::black_box(self.acc);
            self.sums.add(self.handled);
            if self.finish.arrive() {
                ctx.stop_env();
            }
        }
    }
}

/// Savina's per-message work in `fjthroughput`: a short sine sum.
fn perform_computation(theta: f64) -> f64 {
    let sint = theta.sin();
    (0..4).fold(0.0, |acc, i| acc + (sint * sint + f64::from(i)).sqrt())
}

struct ForkJoinSender {
    workers: Vec<Mbox>,
    per_worker: u64,
    finish: Arc<Finish>,
}

impl Agent for ForkJoinSender {
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.finish
            .start()
            .expect("invariant: only the sender starts the clock, once");
        for _ in 0..self.per_worker {
            for worker in &self.workers {
                worker.send(Work);
            }
        }
        Ok(())
    }
}

/// Savina `fjthroughput`: agent 0 of `placement` sends `per_worker` messages to each of
/// `workers` agents (1…K), round robin; the time from its start to the last worker's last
/// message, after checking every worker had its share.
pub(crate) fn run_fork_join(
    workers: u64,
    per_worker: u64,
    placement: Placement,
) -> Result<Duration, BenchError> {
    let env = env()?;
    let binders = placement.binders(env.handle())?;
    let finish = Finish::new(workers);
    let sums = Tally::default();
    let agents = workers + 1;
    let mut coop = env.handle().new_coop();
    let mboxes = (1..agents)
        .map(|i| {
            coop.add_with(
                ForkJoinWorker {
                    expected: per_worker,
                    handled: 0,
                    acc: 0.0,
                    finish: Arc::clone(&finish),
                    sums: sums.clone(),
                },
                binders.of(i, agents),
            )
        })
        .collect();
    coop.add_with(
        ForkJoinSender {
            workers: mboxes,
            per_worker,
            finish: Arc::clone(&finish),
        },
        binders.of(0, agents),
    );
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the fork-join agents"))?;
    run(env);
    let t = finish.elapsed()?;
    verify_eq("messages handled", workers * per_worker, sums.get())?;
    Ok(t)
}
