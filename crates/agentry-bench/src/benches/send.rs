//! `send` (SObjectizer 4.4 b3): one agent sends N messages to its own mbox; nobody handles
//! them. Measures the cost of a send alone.

use super::support::{Timings, env, run, setup};
use crate::harness::{BenchDef, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, DeregReason, UserError};
use std::time::Instant;

pub static BENCH: BenchDef = BenchDef {
    id: "send",
    description: "one agent sends N messages to its own mbox; nobody handles them",
    cases,
    charts: &[ChartKind::Bars],
};

/// The message (a small payload, as in the seed).
struct Msg(#[allow(dead_code)] u64);

struct Sender {
    n: u64,
    timings: Timings,
}

impl Agent for Sender {
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let me = ctx.mbox().clone();
        let start = Instant::now();
        for i in 0..self.n {
            me.send(Msg(i));
        }
        self.timings.record(start.elapsed());
        ctx.deregister_coop(DeregReason::Normal);
        Ok(())
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let n = scale.pick(1_000u64, 1_000_000, 10_000_000);
    vec![
        Case::builder(format!("one_thread N={n}"))
            .dispatcher("one_thread")
            .param("N", n)
            .phase(PhaseSpec::msgs("send").seed(390_376.0))
            .runner(move || {
                let env = env()?;
                let timings = Timings::default();
                env.handle()
                    .register_agent(Sender {
                        n,
                        timings: timings.clone(),
                    })
                    .map_err(setup("register"))?;
                let handle = run(env);
                let send = timings.take(1)?[0];
                verify_eq("messages left unhandled", n, handle.stats().unhandled)?;
                Ok(Sample::new().phase("send", send, n))
            }),
    ]
}
