//! `pingpong`: two agents bounce a message R times (2·R messages); reports the round-trip
//! time. Same thread: both on the default `one_thread` dispatcher.

use super::support::{Timings, env, run, setup};
use crate::harness::{BenchDef, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, Mbox};
use std::time::Instant;

pub static BENCH: BenchDef = BenchDef {
    id: "pingpong",
    description: "2 agents, R round trips; same thread",
    cases,
    charts: &[ChartKind::Bars],
};

struct Ping;
struct Pong;
struct Peer(Mbox);

struct Pinger {
    ponger: Mbox,
    left: u64,
    start: Option<Instant>,
    timings: Timings,
}

struct Ponger {
    pinger: Option<Mbox>,
}

impl Agent for Pinger {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Pinger, ctx: &mut Ctx<Pinger>, _: Pong| {
            p.left -= 1;
            if p.left == 0 {
                p.timings
                    .record(p.start.expect("invariant: set in on_start").elapsed());
                ctx.stop_env();
            } else {
                p.ponger.send(Ping);
            }
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) {
        self.ponger.send(Peer(ctx.mbox().clone()));
        self.start = Some(Instant::now());
        self.ponger.send(Ping);
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
    let rounds = scale.pick(1_000u64, 1_000_000, 10_000_000);
    vec![
        Case::builder(format!("one_thread same thread R={rounds}"))
            .dispatcher("one_thread")
            .param("R", rounds)
            .phase(PhaseSpec::msgs("pingpong"))
            .runner(move || {
                let env = env()?;
                let timings = Timings::default();
                let mut coop = env.handle().new_coop();
                let ponger = coop.add(Ponger { pinger: None });
                let pinger = coop.add(Pinger {
                    ponger: ponger.clone(),
                    left: rounds,
                    start: None,
                    timings: timings.clone(),
                });
                env.handle()
                    .register_coop(coop)
                    .map_err(setup("register"))?;
                run(env);
                let t = timings.take(1)?[0];
                verify_eq("pongs handled", rounds, pinger.stats().handled)?;
                verify_eq(
                    "pings handled (+1 Peer)",
                    rounds + 1,
                    ponger.stats().handled,
                )?;
                let rtt_ns = t.as_nanos() as f64 / rounds as f64;
                Ok(Sample::new()
                    .phase("pingpong", t, 2 * rounds)
                    .metric("rtt_ns", rtt_ns))
            }),
    ]
}
