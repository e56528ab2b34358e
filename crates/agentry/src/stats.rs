//! Counters: what was handled, refused, dropped, and why. Every message that is not handled
//! shows up in exactly one of these counters.

use crate::agent::shared::AgentCounters;
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment-wide counters (all relaxed atomics, off the success path).
#[derive(Default, Debug)]
pub(crate) struct EnvCounters {
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
    /// [`MAX_REDIRECT_DEPTH`](crate::limit::MAX_REDIRECT_DEPTH).
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
}

impl EnvCounters {
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
        }
    }
}

/// A snapshot of one agent's counters ([`Mbox::stats`](crate::Mbox::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentStats {
    /// Messages its queued handlers handled.
    pub handled: u64,
    /// Messages it had no handler for in its current state.
    pub unhandled: u64,
    /// Messages its insend handlers handled.
    pub insend_handled: u64,
    /// Sends refused because it was not running.
    pub refused: u64,
    /// Messages its message limits dropped.
    pub limit_dropped: u64,
    /// Panics in its handlers, hooks, insend handlers, filters and overload transforms.
    pub panics: u64,
}

impl AgentStats {
    pub(crate) fn read(c: &AgentCounters) -> Self {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        AgentStats {
            handled: r(&c.handled),
            unhandled: r(&c.unhandled),
            insend_handled: r(&c.insend_handled),
            refused: r(&c.refused),
            limit_dropped: r(&c.limit_dropped),
            panics: r(&c.panics),
        }
    }
}
