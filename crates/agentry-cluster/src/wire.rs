//! The cluster's own messages on NATS (postcard), and their subjects.
//!
//! Subjects, under `agentry.cluster.<cluster>`: `hb` (heartbeats: [`NodeInfo`]), `leave`
//! ([`NodeKey`]), `evict.<node>` (an incarnation, "you are down here: rejoin"), `gone`
//! ([`Gone`]: an exposed agent finished), and the requests `watch.<node>` ([`WatchQuery`] →
//! [`WatchAnswer`]), `spawn.<node>` ([`SpawnRequest`] → [`SpawnAnswer`]) and `stop.<node>`
//! ([`StopRequest`], no answer). Input that does not decode is counted
//! ([`ClusterStats::malformed`](crate::ClusterStats)) and dropped.

use crate::node::{AgentRef, NodeKey};
use agentry::watch::ExitReason;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// An exposed agent of `node` finished.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Gone {
    pub node: NodeKey,
    pub key: u64,
    pub reason: WireExit,
}

/// "Is `key` of incarnation `incarnation` still there?"
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct WatchQuery {
    pub incarnation: u64,
    pub key: u64,
}

/// The owner's answer to a [`WatchQuery`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum WatchAnswer {
    Alive,
    Gone(WireExit),
    Unknown,
}

/// Start an agent from `factory` with `args`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SpawnRequest {
    pub factory: String,
    pub args: Vec<u8>,
}

/// The answer to a [`SpawnRequest`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum SpawnAnswer {
    Started(AgentRef),
    UnknownFactory,
    Failed(String),
}

/// Stop (deregister the coop of) an agent this node spawned.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StopRequest {
    pub incarnation: u64,
    pub key: u64,
}

/// [`ExitReason`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum WireExit {
    Normal,
    Shutdown,
    ParentDeregistered,
    Panic,
    Escalation,
    Restart,
    StartFailed,
    User(u32),
    Unknown,
}

impl From<ExitReason> for WireExit {
    fn from(r: ExitReason) -> Self {
        match r {
            ExitReason::Normal => WireExit::Normal,
            ExitReason::Shutdown => WireExit::Shutdown,
            ExitReason::ParentDeregistered => WireExit::ParentDeregistered,
            ExitReason::Panic => WireExit::Panic,
            ExitReason::Escalation => WireExit::Escalation,
            ExitReason::Restart => WireExit::Restart,
            ExitReason::StartFailed => WireExit::StartFailed,
            ExitReason::User(c) => WireExit::User(c),
            _ => WireExit::Unknown,
        }
    }
}

impl From<WireExit> for ExitReason {
    fn from(r: WireExit) -> Self {
        match r {
            WireExit::Normal => ExitReason::Normal,
            WireExit::Shutdown => ExitReason::Shutdown,
            WireExit::ParentDeregistered => ExitReason::ParentDeregistered,
            WireExit::Panic => ExitReason::Panic,
            WireExit::Escalation => ExitReason::Escalation,
            WireExit::Restart => ExitReason::Restart,
            WireExit::StartFailed => ExitReason::StartFailed,
            WireExit::User(c) => ExitReason::User(c),
            WireExit::Unknown => ExitReason::Unknown,
        }
    }
}

/// Encodes a wire message (postcard into a `Vec` cannot fail for these types).
pub(crate) fn encode<T: Serialize>(v: &T) -> bytes::Bytes {
    postcard::to_allocvec(v)
        .expect("invariant: postcard encodes these plain types into a Vec")
        .into()
}

/// Decodes a wire message.
pub(crate) fn decode<T: DeserializeOwned>(b: &[u8]) -> Option<T> {
    postcard::from_bytes(b).ok()
}
