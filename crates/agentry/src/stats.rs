//! Counters: what was handled, refused, dropped, and why. Every message that is not handled
//! shows up in exactly one of these counters.

mod agent_counters;

#[cfg(test)]
use agent_counters::HandlerSampler;
pub(crate) use agent_counters::{AgentCounters, RareCounters, skip_timing, time_this_run};

use crate::trace::context::Propagation;
use crate::trace::{TraceRecord, TraceSink};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Environment-wide counters (all relaxed atomics, off the success path), and the message
/// tracer: it sees every drop these counters count, at the same points (`trace.rs`).
#[derive(Default, Debug)]
pub(crate) struct EnvCounters {
    /// The message tracer, if tracing is on (fixed when the environment is built).
    pub(crate) trace: Option<Arc<TraceSink>>,
    /// The trace-context hook, if one is installed (fixed when the environment is built; read
    /// by the dispatchers for traced demands only, and by the timer service when it schedules).
    pub(crate) propagation: Option<Propagation>,
    pub(crate) restarts: AtomicU64,
    pub(crate) escalations: AtomicU64,
    pub(crate) dead_letters: AtomicU64,
    pub(crate) unhandled: AtomicU64,
    pub(crate) limit_dropped: AtomicU64,
    pub(crate) limit_redirected: AtomicU64,
    pub(crate) limit_transformed: AtomicU64,
    pub(crate) redirect_loops: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) no_subscribers: AtomicU64,
    pub(crate) filtered_out: AtomicU64,
    pub(crate) dropped_on_shutdown: AtomicU64,
    pub(crate) replies_discarded: AtomicU64,
    pub(crate) timers_revoked: AtomicU64,
}

/// A snapshot of an environment's counters ([`EnvHandle::stats`](crate::EnvHandle::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvStats {
    /// Coops currently registered (including those being deregistered).
    pub coops: usize,
    /// Agents currently registered.
    pub agents: usize,
    /// Messages refused or discarded because their receiver was not running (never
    /// registered, deregistered, or its slot reused).
    pub dead_letters: u64,
    /// Messages for which the receiver had no handler in its current state.
    pub unhandled: u64,
    /// Messages refused by a message limit with the `Drop` reaction.
    pub limit_dropped: u64,
    /// Messages redirected by a message limit.
    pub limit_redirected: u64,
    /// Messages transformed by a message limit.
    pub limit_transformed: u64,
    /// Messages dropped because a redirect/transform chain exceeded
    /// [`MAX_REDIRECT_DEPTH`](crate::mbox::limit::MAX_REDIRECT_DEPTH).
    pub redirect_loops: u64,
    /// Panics caught in handlers, hooks, insend handlers, filters, overload transforms and agent
    /// drops.
    pub panics: u64,
    /// Messages sent to a multi mbox that had no subscriber for their type.
    pub no_subscribers: u64,
    /// Deliveries a subscriber's delivery filter declined.
    pub filtered_out: u64,
    /// Messages still queued (or pushed in the race) when their dispatcher shut down.
    pub dropped_on_shutdown: u64,
    /// Replies that arrived after the requester stopped waiting.
    pub replies_discarded: u64,
    /// Timer messages discarded because their timer was cancelled after they were queued.
    pub timers_revoked: u64,
    /// Timers currently scheduled.
    pub timers: usize,
    /// Children (agents and coops) restarted by their supervisors.
    pub restarts: u64,
    /// Supervisors that gave up (restart intensity exceeded) and escalated.
    pub escalations: u64,
    /// Death watches currently registered (made and neither fired, unwatched, nor dropped
    /// with their watcher).
    pub watches: usize,
    /// Bytes the process's store of agent memory holds, taken from the global allocator in
    /// 64 KiB chunks: agents' cells and pool agents' queues live in blocks of it, reused for
    /// the next agents; a chunk whose blocks are all free again is kept empty for the next
    /// agents of any size, and beyond 4 MiB of such chunks given back once it has been empty
    /// for a second (process-wide: every env of the process reports the same).
    pub agent_memory_reserved: u64,
    /// Bytes of that store free for reuse outside the threads: free blocks and empty chunks
    /// (each thread keeps up to 64 more free blocks per size class for itself).
    pub agent_memory_idle: u64,
}

impl EnvCounters {
    pub(crate) fn new(trace: Option<Arc<TraceSink>>, propagation: Option<Propagation>) -> Self {
        EnvCounters {
            trace,
            propagation,
            ..EnvCounters::default()
        }
    }

    /// Hands the record `make` builds to the tracer, if tracing is on (cold paths only).
    #[inline]
    pub(crate) fn trace(&self, make: impl FnOnce() -> TraceRecord<'static>) {
        if let Some(sink) = &self.trace {
            sink.emit(&make());
        }
    }

    pub(crate) fn snapshot(&self, coops: usize, agents: usize, timers: usize) -> EnvStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        EnvStats {
            coops,
            agents,
            dead_letters: r(&self.dead_letters),
            unhandled: r(&self.unhandled),
            limit_dropped: r(&self.limit_dropped),
            limit_redirected: r(&self.limit_redirected),
            limit_transformed: r(&self.limit_transformed),
            redirect_loops: r(&self.redirect_loops),
            panics: r(&self.panics),
            no_subscribers: r(&self.no_subscribers),
            filtered_out: r(&self.filtered_out),
            dropped_on_shutdown: r(&self.dropped_on_shutdown),
            replies_discarded: r(&self.replies_discarded),
            timers_revoked: r(&self.timers_revoked),
            timers,
            restarts: r(&self.restarts),
            escalations: r(&self.escalations),
            watches: 0,
            agent_memory_reserved: 0,
            agent_memory_idle: 0,
        }
    }
}

/// A snapshot of one agent's counters ([`Mbox::stats`](crate::Mbox::stats)).
///
/// Every message sent to the agent — through its mbox, or delivered to it by a multi mbox
/// whose delivery filter accepted it — is in exactly one of `handled`, `unhandled`,
/// `insend_handled`, `redirected` and `dropped` once it has been taken care of:
/// `handled + unhandled + insend_handled + redirected + dropped == sent`, exactly, also for
/// messages racing the agent's deregistration (`docs/SEMANTICS.md` §12). Messages a
/// supervised agent keeps for its next incarnation, or holds while its coop starts, are in
/// none until they are handled or dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentStats {
    /// Messages its queued handlers handled.
    pub handled: u64,
    /// Messages it had no handler for in its current state.
    pub unhandled: u64,
    /// Messages its insend handlers handled.
    pub insend_handled: u64,
    /// Messages for it refused or discarded because it was not running — not registered yet,
    /// gone (also a message that raced its deregistration and was discarded behind its finish
    /// demand), stopped after a failure, or its coop failed to start or is being
    /// deregistered. Its share of `EnvStats::dead_letters`; part of `dropped`.
    pub refused: u64,
    /// Messages its message limits dropped.
    pub limit_dropped: u64,
    /// Messages its message limits handed to another destination (`Overload::Redirect` or
    /// `Overload::Transform`).
    pub redirected: u64,
    /// Panics in its handlers, hooks, insend handlers, filters and overload transforms.
    pub panics: u64,
    /// Messages for it that no handler of it took and never will: refused (`refused`),
    /// dropped by its limits (`limit_dropped`, including redirect loops cut at it), a panicking
    /// overload transform's message, its cancelled timers' messages discarded from its queue,
    /// and messages its dispatcher dropped as it shut down.
    pub dropped: u64,
    /// Times its supervisor restarted it (its mbox, counters and stats span incarnations).
    pub restarts: u64,
    /// Messages waiting in its queue — [`Tracked::NotTracked`] unless asked for
    /// (`EnvBuilder::queue_depth` or `Define::track_queue_depth`; tracking costs an atomic
    /// increment per send), so an agent whose depth is not tracked never reads as empty.
    pub queue_depth: Tracked<u64>,
    /// How long its handlers took to handle messages (lookup, handler, state change), over the
    /// runs timed (one in [`HandlerSampling::every`], by default one in 256): the total and a
    /// histogram — [`Tracked::NotTracked`] unless asked for (`EnvBuilder::handler_time` or
    /// `Define::measure_handler_time`; a timed run reads the clock twice).
    pub handler_time: Tracked<HandlerTimes>,
}

/// The counters of every agent of one type, summed
/// ([`EnvHandle::agent_type_stats`](crate::EnvHandle::agent_type_stats)): a view for
/// dashboards and exporters such as `agentry-metrics`.
///
/// The counters in `totals` cover every agent of the type the environment has had — running,
/// finished, and gone — so they never go down while the environment lives. `queue_depth` sums
/// the agents of the type running now that track it, `handler_time` every agent of the type
/// that was timed; each reads [`Tracked::NotTracked`] if no such agent exists.
///
/// ```
/// use agentry::{Agent, Env};
///
/// struct Idle;
/// impl Agent for Idle {}
///
/// let env = Env::new()?;
/// let a = env.handle().register_agent(Idle)?;
/// let _b = env.handle().register_agent(Idle)?;
/// a.send(1_u32); // no handler for it
/// let idle = loop {
///     let all = env.handle().agent_type_stats();
///     let idle = *all.iter().find(|t| t.agent_type.ends_with("Idle")).expect("registered");
///     if idle.totals.unhandled == 1 {
///         break idle;
///     }
///     std::thread::yield_now();
/// };
/// assert_eq!(idle.agents, 2);
/// env.handle().stop();
/// env.run();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentTypeStats {
    /// The agent type (`std::any::type_name` of the agent).
    pub agent_type: &'static str,
    /// Agents of this type registered now.
    pub agents: usize,
    /// Their counters, summed over every agent of this type the environment has had.
    pub totals: AgentStats,
}

/// An opt-in measurement: it reads `NotTracked` unless it was asked for, so that "not
/// measured" cannot be mistaken for zero.
///
/// ```
/// use agentry::Tracked;
/// let depth: Tracked<u64> = Tracked::Value(3);
/// assert_eq!(depth.value(), Some(3));
/// assert_eq!(Tracked::<u64>::NotTracked.value(), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tracked<T> {
    /// Not measured for this agent.
    #[default]
    NotTracked,
    /// The measured value.
    Value(T),
}

impl<T> Tracked<T> {
    /// The value, if it is measured.
    pub fn value(self) -> Option<T> {
        match self {
            Tracked::NotTracked => None,
            Tracked::Value(v) => Some(v),
        }
    }

    /// True if it is measured.
    pub fn is_tracked(&self) -> bool {
        matches!(self, Tracked::Value(_))
    }
}

impl<T> From<Option<T>> for Tracked<T> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Tracked::NotTracked, Tracked::Value)
    }
}

/// How long an agent's handlers took ([`AgentStats::handler_time`]), over the runs timed: the
/// total, and a histogram — how many timed runs took at most each of
/// [`HandlerTimes::BOUNDS`] (1 µs, 4 µs, 16 µs, … ×4 … about 1.05 s), the last bucket the
/// longer ones. Summed over agents, it is the distribution of their handler times
/// (percentiles, SLOs, the [`mean`](Self::mean)); the Prometheus exporter reports it as a
/// histogram. The timed runs are a sample (one in [`HandlerSampling::every`], at
/// pseudo-random intervals) unless the environment times every run
/// ([`HandlerSampling::EVERY_RUN`]): the count is then the sample's, not the messages handled.
///
/// ```
/// use agentry::HandlerTimes;
/// use std::time::Duration;
///
/// assert_eq!(HandlerTimes::BOUNDS[0], Duration::from_micros(1));
/// assert_eq!(HandlerTimes::BOUNDS[2], Duration::from_micros(16));
/// assert_eq!(HandlerTimes::BUCKETS, HandlerTimes::BOUNDS.len() + 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerTimes {
    /// Total time of the runs timed.
    pub total: Duration,
    /// Timed runs per bucket: `counts[i]` took more than `BOUNDS[i - 1]` (0 for `i = 0`)
    /// and at most `BOUNDS[i]`; the last counts those above the last bound.
    pub counts: [u64; HandlerTimes::BUCKETS],
}

impl HandlerTimes {
    /// Buckets: one per bound, and one for longer runs.
    pub const BUCKETS: usize = 12;
    /// The buckets' upper bounds: 1 µs × 4ⁱ.
    pub const BOUNDS: [Duration; HandlerTimes::BUCKETS - 1] = {
        let mut b = [Duration::ZERO; HandlerTimes::BUCKETS - 1];
        let mut i = 0;
        let mut ns = 1_000;
        while i < b.len() {
            b[i] = Duration::from_nanos(ns);
            ns *= 4;
            i += 1;
        }
        b
    };

    /// Handler runs timed.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The mean time of a timed run (`None` before the first).
    pub fn mean(&self) -> Option<Duration> {
        let count = self.count();
        (count > 0).then(|| {
            Duration::from_nanos(
                u64::try_from(self.total.as_nanos() / u128::from(count)).unwrap_or(u64::MAX),
            )
        })
    }

    /// The bucket of a run of `ns` nanoseconds: the first whose bound is at least `ns`.
    #[inline]
    pub(crate) fn bucket_of(ns: u64) -> usize {
        // Whole microseconds, rounded up; bucket i holds (4^(i-1), 4^i] µs.
        let us = ns.div_ceil(1_000).max(1);
        let bits = (64 - (us - 1).leading_zeros()) as usize;
        bits.div_ceil(2).min(Self::BUCKETS - 1)
    }

    fn accumulate(&mut self, other: &HandlerTimes) {
        self.total += other.total;
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
    }
}

/// How many handler runs of a timed agent are timed
/// ([`EnvBuilder::handler_time_sampling`](crate::EnvBuilder::handler_time_sampling)): one in
/// [`every`](Self::every) on average, at pseudo-random intervals. Default: one in 256 — two
/// clock reads per run cost more than a whole message's dispatch on some machines (~60 ns on
/// a VM whose clock is read through the hypervisor), so timing every run is a choice, not the
/// default.
///
/// ```
/// use agentry::HandlerSampling;
/// use std::num::NonZeroU32;
///
/// assert_eq!(HandlerSampling::default().every(), 256);
/// assert_eq!(HandlerSampling::EVERY_RUN.every(), 1);
/// let sparse = HandlerSampling::one_in(NonZeroU32::new(u32::MAX).unwrap());
/// assert_eq!(sparse.every(), HandlerSampling::MAX);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerSampling(NonZeroU32);

impl HandlerSampling {
    /// Every run timed.
    pub const EVERY_RUN: HandlerSampling = HandlerSampling(NonZeroU32::MIN);
    /// The default: one run in 256.
    pub const DEFAULT: HandlerSampling = HandlerSampling(NonZeroU32::new(256).unwrap());
    /// The sparsest sampling: one run in 2^30.
    pub const MAX: u32 = 1 << 30;

    /// One run in `every` timed, on average (clamped to [`MAX`](Self::MAX)).
    pub const fn one_in(every: NonZeroU32) -> HandlerSampling {
        if every.get() > Self::MAX {
            HandlerSampling(NonZeroU32::new(Self::MAX).unwrap())
        } else {
            HandlerSampling(every)
        }
    }

    /// Runs per timed run, on average.
    pub const fn every(self) -> u32 {
        self.0.get()
    }
}

impl Default for HandlerSampling {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl AgentStats {
    /// Adds `other`'s counts to these (opt-in measurements: tracked if either is).
    pub(crate) fn accumulate(&mut self, other: &AgentStats) {
        self.handled += other.handled;
        self.unhandled += other.unhandled;
        self.insend_handled += other.insend_handled;
        self.refused += other.refused;
        self.limit_dropped += other.limit_dropped;
        self.redirected += other.redirected;
        self.panics += other.panics;
        self.dropped += other.dropped;
        self.restarts += other.restarts;
        self.queue_depth = add_tracked(self.queue_depth, other.queue_depth);
        self.handler_time = match (self.handler_time, other.handler_time) {
            (Tracked::Value(mut a), Tracked::Value(b)) => {
                a.accumulate(&b);
                Tracked::Value(a)
            }
            (Tracked::NotTracked, b) => b,
            (a, Tracked::NotTracked) => a,
        };
    }

    pub(crate) fn read(c: &AgentCounters) -> Self {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let rare = |f: fn(&RareCounters) -> &AtomicU64| c.rare_if_any().map_or(0, |x| r(f(x)));
        let (handled, unhandled) = c.handled_and_unhandled();
        AgentStats {
            handled,
            unhandled,
            insend_handled: rare(|x| &x.insend_handled),
            refused: rare(|x| &x.refused),
            limit_dropped: rare(|x| &x.limit_dropped),
            redirected: rare(|x| &x.redirected),
            panics: rare(|x| &x.panics),
            dropped: rare(|x| &x.dropped),
            restarts: rare(|x| &x.restarts),
            queue_depth: Tracked::NotTracked,
            handler_time: c
                .rare_if_any()
                .and_then(|x| x.timing.get())
                .map(|t| t.read())
                .into(),
        }
    }
}

fn add_tracked<T: std::ops::Add<Output = T>>(a: Tracked<T>, b: Tracked<T>) -> Tracked<T> {
    match (a, b) {
        (Tracked::Value(a), Tracked::Value(b)) => Tracked::Value(a + b),
        (Tracked::Value(v), Tracked::NotTracked) | (Tracked::NotTracked, Tracked::Value(v)) => {
            Tracked::Value(v)
        }
        (Tracked::NotTracked, Tracked::NotTracked) => Tracked::NotTracked,
    }
}

#[cfg(test)]
mod tests;
