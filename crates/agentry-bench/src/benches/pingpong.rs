//! `pingpong`: two agents bounce a message R times (2·R messages); reports the round-trip
//! time. Same thread: both on the default `one_thread` dispatcher; across 2 threads: each on
//! a `one_thread` dispatcher of its own, so every message crosses threads (and may wake one);
//! on a `thread_pool` of 2 threads, which should keep the two on one worker (affinity).

use super::support::{Finish, Placement, env, run, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, Mbox, UserError};
use std::sync::Arc;
use std::time::Duration;

pub static BENCH: BenchDef = BenchDef {
    id: "pingpong",
    description: "2 agents, R round trips; same thread and across 2 threads",
    cases,
    charts: &[ChartKind::Bars],
};

struct Ping;
struct Pong;
struct Peer(Mbox);

struct Pinger {
    ponger: Mbox,
    left: u64,
    finish: Arc<Finish>,
}

struct Ponger {
    pinger: Option<Mbox>,
}

impl Agent for Pinger {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Pinger, ctx: &mut Ctx<Pinger>, _: Pong| {
            p.left -= 1;
            if p.left > 0 {
                p.ponger.send(Ping);
            } else if p.finish.arrive() {
                ctx.stop_env();
            }
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.ponger.send(Peer(ctx.mbox().clone()));
        self.finish
            .start()
            .expect("invariant: only the pinger starts the clock, once");
        self.ponger.send(Ping);
        Ok(())
    }
}

impl Agent for Ponger {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Ponger, _: &mut Ctx<Ponger>, Peer(m): Peer| p.pinger = Some(m))?;
        def.on(|p: &mut Ponger, _: &mut Ctx<Ponger>, _: Ping| {
            p.pinger
                .as_ref()
                .expect("invariant: Peer arrives first")
                .send(Pong)
        })?;
        Ok(())
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let same = scale.pick(1_000u64, 1_000_000, 10_000_000);
    let across = scale.pick(1_000u64, 200_000, 1_000_000);
    vec![
        pingpong_case(
            format!("one_thread same thread R={same}"),
            Placement::OneThread,
            same,
        ),
        pingpong_case(
            format!("one_thread x2 across 2 threads R={across}"),
            Placement::Dispatchers(2),
            across,
        ),
        pingpong_case(
            format!("thread_pool T=2 R={same}"),
            Placement::ThreadPool(2),
            same,
        ),
    ]
}

fn pingpong_case(label: String, placement: Placement, rounds: u64) -> Case {
    Case::builder(label)
        .dispatcher(placement.label())
        .threads(placement.threads(2))
        .param("R", rounds)
        .phase(PhaseSpec::msgs("pingpong"))
        .runner(move || {
            let t = run_pingpong(rounds, placement)?;
            let rtt_ns = t.as_nanos() as f64 / rounds as f64;
            Ok(Sample::new()
                .phase("pingpong", t, 2 * rounds)
                .metric("rtt_ns", rtt_ns))
        })
}

/// Plays `rounds` round trips between a pinger (agent 0 of `placement`) and a ponger (agent
/// 1); returns the time from the first ping to the last pong.
pub(crate) fn run_pingpong(rounds: u64, placement: Placement) -> Result<Duration, BenchError> {
    let env = env()?;
    let binders = placement.binders(env.handle())?;
    let finish = Finish::new(1);
    let mut coop = env.handle().new_coop();
    let ponger = coop.add_with(Ponger { pinger: None }, binders.of(1, 2));
    let pinger = coop.add_with(
        Pinger {
            ponger: ponger.clone(),
            left: rounds,
            finish: Arc::clone(&finish),
        },
        binders.of(0, 2),
    );
    env.handle()
        .register_coop(coop)
        .map_err(setup("register"))?;
    run(env);
    let t = finish.elapsed()?;
    verify_eq("pongs handled", rounds, pinger.stats().handled)?;
    verify_eq(
        "pings handled (+1 Peer)",
        rounds + 1,
        ponger.stats().handled,
    )?;
    Ok(t)
}
