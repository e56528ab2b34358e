//! `ttl` (CSO, "message processing speed"), variants 4 and 5 (`benches/ttl.rs` runs them
//! beside variants 1–3): `objects` objects live on the
//! io threads of an [`IoDispatcher`] (one dispatcher thread per benchmark thread, each an
//! epoll loop woken through its eventfd); `messages` messages are queued at the start, each
//! carrying a TTL; a handler that receives TTL > 1 sends TTL − 1 to a uniformly random object.
//! The run ends when every message has reached TTL 1: `messages × ttl` handled messages.
//!
//! Mapping (CSO's variants → agentry):
//! - [`Variant::V4`] (file-descriptor objects *without* the one-message-per-object
//!   guarantee): one agent per io thread owns the objects `o` with `o % threads == index`;
//!   a message names its object, and goes to the agent of the object's thread. An object has
//!   no queue or scheduling of its own: like CSO's plain objects reached through the
//!   processor's queue. (Within a thread its objects are served one at a time anyway; what
//!   variant 4 omits is the per-object synchronisation, and so does this.)
//! - [`Variant::V5`] (with the guarantee): every object is an agent, bound round-robin to
//!   the io threads. Every agentry agent handles one message at a time.
//!
//! Sends to an object of the same thread take the local path; to another thread, the
//! MPSC queue and, if that loop is blocked in `epoll_wait`, one eventfd write.

use crate::benches::support::setup;
use crate::harness::BenchError;
use crate::xorshift::XorShift;
use agentry::disp::Binder;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use agentry_net::IoDispatcher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// CSO's test variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Variant 4: objects without per-object synchronisation (one agent per io thread).
    V4,
    /// Variant 5: one agent per object (one message at a time per object).
    V5,
}

/// One `ttl` configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtlSpec {
    /// The variant.
    pub variant: Variant,
    /// Io threads (CSO: 1, 2, 3, 4).
    pub threads: usize,
    /// Objects (CSO: 1024).
    pub objects: usize,
    /// Messages in flight (CSO: 1024).
    pub messages: usize,
    /// Initial TTL (CSO: 65,536; the quick run 4,096).
    pub ttl: u32,
    /// Io threads' spin before blocking (0: block at once, as CSO's eventfd processor does).
    pub spin: Duration,
}

impl TtlSpec {
    /// CSO's parameters for `variant` on `threads` threads.
    pub fn cso(variant: Variant, threads: usize) -> Self {
        TtlSpec {
            variant,
            threads,
            objects: 1024,
            messages: 1024,
            ttl: 65_536,
            spin: Duration::ZERO,
        }
    }

    /// The quick run: TTL 4,096.
    pub fn quick(variant: Variant, threads: usize) -> Self {
        TtlSpec {
            ttl: 4096,
            ..Self::cso(variant, threads)
        }
    }

    /// Messages handled by a complete run.
    pub fn handled(&self) -> u64 {
        self.messages as u64 * u64::from(self.ttl)
    }
}

/// The figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct TtlResult {
    /// Messages handled (checked: `messages × ttl`).
    pub handled: u64,
    /// Wall time from the first message sent to the last chain's end.
    pub elapsed: Duration,
    /// Times the io threads blocked in `epoll_wait` during the run.
    pub blocks: u64,
    /// Eventfd wake-ups of the io threads during the run.
    pub wakeups: u64,
}

impl TtlResult {
    /// Messages handled per second.
    pub fn per_sec(&self) -> f64 {
        self.handled as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Counts finished chains; the last one signals the end.
struct Finish {
    chains_left: AtomicUsize,
    handled: AtomicU64,
    done: Mutex<Option<mpsc::Sender<()>>>,
}

impl Finish {
    fn chain_ended(&self) {
        if self.chains_left.fetch_sub(1, Ordering::AcqRel) == 1
            && let Some(tx) = self.done.lock().unwrap_or_else(|e| e.into_inner()).take()
        {
            let _ = tx.send(());
        }
    }
}

/// Runs `spec`; `limit` bounds the run.
pub fn run(spec: &TtlSpec, limit: Duration) -> Result<TtlResult, BenchError> {
    if spec.threads == 0 || spec.objects == 0 || spec.messages == 0 || spec.ttl == 0 {
        return Err(BenchError::Harness(
            "threads, objects, messages, ttl > 0".into(),
        ));
    }
    let objects =
        u32::try_from(spec.objects).map_err(|_| BenchError::Harness("too many objects".into()))?;
    let env = Env::builder()
        .autoshutdown(false)
        .build()
        .map_err(setup("environment"))?;
    let io = IoDispatcher::builder("ttl")
        .threads(spec.threads)
        .spin(spec.spin)
        .build(env.handle())
        .map_err(setup("io dispatcher"))?;
    let binders: Vec<Binder> = (0..spec.threads).filter_map(|i| io.binder_at(i)).collect();
    let (done_tx, done_rx) = mpsc::channel();
    let finish = Arc::new(Finish {
        chains_left: AtomicUsize::new(spec.messages),
        handled: AtomicU64::new(0),
        done: Mutex::new(Some(done_tx)),
    });
    let targets: Arc<OnceLock<Vec<Mbox>>> = Arc::new(OnceLock::new());
    let mut coop = env.handle().new_coop();
    let mboxes: Vec<Mbox> = match spec.variant {
        Variant::V5 => (0..objects)
            .map(|o| {
                coop.add_with(
                    Object {
                        targets: Arc::clone(&targets),
                        objects,
                        rng: XorShift::for_index(u64::from(o)),
                        handled: 0,
                        finish: Arc::clone(&finish),
                    },
                    &binders[o as usize % binders.len()],
                )
            })
            .collect(),
        Variant::V4 => (0..spec.threads)
            .map(|t| {
                let owned = (0..objects)
                    .filter(|o| *o as usize % spec.threads == t)
                    .count();
                coop.add_with(
                    Processor {
                        processors: Arc::clone(&targets),
                        objects,
                        threads: spec.threads as u32,
                        state: vec![0; owned],
                        rng: XorShift::for_index(t as u64),
                        handled: 0,
                        finish: Arc::clone(&finish),
                    },
                    &binders[t],
                )
            })
            .collect(),
    };
    if targets.set(mboxes.clone()).is_err() {
        return Err(BenchError::Harness("targets set twice".into()));
    }
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the objects"))?;
    let start = Instant::now();
    for m in 0..spec.messages {
        let object = (m % spec.objects) as u32;
        match spec.variant {
            Variant::V5 => mboxes[object as usize].send(Ttl(spec.ttl)),
            Variant::V4 => mboxes[object as usize % spec.threads].send(ObjMsg {
                object,
                ttl: spec.ttl,
            }),
        }
    }
    let finished = done_rx.recv_timeout(limit);
    let elapsed = start.elapsed();
    let net = io.stats();
    env.handle().stop();
    env.run();
    io.wait_threads(Duration::from_secs(10));
    if finished.is_err() {
        return Err(BenchError::Harness(format!(
            "the run did not finish within {limit:?}"
        )));
    }
    let handled = finish.handled.load(Ordering::Acquire);
    if handled != spec.handled() {
        return Err(BenchError::Verify(format!(
            "{handled} messages handled, expected {}",
            spec.handled()
        )));
    }
    Ok(TtlResult {
        handled,
        elapsed,
        blocks: net.loop_blocks,
        wakeups: net.loop_wakeups,
    })
}

/// Variant 5's message.
struct Ttl(u32);

/// Variant 5: an object is an agent.
struct Object {
    targets: Arc<OnceLock<Vec<Mbox>>>,
    objects: u32,
    rng: XorShift,
    handled: u64,
    finish: Arc<Finish>,
}

impl Agent for Object {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|o: &mut Object, _: &mut Ctx<Object>, Ttl(ttl): Ttl| {
            o.handled += 1;
            if ttl > 1 {
                let to = o.rng.below(u64::from(o.objects)) as usize;
                if let Some(targets) = o.targets.get() {
                    targets[to].send(Ttl(ttl - 1));
                }
            } else {
                o.finish.chain_ended();
            }
        })?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.finish
            .handled
            .fetch_add(self.handled, Ordering::AcqRel);
    }
}

/// Variant 4's message: an object id and a TTL.
struct ObjMsg {
    object: u32,
    ttl: u32,
}

/// Variant 4: the objects of one io thread, served by one agent.
struct Processor {
    processors: Arc<OnceLock<Vec<Mbox>>>,
    objects: u32,
    threads: u32,
    /// Per-object state (a message count), indexed by `object / threads`.
    state: Vec<u64>,
    rng: XorShift,
    handled: u64,
    finish: Arc<Finish>,
}

impl Agent for Processor {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Processor, _: &mut Ctx<Processor>, m: ObjMsg| {
            p.handled += 1;
            if let Some(slot) = p.state.get_mut((m.object / p.threads) as usize) {
                *slot += 1;
            }
            if m.ttl > 1 {
                let object = p.rng.below(u64::from(p.objects)) as u32;
                if let Some(processors) = p.processors.get() {
                    processors[(object % p.threads) as usize].send(ObjMsg {
                        object,
                        ttl: m.ttl - 1,
                    });
                }
            } else {
                p.finish.chain_ended();
            }
        })?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.finish
            .handled
            .fetch_add(self.handled, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::{TtlSpec, Variant, run};
    use std::time::Duration;

    #[test]
    fn both_variants_handle_every_message_on_one_and_two_threads() {
        for variant in [Variant::V4, Variant::V5] {
            for threads in [1, 2] {
                let spec = TtlSpec {
                    objects: 64,
                    messages: 32,
                    ttl: 50,
                    ..TtlSpec::quick(variant, threads)
                };
                let r = run(&spec, Duration::from_secs(30)).expect("run");
                assert_eq!(r.handled, 32 * 50);
            }
        }
    }
}
