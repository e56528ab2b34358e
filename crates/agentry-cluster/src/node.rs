//! Nodes and agents as the cluster names them: [`NodeInfo`] (id, incarnation, metadata,
//! factories) and [`AgentRef`] (an agent of some node incarnation, and the global mbox name
//! that reaches it).

use agentry_remote::{Gateway, NameError, RemoteMbox};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// One process of the cluster, as announced in its heartbeats.
///
/// A node is identified by its `id` (chosen by the application, unique in the cluster) and
/// its `incarnation`: a fresh number each time the process joins — and again when it learns
/// that the others declared it down (after a partition). Two incarnations of one id are two
/// different members: whatever belonged to the first (names, watched agents) is gone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The node id (one NATS subject token: `[A-Za-z0-9_-]+`).
    pub id: String,
    /// This incarnation of the node (start time in µs since the Unix epoch, made unique).
    pub incarnation: u64,
    /// Application metadata (`Cluster::builder(..).meta(k, v)`).
    pub meta: BTreeMap<String, String>,
    /// The agent factories this node offers for remote spawn, by name, sorted.
    pub factories: Vec<String>,
}

impl NodeInfo {
    /// `(id, incarnation)`, the key of a member.
    pub fn key(&self) -> NodeKey {
        NodeKey {
            id: self.id.clone(),
            incarnation: self.incarnation,
        }
    }
}

/// A node incarnation: `(id, incarnation)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeKey {
    /// The node id.
    pub id: String,
    /// The incarnation.
    pub incarnation: u64,
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.id, self.incarnation)
    }
}

/// An agent of one node incarnation that the cluster knows: returned by
/// [`Cluster::expose`](crate::Cluster::expose), [`register`](crate::Cluster::register),
/// [`lookup`](crate::Cluster::lookup) and [`spawn`](crate::Cluster::spawn); watched with
/// [`Cluster::watch`](crate::Cluster::watch).
///
/// `address` is the global mbox name (agentry-remote) under which the agent's node
/// subscribed it; [`mbox`](Self::mbox) turns it into a [`RemoteMbox`] of a gateway.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AgentRef {
    /// The node incarnation the agent lives in.
    pub node: NodeKey,
    /// The agent's number on that node incarnation (never reused by it).
    pub key: u64,
    /// The global mbox name that reaches it (may be empty for an agent reached otherwise).
    pub address: String,
}

impl AgentRef {
    /// The remote mbox `address` of `gateway` (same namespace as the owning node's gateway).
    pub fn mbox(&self, gateway: &Gateway) -> Result<RemoteMbox, NameError> {
        gateway.mbox(&self.address)
    }
}

/// Checks a node id or factory name: one NATS token, `[A-Za-z0-9_-]+`.
pub(crate) fn valid_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks a registry name: tokens separated by `.`.
pub(crate) fn valid_name(s: &str) -> bool {
    s.len() <= 200 && s.split('.').all(valid_token)
}
