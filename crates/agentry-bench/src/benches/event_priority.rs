//! `event_priority`: `send_process` with event priorities. One agent sends N messages to
//! itself — every k-th of a type subscribed at `P7`, the others at the default `P0` — then
//! handles them all. Measures what sorting by event priority costs against the same workload
//! with no raised message (0 %), and checks the order: every raised message is handled before
//! every normal one (all were queued before the first ran), each kind in send order.

use super::support::{Placement, SendThenProcess, Tally, env, run, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Mbox, Priority, UserError};

pub static BENCH: BenchDef = BenchDef {
    id: "event_priority",
    description: "send_process where every k-th message has a raised event priority: cost and order",
    cases,
    charts: &[ChartKind::Bars],
};

/// A message at the default priority.
struct Normal(u64);
/// A message subscribed at `P7`.
struct Urgent(u64);

struct Prioritizer {
    n: u64,
    /// Every `every`-th message is urgent (0: none).
    every: u64,
    handled: u64,
    normals: u64,
    /// Messages handled out of the promised order (must stay 0).
    out_of_order: Tally,
    next_normal: u64,
    next_urgent: u64,
    sum: Tally,
    clock: SendThenProcess,
}

impl Agent for Prioritizer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.event_priority::<Urgent>(Priority::P7)?
            .on(Prioritizer::on_normal)?
            .on(Prioritizer::on_urgent)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let me: Mbox = ctx.mbox().clone();
        let (n, every) = (self.n, self.every);
        self.clock.send(|| {
            for i in 0..n {
                if every != 0 && i % every == 0 {
                    me.send(Urgent(i));
                } else {
                    me.send(Normal(i));
                }
            }
        });
        Ok(())
    }
}

impl Prioritizer {
    fn on_normal(&mut self, ctx: &mut Ctx<Self>, Normal(i): Normal) {
        // Send order within the kind: the next normal number after `next_normal`.
        if i < self.next_normal {
            self.out_of_order.add(1);
        }
        self.next_normal = i + 1;
        self.normals += 1;
        self.count(ctx, i);
    }

    fn on_urgent(&mut self, ctx: &mut Ctx<Self>, Urgent(i): Urgent) {
        // Every urgent message comes before every normal one, in send order.
        if self.normals > 0 || i < self.next_urgent {
            self.out_of_order.add(1);
        }
        self.next_urgent = i + 1;
        self.count(ctx, i);
    }

    fn count(&mut self, ctx: &mut Ctx<Self>, i: u64) {
        self.handled += 1;
        self.sum.add(i);
        if self.handled == self.n {
            self.clock.processed();
            ctx.deregister_coop(DeregReason::Normal);
        }
    }
}

fn case(placement: Placement, n: u64, percent: u64) -> Case {
    let every = 100u64.checked_div(percent).unwrap_or(0);
    Case::builder(format!("{} N={n} raised={percent}%", placement.label()))
        .dispatcher(placement.label())
        .param("N", n)
        .param("raised_percent", percent)
        .phase(PhaseSpec::msgs("send"))
        .phase(PhaseSpec::msgs("process"))
        .runner(move || {
            let env = env()?;
            let clock = SendThenProcess::default();
            let sum = Tally::default();
            let out_of_order = Tally::default();
            let agent = Prioritizer {
                n,
                every,
                handled: 0,
                normals: 0,
                out_of_order: out_of_order.clone(),
                next_normal: 0,
                next_urgent: 0,
                sum: sum.clone(),
                clock: clock.clone(),
            };
            let binders = placement.binders(env.handle())?;
            let mut coop = env.handle().new_coop();
            coop.add_with(agent, binders.of(0, 1));
            env.handle()
                .register_coop(coop)
                .map_err(setup("register"))?;
            let handle = run(env);
            let (send, process) = clock.take()?;
            verify_eq("sum of handled payloads", n * (n - 1) / 2, sum.get())?;
            verify_eq("messages out of priority order", 0, out_of_order.get())?;
            verify_eq("unhandled messages", 0, handle.stats().unhandled)?;
            Ok::<_, BenchError>(
                Sample::new()
                    .phase("send", send, n)
                    .phase("process", process, n),
            )
        })
}

fn cases(scale: Scale) -> Vec<Case> {
    let n = scale.pick(1_000u64, 1_000_000, 10_000_000);
    let mut cases = Vec::new();
    for placement in [Placement::OneThread, Placement::ThreadPool(1)] {
        for percent in [0, 1, 10, 50] {
            cases.push(case(placement, n, percent));
        }
    }
    cases
}
