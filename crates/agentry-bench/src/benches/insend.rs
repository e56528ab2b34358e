//! `insend` (SObjectizer 4.4 b3): as `send_process`, but the handler is an insend handler —
//! it runs inside `send`, on the sender's thread.

use super::support::{Timings, env, run, setup};
use crate::harness::{BenchDef, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, InsendCtx, UserError};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub static BENCH: BenchDef = BenchDef {
    id: "insend",
    description: "one agent sends N messages to itself; an insend handler handles each inside send",
    cases,
    charts: &[ChartKind::Bars],
};

struct Msg(u64);

struct InsendAgent {
    n: u64,
    sum: Arc<AtomicU64>,
    timings: Timings,
}

impl Agent for InsendAgent {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let sum = Arc::clone(&self.sum);
        def.insend(move |_: &InsendCtx<'_>, Msg(i): Msg| {
            // The only state an insend handler may touch is state it shares safely.
            sum.fetch_add(i, Ordering::Relaxed);
        })?;
        Ok(())
    }

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
            .phase(PhaseSpec::msgs("send+handle").seed(200_239.0))
            .runner(move || {
                let env = env()?;
                let timings = Timings::default();
                let sum = Arc::new(AtomicU64::new(0));
                let agent = InsendAgent {
                    n,
                    sum: Arc::clone(&sum),
                    timings: timings.clone(),
                };
                let mbox = env
                    .handle()
                    .register_agent(agent)
                    .map_err(setup("register"))?;
                run(env);
                let t = timings.take(1)?;
                verify_eq(
                    "sum of handled payloads",
                    n * (n - 1) / 2,
                    sum.load(Ordering::Relaxed),
                )?;
                verify_eq("insend handler calls", n, mbox.stats().insend_handled)?;
                Ok(Sample::new().phase("send+handle", t[0], n))
            }),
    ]
}
