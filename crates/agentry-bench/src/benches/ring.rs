//! `ring` (SObjectizer 4.4 b3, after Haller & Odersky): a ring of N agents passes M tokens;
//! each token makes one full circle (N·M messages). Also reports the registration rate of
//! the N agents.
//!
//! Dispatchers, as in the seed: `one_thread` (N = 1k…100k, M = 100), `active_obj` (a thread
//! per agent, N = 100…1000, M = 50), `active_group` (N = 1k…100k, M = 100, 100 groups, each
//! a contiguous segment of the ring, so a token changes thread 100 times per circle), plus a
//! `thread_pool` of 2 threads (no seed figure). The M tokens start evenly spaced.

use super::support::{CpuClock, Finish, Placement, env, run, setup};
use crate::harness::{
    BenchDef, BenchError, Case, ChartKind, ChartY, PhaseSpec, Sample, Scale, verify_eq,
};
use agentry::{Agent, Ctx, Definition, Mbox};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub static BENCH: BenchDef = BenchDef {
    id: "ring",
    description: "ring of N agents, M tokens, each token makes a full circle (N*M messages)",
    cases,
    charts: &[ChartKind::LogLog {
        x_param: "N",
        y: ChartY::PerSec,
    }],
};

/// A token with the number of hops it still has to make.
struct Token(u32);
/// Closes the ring: the last member learns the first one's mbox.
struct Next(Mbox);

struct Member {
    next: Option<Mbox>,
    finish: Arc<Finish>,
}

// The definition is the type's (it takes no member), so it runs for the first members only
// (`Agent::DEFINITION`).
impl Agent for Member {
    const DEFINITION: Option<Definition<Self>> = Some(|def| {
        def.on(|m: &mut Member, _: &mut Ctx<Member>, Next(next): Next| m.next = Some(next))?;
        def.on(Member::on_token)?;
        Ok(())
    });
}

impl Member {
    fn on_token(&mut self, ctx: &mut Ctx<Self>, Token(left): Token) {
        if left > 1 {
            self.next
                .as_ref()
                .expect("invariant: the ring is closed before tokens run")
                .send(Token(left - 1));
        } else if self.finish.arrive() {
            ctx.stop_env();
        }
    }
}

/// (N, seed msgs/s of the ringing) per dispatcher, from the seed's tables.
const SEED_ONE_THREAD: [(u64, f64); 7] = [
    (1_000, 165_796.9),
    (2_000, 163_670.7),
    (5_000, 154_145.2),
    (10_000, 148_359.3),
    (20_000, 140_784.1),
    (50_000, 132_692.9),
    (100_000, 128_876.3),
];
const SEED_ACTIVE_OBJ: [(u64, f64); 4] = [
    (100, 148_292.7),
    (200, 125_581.2),
    (500, 131_177.2),
    (1_000, 125_204.9),
];
const SEED_ACTIVE_GROUP: [(u64, f64); 7] = [
    (1_000, 137_365.5),
    (2_000, 142_840.8),
    (5_000, 135_150.2),
    (10_000, 123_553.7),
    (20_000, 108_772.4),
    (50_000, 99_505.5),
    (100_000, 95_187.4),
];
/// Registration rate of the seed (one_thread).
const SEED_REGISTRATION: f64 = 17_000.0;
/// Groups of the `active_group` cases.
const GROUPS: u64 = 100;
/// Threads of the `thread_pool` cases.
const POOL_THREADS: usize = 2;

fn seed_sizes(seed: &[(u64, f64)]) -> Vec<u64> {
    seed.iter().map(|&(n, _)| n).collect()
}

fn cases(scale: Scale) -> Vec<Case> {
    let one_thread = scale.pick(
        vec![100],
        vec![1_000, 10_000, 100_000],
        seed_sizes(&SEED_ONE_THREAD),
    );
    let active_obj = scale.pick(vec![10], vec![100, 1_000], seed_sizes(&SEED_ACTIVE_OBJ));
    let active_group = scale.pick(
        vec![200],
        vec![1_000, 10_000],
        seed_sizes(&SEED_ACTIVE_GROUP),
    );
    let groups = scale.pick(4, GROUPS, GROUPS);
    let pool = scale.pick(vec![100], vec![1_000, 10_000], seed_sizes(&SEED_ONE_THREAD));
    let mut cases = Vec::new();
    let mut add = |placement: Placement, sizes: Vec<u64>, m: u64, seed: &[(u64, f64)]| {
        for n in sizes {
            cases.push(ring_case(placement, n, m, seed));
        }
    };
    add(Placement::OneThread, one_thread, 100, &SEED_ONE_THREAD);
    add(Placement::ActiveObj, active_obj, 50, &SEED_ACTIVE_OBJ);
    add(
        Placement::ActiveGroup(groups),
        active_group,
        100,
        &SEED_ACTIVE_GROUP,
    );
    add(Placement::ThreadPool(POOL_THREADS), pool, 100, &[]);
    cases
}

fn ring_case(placement: Placement, n: u64, m: u64, seed: &[(u64, f64)]) -> Case {
    let mut ring = PhaseSpec::msgs("ring");
    if let Some(&(_, seed)) = seed.iter().find(|&&(seed_n, _)| seed_n == n) {
        ring = ring.seed(seed);
    }
    let mut registration = PhaseSpec::agents("registration");
    if placement == Placement::OneThread {
        registration = registration.seed(SEED_REGISTRATION);
    }
    let label = match placement {
        Placement::ActiveGroup(groups) => format!("active_group N={n} M={m} G={groups}"),
        Placement::ThreadPool(threads) => format!("thread_pool T={threads} N={n} M={m}"),
        _ => format!("{} N={n} M={m}", placement.label()),
    };
    let mut builder = Case::builder(label)
        .dispatcher(placement.label())
        .threads(placement.threads(n))
        .param("N", n)
        .param("M", m);
    match placement {
        Placement::ActiveGroup(groups) => builder = builder.param("G", groups),
        Placement::ThreadPool(threads) => builder = builder.param("T", threads as u64),
        _ => {}
    }
    builder.phase(registration).phase(ring).runner(move || {
        let run = run_ring(n, m, placement)?;
        Ok(Sample::new()
            .phase("registration", run.registration, n)
            .phase("ring", run.ring, n * m))
    })
}

/// The times of one ring.
pub(crate) struct RingRun {
    /// Registering the N agents (with their dispatchers' threads, if any).
    pub(crate) registration: Duration,
    /// From the first token's injection to the last token's last hop.
    pub(crate) ring: Duration,
    /// The process's CPU time over the same window, if measured.
    pub(crate) ring_cpu: Option<Duration>,
}

/// Runs a ring of `n` agents placed by `placement` with `m` tokens, and verifies it.
pub(crate) fn run_ring(n: u64, m: u64, placement: Placement) -> Result<RingRun, BenchError> {
    run_ring_in(env()?, n, m, placement, CpuClock::default())
}

/// [`run_ring`] in the environment `env` (built with other settings: `observability`, which
/// also measures the ring's CPU time with `cpu`).
pub(crate) fn run_ring_in(
    env: agentry::Env,
    n: u64,
    m: u64,
    placement: Placement,
    cpu: CpuClock,
) -> Result<RingRun, BenchError> {
    let finish = Finish::with_cpu(m, cpu.clone());
    let registration = Instant::now();
    let binders = placement.binders(env.handle())?;
    let mut coop = env.handle().new_coop();
    // Built back to front so that each member knows its successor; the last one learns the
    // first through `Next`.
    let mut members = Vec::with_capacity(n as usize);
    let mut next: Option<Mbox> = None;
    for i in (0..n).rev() {
        let member = Member {
            next: next.take(),
            finish: Arc::clone(&finish),
        };
        let mbox = coop.add_with(member, binders.of(i, n));
        next = Some(mbox.clone());
        members.push(mbox);
    }
    members.reverse();
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the ring"))?;
    let registration = registration.elapsed();
    members[n as usize - 1].send(Next(members[0].clone()));
    finish.start()?;
    let hops = u32::try_from(n).map_err(setup("ring size"))?;
    for j in 0..m {
        members[(j * n / m) as usize].send(Token(hops));
    }
    let handle = run(env);
    let ring = finish.elapsed()?;
    let handled: u64 = members.iter().map(|mb| mb.stats().handled).sum();
    verify_eq("messages handled (N*M tokens + 1 Next)", n * m + 1, handled)?;
    verify_eq("unhandled messages", 0, handle.stats().unhandled)?;
    Ok(RingRun {
        registration,
        ring,
        ring_cpu: cpu.used()?,
    })
}
