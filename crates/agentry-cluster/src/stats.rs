//! Counters of a cluster handle.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a node's counters ([`Cluster::stats`](crate::Cluster::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterStats {
    /// `NodeUp` announced.
    pub nodes_up: u64,
    /// `NodeDown` announced.
    pub nodes_down: u64,
    /// Times this node rejoined as a new incarnation.
    pub rejoins: u64,
    /// Evictions sent (heartbeats of an incarnation that is down here).
    pub evictions_sent: u64,
    /// `RemoteTerminated` delivered to watchers.
    pub terminated: u64,
    /// Agents started here for remote spawn requests.
    pub spawned: u64,
    /// Inbound cluster messages that did not decode (dropped).
    pub malformed: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub nodes_up: AtomicU64,
    pub nodes_down: AtomicU64,
    pub rejoins: AtomicU64,
    pub evictions_sent: AtomicU64,
    pub terminated: AtomicU64,
    pub spawned: AtomicU64,
    pub malformed: AtomicU64,
}

impl Counters {
    pub(crate) fn inc(&self, c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ClusterStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClusterStats {
            nodes_up: g(&self.nodes_up),
            nodes_down: g(&self.nodes_down),
            rejoins: g(&self.rejoins),
            evictions_sent: g(&self.evictions_sent),
            terminated: g(&self.terminated),
            spawned: g(&self.spawned),
            malformed: g(&self.malformed),
        }
    }
}
