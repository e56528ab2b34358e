//! `spawn`: one parent starts N agents from a handler with `Ctx::spawn` (an acceptor starting
//! one agent per connection, a hub one per device); each child sends its number to the
//! parent and stops itself, so its coop ends with it. Time from the parent's start until
//! every child has finished and the environment has stopped; verifies the sum of the numbers
//! and the count of finished children. On the default `one_thread` dispatcher and on a
//! `thread_pool` of 2 threads (the children run where the parent runs).

use super::support::{Placement, Tally, env, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, Mbox, UserError};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub static BENCH: BenchDef = BenchDef {
    id: "spawn",
    description: "one parent spawns N agents that report and stop themselves (Ctx::spawn)",
    cases,
    charts: &[ChartKind::Bars],
};

struct Number(u64);

struct Parent {
    children: u64,
    sum: Tally,
    finished: Arc<AtomicU64>,
}

impl Agent for Parent {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Parent, _: &mut Ctx<Parent>, Number(n)| p.sum.add(n))?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        for number in 0..self.children {
            ctx.spawn(Child {
                number,
                parent: ctx.mbox().clone(),
                children: self.children,
                finished: Arc::clone(&self.finished),
            })?;
        }
        Ok(())
    }
}

struct Child {
    number: u64,
    parent: Mbox,
    children: u64,
    finished: Arc<AtomicU64>,
}

impl Agent for Child {
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.parent.send(Number(self.number));
        ctx.stop_self();
        Ok(())
    }

    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        if self.finished.fetch_add(1, Ordering::AcqRel) + 1 == self.children {
            ctx.stop_env();
        }
    }
}

/// Threads of the `thread_pool` case.
const POOL_THREADS: usize = 2;

fn cases(scale: Scale) -> Vec<Case> {
    let children = scale.pick(1_000u64, 100_000, 1_000_000);
    [Placement::OneThread, Placement::ThreadPool(POOL_THREADS)]
        .into_iter()
        .map(|placement| {
            let label = match placement {
                Placement::ThreadPool(threads) => format!("thread_pool T={threads} N={children}"),
                _ => format!("{} N={children}", placement.label()),
            };
            Case::builder(label)
                .dispatcher(placement.label())
                .threads(placement.threads(children))
                .param("children", children)
                .phase(PhaseSpec::agents("spawn"))
                .memory()
                .runner(move || {
                    let start = Instant::now();
                    run_spawn(children, placement)?;
                    Ok(Sample::new().phase("spawn", start.elapsed(), children))
                })
        })
        .collect()
}

/// Runs one parent with `children` children until they have all finished; verifies what the
/// parent received.
fn run_spawn(children: u64, placement: Placement) -> Result<(), BenchError> {
    let env = env()?;
    let binder = placement.binders(env.handle())?.of(0, 1).clone();
    let sum = Tally::default();
    let finished = Arc::new(AtomicU64::new(0));
    let mut coop = env.handle().new_coop();
    coop.add_with(
        Parent {
            children,
            sum: sum.clone(),
            finished: Arc::clone(&finished),
        },
        &binder,
    );
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the parent"))?;
    env.run();
    verify_eq(
        "children finished",
        children,
        finished.load(Ordering::Acquire),
    )?;
    verify_eq(
        "sum at the parent",
        children * (children - 1) / 2,
        sum.get(),
    )
}
