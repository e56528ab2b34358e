//! `ring` (SObjectizer 4.4 b3, after Haller & Odersky): a ring of N agents passes M tokens;
//! each token makes one full circle (N·M messages). Also reports the registration rate of
//! the N agents.

use super::support::{Timings, env, run, setup};
use crate::harness::{BenchDef, Case, ChartKind, ChartY, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, Mbox};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

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

struct Shared {
    start: OnceLock<Instant>,
    finished_tokens: AtomicU64,
    tokens: u64,
    timings: Timings,
}

struct Member {
    next: Option<Mbox>,
    shared: Arc<Shared>,
}

impl Agent for Member {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|m: &mut Member, _: &mut Ctx<Member>, Next(next): Next| m.next = Some(next))?;
        def.on(Member::on_token)?;
        Ok(())
    }
}

impl Member {
    fn on_token(&mut self, ctx: &mut Ctx<Self>, Token(left): Token) {
        if left > 1 {
            self.next
                .as_ref()
                .expect("invariant: the ring is closed before tokens run")
                .send(Token(left - 1));
            return;
        }
        let s = &self.shared;
        if s.finished_tokens.fetch_add(1, Ordering::Relaxed) + 1 == s.tokens {
            s.timings.record(
                s.start
                    .get()
                    .expect("invariant: set before injection")
                    .elapsed(),
            );
            ctx.stop_env();
        }
    }
}

/// (N, seed msgs/s of the ringing, one_thread).
const SEED: [(u64, f64); 7] = [
    (1_000, 165_796.9),
    (2_000, 163_670.7),
    (5_000, 154_145.2),
    (10_000, 148_359.3),
    (20_000, 140_784.1),
    (50_000, 132_692.9),
    (100_000, 128_876.3),
];
/// Registration rate of the seed (one_thread).
const SEED_REGISTRATION: f64 = 17_000.0;
const TOKENS: u64 = 100;

fn cases(scale: Scale) -> Vec<Case> {
    let sizes: Vec<u64> = scale.pick(
        vec![100],
        vec![1_000, 10_000, 100_000],
        SEED.iter().map(|&(n, _)| n).collect(),
    );
    sizes
        .into_iter()
        .map(|n| {
            let mut ring = PhaseSpec::msgs("ring");
            if let Some(&(_, seed)) = SEED.iter().find(|&&(seed_n, _)| seed_n == n) {
                ring = ring.seed(seed);
            }
            Case::builder(format!("one_thread N={n} M={TOKENS}"))
                .dispatcher("one_thread")
                .param("N", n)
                .param("M", TOKENS)
                .phase(PhaseSpec::agents("registration").seed(SEED_REGISTRATION))
                .phase(ring)
                .runner(move || run_ring(n, TOKENS))
        })
        .collect()
}

fn run_ring(n: u64, m: u64) -> Result<Sample, crate::harness::BenchError> {
    let env = env()?;
    let shared = Arc::new(Shared {
        start: OnceLock::new(),
        finished_tokens: AtomicU64::new(0),
        tokens: m,
        timings: Timings::default(),
    });
    let registration = Instant::now();
    let mut coop = env.handle().new_coop();
    // Built back to front so that each member knows its successor; the last one learns the
    // first through `Next`.
    let mut members = Vec::with_capacity(n as usize);
    let mut next: Option<Mbox> = None;
    for _ in 0..n {
        let mbox = coop.add(Member {
            next: next.take(),
            shared: Arc::clone(&shared),
        });
        next = Some(mbox.clone());
        members.push(mbox);
    }
    members.reverse();
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the ring"))?;
    let registration = registration.elapsed();
    members[n as usize - 1].send(Next(members[0].clone()));
    shared
        .start
        .set(Instant::now())
        .map_err(|_| setup::<&str>("start")("set twice"))?;
    for j in 0..m {
        members[(j * n / m) as usize].send(Token(n as u32));
    }
    let handle = run(env);
    let ring = shared.timings.take(1)?[0];
    verify_eq(
        "tokens that completed a circle",
        m,
        shared.finished_tokens.load(Ordering::Relaxed),
    )?;
    let handled: u64 = members.iter().map(|mb| mb.stats().handled).sum();
    verify_eq("messages handled (N*M tokens + 1 Next)", n * m + 1, handled)?;
    verify_eq("unhandled messages", 0, handle.stats().unhandled)?;
    Ok(Sample::new()
        .phase("registration", registration, n)
        .phase("ring", ring, n * m))
}
