//! What subscribing agents receive: [`NodeUp`], [`NodeDown`] (on the cluster's events multi
//! mbox) and [`RemoteTerminated`] (on a watcher's own mbox).

use crate::node::{AgentRef, NodeInfo, NodeKey};
use agentry::watch::ExitReason;
use serde::{Deserialize, Serialize};

/// A node incarnation joined (its first heartbeat was heard). Published on
/// [`Cluster::events`](crate::Cluster::events).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeUp(pub NodeInfo);

/// A node incarnation left the cluster. Published on [`Cluster::events`](crate::Cluster::events),
/// once per incarnation that was up (and never followed by a `NodeUp` of that incarnation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDown {
    /// The incarnation that is down.
    pub node: NodeKey,
    /// Why it is considered down.
    pub reason: DownReason,
}

/// Why a node incarnation is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum DownReason {
    /// It announced that it was leaving ([`Cluster::leave`](crate::Cluster::leave)).
    Left,
    /// No heartbeat within the failure bound: it crashed, hangs, or is cut off from us.
    Timeout,
    /// A new incarnation of the same node id appeared (the process restarted).
    Restarted,
    /// This node lost the cluster (it was declared down by the others and rejoined as a new
    /// incarnation, or it is leaving): every peer it knew is down *for it*.
    LocalRejoin,
}

/// Why a watched remote agent is gone ([`RemoteTerminated::reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteExit {
    /// It finished on its node (its coop was deregistered): the local reason.
    Exited(ExitReason),
    /// Its node incarnation went down.
    NodeDown(DownReason),
    /// Its node incarnation does not know it: the reference is of an incarnation that is not
    /// the one answering, the key was never given out, or it departed so long ago that its
    /// node no longer remembers why (it keeps the last
    /// [`KEEP_DEPARTED`](crate::KEEP_DEPARTED)).
    Unknown,
}

/// Sent to a watcher when the target of one of its remote watches is gone
/// ([`Cluster::watch`](crate::Cluster::watch)); exactly once per watch not removed first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteTerminated {
    /// The watch (as returned by `watch`).
    pub watch: RemoteWatchId,
    /// What was watched.
    pub target: AgentRef,
    /// Why it is gone.
    pub reason: RemoteExit,
}

/// A remote watch, unique in its cluster handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RemoteWatchId(pub(crate) u64);

impl RemoteWatchId {
    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}
