//! `skynet`: a 10-ary tree of child coops with 10^D leaf agents; leaves send their number,
//! parents sum and deregister their finished child coop; the root checks the total
//! (499,999,500,000 for D = 6). Wall time until the root has the sum, and peak RSS. On the
//! default `one_thread` dispatcher, and on a `thread_pool` of 2 threads (every coop of the
//! tree bound to the pool). Two shapes: a node registers its ten children as one child coop
//! (`coops`), or starts each with `Ctx::spawn` and every node stops itself once it has
//! reported (`spawn`, the shape of the classic Go and Erlang versions).

use super::support::{Finish, Placement, Tally, env, run, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, CoopId, Ctx, Definition, DeregReason, Mbox, UserError};
use std::sync::Arc;
use std::time::Duration;

pub static BENCH: BenchDef = BenchDef {
    id: "skynet",
    description: "10-ary tree of child coops, 10^D leaves send their number, parents sum",
    cases,
    charts: &[ChartKind::Bars],
};

struct Sum(u64);

struct Root {
    finish: Arc<Finish>,
    total: Tally,
}

struct Node {
    depth: u32,
    num: u64,
    parent: Option<Mbox>,
    sum: u64,
    received: u32,
    children: Option<CoopId>,
    shape: Shape,
    root: Arc<Root>,
}

/// How a node starts its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One child coop of ten agents, deregistered by the node once it has their sums.
    Coops,
    /// Ten `Ctx::spawn`s; each node stops itself once it has sent its sum.
    Spawn,
}

// The definition is the type's (it takes no node), so it runs for the first nodes only
// (`Agent::DEFINITION`).
impl Agent for Node {
    const DEFINITION: Option<Definition<Self>> = Some(|def| {
        def.on(Node::on_sum)?;
        Ok(())
    });

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        if self.depth == 0 {
            if let Some(parent) = &self.parent {
                parent.send(Sum(self.num));
            }
            if self.shape == Shape::Spawn {
                ctx.stop_self();
            }
            return Ok(());
        }
        let child = |i| Node {
            depth: self.depth - 1,
            num: self.num * 10 + i,
            parent: Some(ctx.mbox().clone()),
            sum: 0,
            received: 0,
            children: None,
            shape: self.shape,
            root: Arc::clone(&self.root),
        };
        // Children run on this node's dispatcher (`Ctx::child_coop`, `Ctx::spawn`).
        match self.shape {
            Shape::Coops => {
                let mut coop = ctx.child_coop();
                for i in 0..10 {
                    coop.add(child(i));
                }
                self.children = Some(
                    ctx.register_coop(coop)
                        .expect("invariant: the parent coop is alive"),
                );
            }
            Shape::Spawn => {
                for i in 0..10 {
                    ctx.spawn(child(i))
                        .expect("invariant: the parent coop is alive");
                }
            }
        }
        Ok(())
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
            Some(parent) => {
                parent.send(Sum(self.sum));
                if self.shape == Shape::Spawn {
                    ctx.stop_self();
                }
            }
            None => {
                self.root.total.set(self.sum);
                if self.root.finish.arrive() {
                    ctx.stop_env();
                }
            }
        }
    }
}

/// Threads of the `thread_pool` case.
const POOL_THREADS: usize = 2;

fn cases(scale: Scale) -> Vec<Case> {
    let depth = scale.pick(2u32, 5, 6);
    [Shape::Coops, Shape::Spawn]
        .into_iter()
        .flat_map(|shape| {
            [Placement::OneThread, Placement::ThreadPool(POOL_THREADS)]
                .into_iter()
                .map(move |placement| skynet_case(placement, depth, shape))
        })
        .collect()
}

fn skynet_case(placement: Placement, depth: u32, shape: Shape) -> Case {
    let leaves = 10u64.pow(depth);
    let agents = skynet_agents(depth);
    let shape_label = match shape {
        Shape::Coops => "",
        Shape::Spawn => " spawn",
    };
    let label = match placement {
        Placement::ThreadPool(threads) => {
            format!("thread_pool T={threads}{shape_label} leaves={leaves}")
        }
        _ => format!("{}{shape_label} leaves={leaves}", placement.label()),
    };
    Case::builder(label)
        .dispatcher(placement.label())
        .threads(placement.threads(agents))
        .param("leaves", leaves)
        .param("agents", agents)
        .phase(PhaseSpec::agents("skynet"))
        .memory()
        .runner(move || {
            let wall = run_skynet(depth, placement, shape)?;
            Ok(Sample::new().phase("skynet", wall, agents))
        })
}

/// Agents of a tree of depth `depth`: 1 + 10 + … + 10^depth.
pub(crate) fn skynet_agents(depth: u32) -> u64 {
    (0..=depth).map(|d| 10u64.pow(d)).sum()
}

/// Runs the tree of depth `depth` with every coop bound by `placement`; returns the time from
/// the root's registration until it has the sum, which it verifies.
pub(crate) fn run_skynet(
    depth: u32,
    placement: Placement,
    shape: Shape,
) -> Result<Duration, BenchError> {
    let env = env()?;
    let binder = placement.binders(env.handle())?.of(0, 1).clone();
    let root = Arc::new(Root {
        finish: Finish::new(1),
        total: Tally::default(),
    });
    let node = Node {
        depth,
        num: 0,
        parent: None,
        sum: 0,
        received: 0,
        children: None,
        shape,
        root: Arc::clone(&root),
    };
    let mut coop = env.handle().new_coop();
    coop.add_with(node, &binder);
    root.finish.start()?;
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the root"))?;
    run(env);
    let wall = root.finish.elapsed()?;
    let leaves = 10u64.pow(depth);
    verify_eq(
        "sum at the root",
        leaves * (leaves - 1) / 2,
        root.total.get(),
    )?;
    Ok(wall)
}
