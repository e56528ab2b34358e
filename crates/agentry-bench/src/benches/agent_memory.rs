//! `agent_memory`: the memory an idle agent costs — N agents with an empty mailbox and one
//! handler are registered and started; the process's resident set grows by
//! `bytes_per_agent × N` (target ≤ 256 bytes, on `one_thread`). The same agents on a thread
//! pool of 2 threads show what the pool adds: each agent has a queue of its own there.
//!
//! The growth is measured as resident-set size, after the harness has set the allocator to keep
//! freed memory (see `harness::allocator`), so it counts every byte the runtime touched for the
//! agents: the agent value, its shared part (what mboxes point to), its slab slot and handler
//! table. Agents' cells (and pool agents' queues) live in agentry's store of agent memory,
//! which keeps the blocks an earlier repetition freed: the free bytes of the store the agents
//! took (`EnvStats::agent_memory_idle` before less after) are added to the growth, so a
//! repetition that reuses them counts them as one that touches new pages does. The benchmark
//! verifies that every agent started and that each still answers.
//!
//! A second phase times the environment's shutdown with the N agents in it: from `stop` until
//! `run` has returned — every agent finished and gone (target ≤ 0.5 s for 10^6 agents).

use super::support::{Placement, Tally, env, setup};
use crate::harness::rss::current_rss_bytes;
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, UserError};
use std::time::{Duration, Instant};

pub static BENCH: BenchDef = BenchDef {
    id: "agent_memory",
    description: "resident memory per idle agent (empty mailbox, one handler); target <= 256 B",
    cases,
    charts: &[ChartKind::Bars],
};

/// The one message an idle agent handles.
struct Poke;

struct Idle {
    started: Tally,
    answered: Tally,
}

impl Agent for Idle {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Idle, _: &mut Ctx<Idle>, Poke| a.answered.add(1))?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.started.add(1);
        Ok(())
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let n = scale.pick(1_000u64, 100_000, 1_000_000);
    [Placement::OneThread, Placement::ThreadPool(2)]
        .into_iter()
        .map(|placement| {
            let label = placement.label();
            Case::builder(format!("{label} N={n}"))
                .dispatcher(label)
                .param("N", n)
                .phase(PhaseSpec::agents("registration"))
                .phase(PhaseSpec::agents("shutdown"))
                .memory()
                .reps(3)
                .runner(move || run_idle_agents(n, placement))
        })
        .collect()
}

fn run_idle_agents(n: u64, placement: Placement) -> Result<Sample, BenchError> {
    let env = env()?;
    let handle = env.handle().clone();
    // The dispatcher is made before the first reading: its threads are not the agents' cost.
    let binders = placement.binders(&handle)?;
    let started = Tally::default();
    let answered = Tally::default();
    let rss_unreadable = |e: std::io::Error| BenchError::Harness(format!("RSS: {e}"));
    let before = current_rss_bytes().map_err(rss_unreadable)?;
    let idle_before = handle.stats().agent_memory_idle;

    let registration = Instant::now();
    let mut coop = handle.new_coop();
    coop.set_binder(binders.of(0, n));
    let mboxes: Vec<_> = (0..n)
        .map(|_| {
            coop.add(Idle {
                started: started.clone(),
                answered: answered.clone(),
            })
        })
        .collect();
    handle.register_coop(coop).map_err(setup("register"))?;
    let runner = std::thread::spawn(move || env.run());
    wait_for(&started, n)?;
    let registration = registration.elapsed();
    let after = current_rss_bytes().map_err(rss_unreadable)?;
    let reused = idle_before.saturating_sub(handle.stats().agent_memory_idle);
    // The mboxes the runner holds are part of what a user holds; they are counted.
    let per_agent = (after.saturating_sub(before) + reused) as f64 / n as f64;

    for mbox in &mboxes {
        mbox.send(Poke);
    }
    wait_for(&answered, n)?;
    let shutdown = Instant::now();
    handle.stop();
    let stats = runner
        .join()
        .map_err(|_| BenchError::Harness("the environment thread panicked".into()))?;
    let shutdown = shutdown.elapsed();
    verify_eq("agents left after shutdown", 0, stats.agents as u64)?;
    verify_eq("agents started", n, started.get())?;
    verify_eq("pokes answered", n, answered.get())?;
    verify_eq("unhandled messages", 0, stats.unhandled)?;
    Ok(Sample::new()
        .phase("registration", registration, n)
        .phase("shutdown", shutdown, n)
        .metric("bytes_per_agent", per_agent))
}

/// Waits until `tally` reaches `n` (the agents' worker runs concurrently); fails after a
/// generous deadline rather than hanging.
fn wait_for(tally: &Tally, n: u64) -> Result<(), BenchError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while tally.get() < n {
        if Instant::now() > deadline {
            return Err(BenchError::Verify(format!(
                "only {} of {n} agents reacted within 60 s",
                tally.get()
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}
