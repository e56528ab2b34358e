//! An agent's own counters (`AgentCounters`), kept in its direct mbox's shared part and read
//! by [`AgentStats`](crate::AgentStats): a small box made by the agent's leaving with
//! messages handled (its final `handled`), by its first unhandled message or by the first rare
//! count, which goes to a second box inside it.

use crate::stats::{HandlerSampling, HandlerTimes};
use once_cell::race::OnceBox;
use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-agent counters, readable from any thread.
///
/// While the agent lives, `handled` is counted in its slot (the line its worker touches
/// anyway, see `slab.rs`) and copied into [`Counts`] when it leaves, if it is not 0 (a
/// 32-byte chunk). `unhandled` is counted in [`Counts`] as it happens, by the agent's worker
/// (its first unhandled message makes the box; 8 bytes less in every slot for what many
/// agents never see). The others count what most agents never see (refusals, drops, panics,
/// insend handlers, restarts, handler time), in [`RareCounters`], made by the first of them.
/// So a live agent carries one pointer here (every agent has a shared part: 16 bytes less
/// brought it from a 144-byte chunk to a 128-byte one), and an agent that leaves having
/// handled messages one small box.
#[derive(Default)]
pub(crate) struct AgentCounters {
    /// One pointer (not `OnceLock<Box<_>>`, two words): two threads making it at once may
    /// both make a box; one is kept, the other dropped before it counts.
    counts: OnceBox<Counts>,
}

/// The final handled count of a gone agent, the unhandled count, and the rare counters if any
/// was counted.
#[derive(Default)]
pub(crate) struct Counts {
    /// Final count, published when the agent leaves.
    handled: AtomicU64,
    /// Counted as it happens, by the agent's worker (its only writer).
    unhandled: AtomicU64,
    rare: OnceBox<RareCounters>,
}

// Made for every agent that leaves having handled a message: with malloc's header, 32 bytes.
const _: () = assert!(std::mem::size_of::<Counts>() <= 24);

/// The counters of [`AgentCounters`] that most agents never touch.
#[derive(Default)]
pub(crate) struct RareCounters {
    pub(crate) insend_handled: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) limit_dropped: AtomicU64,
    pub(crate) redirected: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) restarts: AtomicU64,
    /// Its handlers' times, made when its handlers are timed (`EnvBuilder::handler_time`,
    /// `Define::measure_handler_time`).
    pub(crate) timing: OnceLock<Box<HandlerTiming>>,
}

/// How long a timed agent's handlers took: the total and a count per duration bucket
/// ([`HandlerTimes`]). Written by the agent's worker only (no locked instruction), read by
/// any thread.
#[derive(Default)]
pub(crate) struct HandlerTiming {
    pub(crate) total_ns: AtomicU64,
    pub(crate) buckets: [AtomicU64; HandlerTimes::BUCKETS],
}

impl HandlerTiming {
    /// One handler run took `ns` nanoseconds (called by the agent's worker only).
    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        let add = |c: &AtomicU64, n: u64| {
            c.store(
                c.load(Ordering::Relaxed).saturating_add(n),
                Ordering::Relaxed,
            )
        };
        add(&self.total_ns, ns);
        add(&self.buckets[HandlerTimes::bucket_of(ns)], 1);
    }

    pub(crate) fn read(&self) -> HandlerTimes {
        HandlerTimes {
            total: std::time::Duration::from_nanos(self.total_ns.load(Ordering::Relaxed)),
            counts: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
        }
    }
}

/// Which handler runs of timed agents are timed: one in [`HandlerSampling::every`] on average,
/// each next one after a pseudo-random number of runs (uniform in `1..=2·every − 1`, so that a
/// periodic pattern of messages can neither hide from the sample nor fill it); every run when
/// `every` is 1. A clock read costs tens of nanoseconds on some machines (two per timed run),
/// a skipped run one decrement.
///
/// One sampler per thread ([`skip_timing`], [`time_this_run`]), shared by the timed agents
/// the thread runs: the hot path touches no per-agent memory beyond the cell (a per-agent
/// sampler in the agent's boxed extras cost a cache miss per message on a ring of 10^4
/// agents). A dispatcher thread serves one environment, so one rate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandlerSampler {
    /// Runs per timed run on average; 0 before the thread's first timed agent ran.
    every: u32,
    /// Runs until the next timed one (1: the next run is timed).
    countdown: u32,
    /// xorshift32 state, never 0 once seeded.
    state: u32,
}

impl HandlerSampler {
    /// The sampler of a thread that has not run a timed agent yet.
    const UNSEEDED: HandlerSampler = HandlerSampler {
        every: 0,
        countdown: 0,
        state: 0,
    };

    /// A sampler at `rate`, its intervals drawn from `seed`.
    pub(crate) fn new(rate: HandlerSampling, seed: u64) -> Self {
        // splitmix64's finaliser spreads consecutive seeds apart; `| 1` keeps xorshift alive.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let mut sampler = HandlerSampler {
            every: rate.every(),
            countdown: 1,
            state: (z as u32) | 1,
        };
        // The first wait is the smaller of two draws: the wait a run that arrives at a random
        // moment of an endless sequence of intervals has (its density falls linearly, as the
        // minimum of two uniforms'), so that a sampler that serves only a few runs still times
        // one in `every` on average — a first wait drawn like the others would time fewer
        // (10^4 samplers of 100 runs each: ~1.19 timed runs each, not 1.56).
        let (a, b) = (sampler.draw(), sampler.draw());
        sampler.countdown = a.min(b);
        sampler
    }

    /// Counts this run as not timed if it is not the one due (true), and leaves a due run
    /// for [`take`](Self::take) (false): the hot path's test.
    #[inline]
    pub(crate) fn skip(&mut self) -> bool {
        if self.countdown > 1 {
            self.countdown -= 1;
            return true;
        }
        false
    }

    /// Whether this run is timed (counting it either way).
    #[inline]
    pub(crate) fn take(&mut self) -> bool {
        if self.skip() {
            return false;
        }
        self.countdown = self.draw();
        true
    }

    /// Runs to the next timed one: `every` on average.
    fn draw(&mut self) -> u32 {
        if self.every == 1 {
            return 1;
        }
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.state = x;
        // `every` ≤ 2^30 (`HandlerSampling::MAX`), so the span and the result fit a u32.
        1 + x % (2 * self.every - 1)
    }
}

thread_local! {
    /// The sampler of the timed agents this thread runs.
    static THREAD_SAMPLER: Cell<HandlerSampler> = const { Cell::new(HandlerSampler::UNSEEDED) };
}

/// Seeds for the threads' samplers, one each.
static SAMPLER_SEEDS: AtomicU64 = AtomicU64::new(0);

/// The hot path of a timed agent: true if this run is not one to time (it is counted); false
/// if it is due, or the thread's sampler is not seeded yet — then [`time_this_run`] decides.
#[inline(always)]
pub(crate) fn skip_timing() -> bool {
    THREAD_SAMPLER.with(|cell| {
        let mut sampler = cell.get();
        let skip = sampler.skip();
        if skip {
            cell.set(sampler);
        }
        skip
    })
}

/// Whether this run of a timed agent whose environment samples at `rate` is timed (counting
/// it). Seeds the thread's sampler on first use, and again if the rate differs (a thread that
/// drives agents of two environments, as tests do).
pub(crate) fn time_this_run(rate: HandlerSampling) -> bool {
    THREAD_SAMPLER.with(|cell| {
        let mut sampler = cell.get();
        if sampler.every != rate.every() {
            sampler = HandlerSampler::new(rate, SAMPLER_SEEDS.fetch_add(1, Ordering::Relaxed));
        }
        let timed = sampler.take();
        cell.set(sampler);
        timed
    })
}

impl AgentCounters {
    fn counts(&self) -> &Counts {
        self.counts.get_or_init(Box::default)
    }

    /// The rare counters, made on first use (any thread).
    #[inline]
    pub(crate) fn rare(&self) -> &RareCounters {
        self.counts().rare.get_or_init(Box::default)
    }

    /// A message limit dropped a message (reaction `Drop`, or a redirect loop cut): it is
    /// counted as limit-dropped and as dropped.
    pub(crate) fn count_limit_dropped(&self) {
        let rare = self.rare();
        rare.limit_dropped.fetch_add(1, Ordering::Relaxed);
        rare.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// A message the agent took had no handler in its state. Called by the agent's worker
    /// only (the count's single writer: a plain load and store).
    pub(crate) fn count_unhandled(&self) {
        let unhandled = &self.counts().unhandled;
        unhandled.store(unhandled.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The agent left having handled `handled` messages: its final count, published (a box
    /// is made only if it is not 0).
    pub(crate) fn publish_final(&self, handled: u64) {
        let counts = match self.counts.get() {
            Some(counts) => counts,
            None if handled == 0 => return,
            None => self.counts(),
        };
        counts.handled.store(handled, Ordering::Relaxed);
    }

    /// The `handled` count published when the agent left (0 while it lives: its slot has the
    /// live one) and the `unhandled` count, live.
    pub(crate) fn handled_and_unhandled(&self) -> (u64, u64) {
        self.counts.get().map_or((0, 0), |c| {
            (
                c.handled.load(Ordering::Relaxed),
                c.unhandled.load(Ordering::Relaxed),
            )
        })
    }

    /// True if nothing was ever counted here: the agent left without handling a message (or
    /// has not left) and met no rare event; its counters read all zero.
    pub(crate) fn is_empty(&self) -> bool {
        self.counts.get().is_none()
    }

    /// The rare counters if any was counted yet.
    pub(crate) fn rare_if_any(&self) -> Option<&RareCounters> {
        self.counts.get()?.rare.get()
    }
}
