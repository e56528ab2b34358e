//! `send_process` (SObjectizer 4.4 b3): one agent sends N messages to itself, then handles
//! them all. Measures send and dispatch separately.

use super::support::{CpuClock, SendThenProcess, Tally, env, run, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, UserError};

pub static BENCH: BenchDef = BenchDef {
    id: "send_process",
    description: "one agent sends N messages to itself, then handles them all",
    cases,
    charts: &[ChartKind::Bars],
};

struct Msg(u64);

struct SelfSender {
    n: u64,
    handled: u64,
    sum: Tally,
    clock: SendThenProcess,
}

impl Agent for SelfSender {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(SelfSender::on_msg)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let me = ctx.mbox().clone();
        let n = self.n;
        self.clock.send(|| {
            for i in 0..n {
                me.send(Msg(i));
            }
        });
        Ok(())
    }
}

impl SelfSender {
    fn on_msg(&mut self, ctx: &mut Ctx<Self>, Msg(i): Msg) {
        self.handled += 1;
        self.sum.add(i);
        if self.handled == self.n {
            self.clock.processed();
            ctx.deregister_coop(DeregReason::Normal);
        }
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let n = scale.pick(1_000u64, 1_000_000, 10_000_000);
    vec![
        Case::builder(format!("one_thread N={n}"))
            .dispatcher("one_thread")
            .param("N", n)
            .phase(PhaseSpec::msgs("send").seed(242_570.0))
            .phase(PhaseSpec::msgs("process").seed(485_593.0))
            .runner(move || run_send_process(env()?, n, CpuClock::default())),
    ]
}

/// One agent of `env` sends itself `n` messages, then handles them; verified. Also run by
/// `observability` with metrics on, which measures the processing's CPU time with `cpu` too
/// (phase `process cpu`).
pub(crate) fn run_send_process(env: Env, n: u64, cpu: CpuClock) -> Result<Sample, BenchError> {
    let clock = SendThenProcess::with_cpu(cpu.clone());
    let sum = Tally::default();
    let agent = SelfSender {
        n,
        handled: 0,
        sum: sum.clone(),
        clock: clock.clone(),
    };
    env.handle()
        .register_agent(agent)
        .map_err(setup("register"))?;
    let handle = run(env);
    let (send, process) = clock.take()?;
    verify_eq("sum of handled payloads", n * (n - 1) / 2, sum.get())?;
    verify_eq("unhandled messages", 0, handle.stats().unhandled)?;
    let sample = Sample::new()
        .phase("send", send, n)
        .phase("process", process, n);
    Ok(match cpu.used()? {
        Some(used) => sample.phase("process cpu", used, n),
        None => sample,
    })
}
