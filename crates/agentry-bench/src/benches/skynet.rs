//! `skynet`: a 10-ary tree of child coops with 10^D leaf agents; leaves send their number,
//! parents sum and deregister their finished child coop; the root checks the total
//! (499,999,500,000 for D = 6). Wall time until the root has the sum, and peak RSS.

use super::support::{Tally, Timings, env, run, setup};
use crate::harness::{BenchDef, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, CoopId, Ctx, Define, DefineError, DeregReason, Mbox};
use std::sync::Arc;
use std::time::Instant;

pub static BENCH: BenchDef = BenchDef {
    id: "skynet",
    description: "10-ary tree of child coops, 10^D leaves send their number, parents sum",
    cases,
    charts: &[ChartKind::Bars],
};

struct Sum(u64);

struct Root {
    start: Instant,
    timings: Timings,
    total: Tally,
}

struct Node {
    depth: u32,
    num: u64,
    parent: Option<Mbox>,
    sum: u64,
    received: u32,
    children: Option<CoopId>,
    root: Arc<Root>,
}

impl Agent for Node {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Node::on_sum)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) {
        if self.depth == 0 {
            if let Some(parent) = &self.parent {
                parent.send(Sum(self.num));
            }
            return;
        }
        let mut coop = ctx.child_coop();
        for i in 0..10 {
            coop.add(Node {
                depth: self.depth - 1,
                num: self.num * 10 + i,
                parent: Some(ctx.mbox().clone()),
                sum: 0,
                received: 0,
                children: None,
                root: Arc::clone(&self.root),
            });
        }
        self.children = Some(
            ctx.register_coop(coop)
                .expect("invariant: the parent coop is alive"),
        );
    }
}

impl Node {
    fn on_sum(&mut self, ctx: &mut Ctx<Self>, Sum(v): Sum) {
        self.sum += v;
        self.received += 1;
        if self.received < 10 {
            return;
        }
        if let Some(children) = self.children.take() {
            let _ = ctx.env().deregister_coop(children, DeregReason::Normal);
        }
        match &self.parent {
            Some(parent) => parent.send(Sum(self.sum)),
            None => {
                self.root.timings.record(self.root.start.elapsed());
                self.root.total.set(self.sum);
                ctx.stop_env();
            }
        }
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let depth = scale.pick(2u32, 5, 6);
    let leaves = 10u64.pow(depth);
    let agents: u64 = (0..=depth).map(|d| 10u64.pow(d)).sum();
    vec![
        Case::builder(format!("one_thread leaves={leaves}"))
            .dispatcher("one_thread")
            .param("leaves", leaves)
            .param("agents", agents)
            .phase(PhaseSpec::agents("skynet"))
            .memory()
            .runner(move || {
                let env = env()?;
                let root = Arc::new(Root {
                    start: Instant::now(),
                    timings: Timings::default(),
                    total: Tally::default(),
                });
                let node = Node {
                    depth,
                    num: 0,
                    parent: None,
                    sum: 0,
                    received: 0,
                    children: None,
                    root: Arc::clone(&root),
                };
                env.handle()
                    .register_agent(node)
                    .map_err(setup("register the root"))?;
                run(env);
                let wall = root.timings.take(1)?[0];
                verify_eq(
                    "sum at the root",
                    leaves * (leaves - 1) / 2,
                    root.total.get(),
                )?;
                Ok(Sample::new().phase("skynet", wall, agents))
            }),
    ]
}
