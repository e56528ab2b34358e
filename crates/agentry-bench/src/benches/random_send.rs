//! `random_send` (SObjectizer 4.4 b3): N agents are registered; M sends go to uniformly random
//! agents among them. Measures how the number of registered agents affects a send.

use super::support::{Tally, Timings, env, run, setup};
use crate::harness::{BenchDef, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, Mbox, UserError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

pub static BENCH: BenchDef = BenchDef {
    id: "random_send",
    description: "N agents registered; M sends, each to a uniformly random one of them",
    cases,
    charts: &[ChartKind::Bars],
};

struct Hit;

struct Target {
    hits: u64,
    total: Tally,
}

impl Agent for Target {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|t: &mut Target, _: &mut Ctx<Target>, _: Hit| t.hits += 1)?;
        Ok(())
    }

    fn on_finish(&mut self, _ctx: &mut Ctx<Self>) {
        self.total.add(self.hits);
    }
}

/// Sends the M messages from the targets' own dispatcher thread, then stops the environment
/// (the hits are queued before the finish demands, so all are handled).
struct Driver {
    targets: Vec<Mbox>,
    picks: Vec<u32>,
    timings: Timings,
}

impl Agent for Driver {
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let start = Instant::now();
        for &p in &self.picks {
            self.targets[p as usize].send(Hit);
        }
        self.timings.record(start.elapsed());
        ctx.stop_env();
        Ok(())
    }
}

/// (N, M, seed msgs/s) — the cells of the seed's table.
const SEED: [(u64, u64, f64); 6] = [
    (10_000, 5_000, 160_282.0),
    (20_000, 5_000, 107_308.2),
    (20_000, 10_000, 128_205.0),
    (100_000, 5_000, 118_289.6),
    (100_000, 10_000, 109_317.84),
    (100_000, 20_000, 114_299.8),
];

fn cases(scale: Scale) -> Vec<Case> {
    // The seed sizes are small enough for the quick run too.
    let smoke = [(1_000, 500, 0.0)];
    let cells: &[(u64, u64, f64)] = scale.pick(&smoke[..], &SEED[..], &SEED[..]);
    cells
        .iter()
        .map(|&(n, m, seed)| {
            Case::builder(format!("one_thread N={n} M={m}"))
                .dispatcher("one_thread")
                .param("N", n)
                .param("M", m)
                .phase(if seed > 0.0 {
                    PhaseSpec::msgs("send").seed(seed)
                } else {
                    PhaseSpec::msgs("send")
                })
                .runner(move || {
                    let env = env()?;
                    let timings = Timings::default();
                    let total = Tally::default();
                    let mut coop = env.handle().new_coop();
                    let targets: Vec<Mbox> = (0..n)
                        .map(|_| {
                            coop.add(Target {
                                hits: 0,
                                total: total.clone(),
                            })
                        })
                        .collect();
                    env.handle()
                        .register_coop(coop)
                        .map_err(setup("register targets"))?;
                    let mut rng = StdRng::seed_from_u64(n ^ m);
                    let picks = (0..m).map(|_| rng.random_range(0..n as u32)).collect();
                    let driver = Driver {
                        targets,
                        picks,
                        timings: timings.clone(),
                    };
                    env.handle()
                        .register_agent(driver)
                        .map_err(setup("register driver"))?;
                    run(env);
                    let t = timings.take(1)?;
                    verify_eq("messages handled by the targets", m, total.get())?;
                    Ok(Sample::new().phase("send", t[0], m))
                })
        })
        .collect()
}
