//! `ttl` (the CSO message-speed test): K objects, P messages each carrying a TTL; a handler
//! receiving TTL > 1 sends TTL − 1 to a uniformly random object (a per-agent xorshift seeded
//! from the agent's index); the run ends when every message has died, after P·TTL handled
//! messages. K = P = 1024, TTL = 65536 (quick: 4096); threads 1 … 2 × cores.
//!
//! The seed's variants, mapped onto agentry ([`Variant`]):
//! 1. *one object with its own queue*: one agent per thread, each on a `one_thread`
//!    dispatcher of its own, owns the entries of K/T objects; sending to object k sends to
//!    the agent owning it (k mod T), which updates k's entry.
//! 2. *many objects addressed by id*: K agents over T `one_thread` dispatchers (agent k on
//!    dispatcher k mod T), addressed by index through a `Vec<Mbox>`.
//! 3. *(2) with the one-message-per-object guarantee*: K agents on a `thread_pool` of T
//!    threads, which never runs one agent on two threads at once.
//! 4. *objects on an epoll loop woken through eventfd, without the guarantee*: one agent per
//!    io thread of an `agentry-net` io dispatcher owns the entries of K/T objects (as 1, on
//!    io threads).
//! 5. *(4) with the guarantee*: K agents bound round-robin to the T io threads.
//!
//! Variants 4 and 5 are [`crate::workloads::io_ttl`] (the workload and its check that P·TTL
//! messages were handled live there); the io threads block in `epoll_wait` at once (no spin),
//! as the seed's eventfd processor does.

use super::support::{Finish, Placement, Tally, env, run, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use crate::workloads::io_ttl::{self, TtlSpec};
use crate::xorshift::XorShift;
use agentry::{Agent, Ctx, Define, DefineError, Mbox};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub static BENCH: BenchDef = BenchDef {
    id: "ttl",
    description: "K objects, P messages with a TTL; each hop goes to a random object (P*TTL messages)",
    cases,
    charts: &[ChartKind::ThreadScaling],
};

/// The variants of the seed (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// 1: one agent per thread owning object entries.
    OneObject,
    /// 2: one agent per object on T `one_thread` dispatchers.
    ById,
    /// 3: one agent per object on a `thread_pool` of T threads.
    ByIdOneAtATime,
    /// 4: one agent per io thread owning object entries, woken through eventfd.
    Eventfd,
    /// 5: one agent per object on the io threads, woken through eventfd.
    EventfdOneAtATime,
}

/// How a variant runs on T threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    /// Variants 1–3: agents on agentry's dispatchers.
    Agents(Layout),
    /// Variants 4 and 5: [`io_ttl`] on an io dispatcher.
    Io(io_ttl::Variant),
}

impl Variant {
    const ALL: [Variant; 5] = [
        Self::OneObject,
        Self::ById,
        Self::ByIdOneAtATime,
        Self::Eventfd,
        Self::EventfdOneAtATime,
    ];

    fn number(self) -> u64 {
        match self {
            Self::OneObject => 1,
            Self::ById => 2,
            Self::ByIdOneAtATime => 3,
            Self::Eventfd => 4,
            Self::EventfdOneAtATime => 5,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::OneObject => "own-queue object",
            Self::ById => "by id",
            Self::ByIdOneAtATime => "by id, one at a time",
            Self::Eventfd => "eventfd objects",
            Self::EventfdOneAtATime => "eventfd objects, one at a time",
        }
    }

    fn engine(self, threads: usize) -> Engine {
        match self {
            Self::OneObject => Engine::Agents(Layout::Owners(threads)),
            Self::ById => Engine::Agents(Layout::Objects(Placement::Dispatchers(threads))),
            Self::ByIdOneAtATime => Engine::Agents(Layout::Objects(Placement::ThreadPool(threads))),
            Self::Eventfd => Engine::Io(io_ttl::Variant::V4),
            Self::EventfdOneAtATime => Engine::Io(io_ttl::Variant::V5),
        }
    }
}

/// The most one repetition of variant 4 or 5 may take before it counts as failed.
const IO_RUN_LIMIT: Duration = Duration::from_secs(600);

/// How the K objects become agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Variant 1: this many owner agents, each on a `one_thread` dispatcher of its own.
    Owners(usize),
    /// Variants 2 and 3 (and the peer comparison): one agent per object, placed so.
    Objects(Placement),
}

/// The fixed parameters of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TtlParams {
    /// K: objects.
    pub(crate) objects: u64,
    /// P: messages injected.
    pub(crate) messages: u64,
    /// The TTL each message starts with.
    pub(crate) ttl: u32,
}

impl TtlParams {
    /// The seed's parameters at `scale`.
    pub(crate) fn at(scale: Scale) -> Self {
        Self {
            objects: scale.pick(16, 1024, 1024),
            messages: scale.pick(16, 1024, 1024),
            ttl: scale.pick(16, 4096, 65_536),
        }
    }

    /// Messages handled by a run: P·TTL.
    pub(crate) fn handled(self) -> u64 {
        self.messages * u64::from(self.ttl)
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let params = TtlParams::at(scale);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let max_threads = scale.pick(2, 2 * cores, 2 * cores);
    let mut cases = Vec::new();
    for variant in Variant::ALL {
        for threads in 1..=max_threads {
            let engine = variant.engine(threads);
            let dispatcher = match engine {
                Engine::Agents(Layout::Owners(_)) => "one_thread",
                Engine::Agents(Layout::Objects(placement)) => placement.label(),
                Engine::Io(_) => "io (eventfd)",
            };
            let TtlParams {
                objects,
                messages,
                ttl,
            } = params;
            cases.push(
                Case::builder(format!(
                    "v{} {} T={threads} K={objects} P={messages} TTL={ttl}",
                    variant.number(),
                    variant.name()
                ))
                .dispatcher(dispatcher)
                .threads(threads)
                .param("variant", variant.number())
                .param("K", objects)
                .param("P", messages)
                .param("TTL", u64::from(ttl))
                .phase(PhaseSpec::msgs("ttl"))
                .runner(move || {
                    let t = match engine {
                        Engine::Agents(layout) => run_ttl(params, layout)?,
                        Engine::Io(variant) => run_io(params, variant, threads)?,
                    };
                    Ok(Sample::new().phase("ttl", t, params.handled()))
                }),
            );
        }
    }
    cases
}

/// One hop of a message (variants 2 and 3): the TTL it arrives with.
struct Hop(u32);

/// An object as an agent (variants 2 and 3).
struct Object {
    rng: XorShift,
    /// Every object's mbox by index, set before registration.
    objects: Arc<OnceLock<Vec<Mbox>>>,
    finish: Arc<Finish>,
}

impl Agent for Object {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Object::on_hop)?;
        Ok(())
    }
}

impl Object {
    fn on_hop(&mut self, ctx: &mut Ctx<Self>, Hop(ttl): Hop) {
        if ttl > 1 {
            let objects = self
                .objects
                .get()
                .expect("invariant: set before registration");
            let to = self.rng.below(objects.len() as u64) as usize;
            objects[to].send(Hop(ttl - 1));
        } else if self.finish.arrive() {
            ctx.stop_env();
        }
    }
}

/// One hop of a message to an object entry (variant 1).
struct EntryHop {
    object: u64,
    ttl: u32,
}

/// An agent owning the entries of every object `k` with `k % owners == index` (variant 1).
struct Owner {
    rng: XorShift,
    /// Hops handled per owned object (entry `k / owners`).
    entries: Vec<u64>,
    objects: u64,
    /// Every owner's mbox by index, set before registration.
    owners: Arc<OnceLock<Vec<Mbox>>>,
    finish: Arc<Finish>,
    /// Receives the sum of the entries when the agent finishes.
    total: Tally,
}

impl Agent for Owner {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Owner::on_hop)?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.total.add(self.entries.iter().sum());
    }
}

impl Owner {
    fn on_hop(&mut self, ctx: &mut Ctx<Self>, EntryHop { object, ttl }: EntryHop) {
        let owners = self
            .owners
            .get()
            .expect("invariant: set before registration");
        let count = owners.len() as u64;
        self.entries[(object / count) as usize] += 1;
        if ttl > 1 {
            let to = self.rng.below(self.objects);
            owners[(to % count) as usize].send(EntryHop {
                object: to,
                ttl: ttl - 1,
            });
        } else if self.finish.arrive() {
            ctx.stop_env();
        }
    }
}

/// Runs the workload with `layout`; returns the time from the first injection until the last
/// message died, after verifying that P·TTL messages were handled.
pub(crate) fn run_ttl(params: TtlParams, layout: Layout) -> Result<Duration, BenchError> {
    match layout {
        Layout::Owners(owners) => run_owners(params, owners),
        Layout::Objects(placement) => run_objects(params, placement),
    }
}

/// Variants 4 and 5: the same parameters through [`io_ttl`], which checks that
/// P·TTL messages were handled; the count is checked here again.
fn run_io(
    params: TtlParams,
    variant: io_ttl::Variant,
    threads: usize,
) -> Result<Duration, BenchError> {
    let too_big = |what: &str| BenchError::Harness(format!("{what} does not fit in usize"));
    let spec = TtlSpec {
        variant,
        threads,
        objects: usize::try_from(params.objects).map_err(|_| too_big("K"))?,
        messages: usize::try_from(params.messages).map_err(|_| too_big("P"))?,
        ttl: params.ttl,
        spin: Duration::ZERO,
    };
    let result = io_ttl::run(&spec, IO_RUN_LIMIT)?;
    verify_eq("messages handled (P*TTL)", params.handled(), result.handled)?;
    Ok(result.elapsed)
}

fn run_objects(params: TtlParams, placement: Placement) -> Result<Duration, BenchError> {
    let env = env()?;
    let binders = placement.binders(env.handle())?;
    let finish = Finish::new(params.messages);
    let directory = Arc::new(OnceLock::new());
    let mut coop = env.handle().new_coop();
    let mboxes: Vec<Mbox> = (0..params.objects)
        .map(|k| {
            let object = Object {
                rng: XorShift::for_index(k),
                objects: Arc::clone(&directory),
                finish: Arc::clone(&finish),
            };
            coop.add_with(object, binders.of(k, params.objects))
        })
        .collect();
    directory
        .set(mboxes.clone())
        .map_err(|_| BenchError::Harness("the directory was set twice".to_owned()))?;
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the objects"))?;
    finish.start()?;
    for i in 0..params.messages {
        mboxes[(i % params.objects) as usize].send(Hop(params.ttl));
    }
    run(env);
    let t = finish.elapsed()?;
    let handled: u64 = mboxes.iter().map(|m| m.stats().handled).sum();
    verify_eq("messages handled (P*TTL)", params.handled(), handled)?;
    Ok(t)
}

fn run_owners(params: TtlParams, owners: usize) -> Result<Duration, BenchError> {
    let env = env()?;
    let binders = Placement::Dispatchers(owners).binders(env.handle())?;
    let finish = Finish::new(params.messages);
    let total = Tally::default();
    let directory = Arc::new(OnceLock::new());
    let count = owners as u64;
    let mut coop = env.handle().new_coop();
    let mboxes: Vec<Mbox> = (0..count)
        .map(|index| {
            let owner = Owner {
                rng: XorShift::for_index(index),
                entries: vec![0; params.objects.div_ceil(count) as usize],
                objects: params.objects,
                owners: Arc::clone(&directory),
                finish: Arc::clone(&finish),
                total: total.clone(),
            };
            coop.add_with(owner, binders.of(index, count))
        })
        .collect();
    directory
        .set(mboxes.clone())
        .map_err(|_| BenchError::Harness("the directory was set twice".to_owned()))?;
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the owners"))?;
    finish.start()?;
    for i in 0..params.messages {
        let object = i % params.objects;
        mboxes[(object % count) as usize].send(EntryHop {
            object,
            ttl: params.ttl,
        });
    }
    run(env);
    let t = finish.elapsed()?;
    let handled: u64 = mboxes.iter().map(|m| m.stats().handled).sum();
    verify_eq("messages handled (P*TTL)", params.handled(), handled)?;
    verify_eq(
        "hops counted in the object entries",
        params.handled(),
        total.get(),
    )?;
    Ok(t)
}
