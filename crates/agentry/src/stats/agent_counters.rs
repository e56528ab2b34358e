//! An agent's own counters (`AgentCounters`), kept in its direct mbox's shared part and read
//! by [`AgentStats`](crate::AgentStats): `handled` / `unhandled` published when the agent
//! leaves, the rare ones in a box made by the first count.

use crate::stats::HandlerTimes;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-agent counters, readable from any thread.
///
/// While the agent lives, `handled` and `unhandled` are counted in its slot (the line its
/// worker touches anyway, see `slab.rs`); they are copied here when it leaves. The others
/// count what most agents never see (refusals, drops, panics, insend handlers, restarts,
/// handler time): they live in a box made by the first count, so an agent that never needs
/// them does not carry them.
#[derive(Default)]
pub(crate) struct AgentCounters {
    /// Final count, published when the agent leaves.
    pub(crate) handled: AtomicU64,
    /// Final count, published when the agent leaves.
    pub(crate) unhandled: AtomicU64,
    rare: OnceLock<Box<RareCounters>>,
}

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

impl AgentCounters {
    /// The rare counters, made on first use (any thread).
    #[inline]
    pub(crate) fn rare(&self) -> &RareCounters {
        self.rare.get_or_init(Box::default)
    }

    /// A message limit dropped a message (reaction `Drop`, or a redirect loop cut): it is
    /// counted as limit-dropped and as dropped.
    pub(crate) fn count_limit_dropped(&self) {
        let rare = self.rare();
        rare.limit_dropped.fetch_add(1, Ordering::Relaxed);
        rare.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// The rare counters if any was counted yet.
    pub(crate) fn rare_if_any(&self) -> Option<&RareCounters> {
        self.rare.get().map(|r| &**r)
    }
}
