//! An agent's own counters (`AgentCounters`), kept in its direct mbox's shared part and read
//! by [`AgentStats`](crate::AgentStats): `handled` / `unhandled` published when the agent
//! leaves, the rare ones in a box made by the first count.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    /// Whether its handlers are timed (`handler_ns` is meaningful).
    pub(crate) timed: AtomicBool,
    /// Written by its worker only.
    pub(crate) handler_ns: AtomicU64,
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
