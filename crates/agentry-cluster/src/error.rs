//! The crate's errors, one enum per operation family.

use crate::node::NodeKey;
use thiserror::Error;

/// Why a cluster could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StartError {
    /// The cluster name or node id is not one token `[A-Za-z0-9_-]+`.
    #[error("invalid {what} {value:?}: one token of [A-Za-z0-9_-] expected")]
    InvalidName {
        /// "cluster name", "node id" or "factory name".
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// A setting is out of range.
    #[error("invalid setting: {0}")]
    InvalidSetting(&'static str),
    /// The async runtime could not be built.
    #[error("runtime: {0}")]
    Runtime(String),
    /// No connection to NATS (within the connect timeout).
    #[error("cannot connect to NATS: {0}")]
    Connect(String),
    /// A subscription was refused.
    #[error("cannot subscribe: {0}")]
    Subscribe(String),
    /// The registry's key-value bucket is unavailable (JetStream off or unreachable).
    #[error("registry bucket unavailable: {0}")]
    Registry(String),
    /// The cluster's agent could not be registered in the environment.
    #[error("cannot register the cluster agent: {0}")]
    Agent(String),
}

/// Why a registry operation failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No live agent is registered under the name.
    #[error("unknown name {0:?}")]
    UnknownName(String),
    /// The name belongs to an agent of a live node incarnation.
    #[error("name {name:?} is taken by node {owner}")]
    NameTaken {
        /// The name.
        name: String,
        /// Who owns it.
        owner: NodeKey,
    },
    /// The name is not dotted tokens of `[A-Za-z0-9_-]`.
    #[error("invalid name {0:?}")]
    InvalidName(String),
    /// The agent is not one of this node's (registration is by the owning node).
    #[error("the agent is not exposed by this node incarnation")]
    NotLocal,
    /// The cluster was built without a registry.
    #[error("this cluster has no registry")]
    Disabled,
    /// The key-value store did not answer (NATS or JetStream unavailable, timeout).
    #[error("registry unavailable: {0}")]
    Unavailable(String),
    /// The cluster handle was closed.
    #[error("cluster closed")]
    Closed,
}

/// Why a remote spawn failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The node id or factory name is not a valid token.
    #[error("invalid node id or factory name")]
    InvalidName,
    /// No node with that id answers (not running, or cut off).
    #[error("node {0:?} does not answer")]
    NoNode(String),
    /// The node does not offer the factory.
    #[error("node {node:?} has no factory {factory:?}")]
    UnknownFactory {
        /// The node.
        node: String,
        /// The factory.
        factory: String,
    },
    /// The factory failed (its message).
    #[error("factory failed: {0}")]
    Factory(String),
    /// No answer within the timeout (the child may still have been started on that node:
    /// see the crate's Limits).
    #[error("no answer within the timeout")]
    Timeout,
    /// The answer did not decode.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// No live node offers the factory (placement).
    #[error("no live node offers factory {0:?}")]
    NoPlacement(String),
    /// The cluster handle was closed.
    #[error("cluster closed")]
    Closed,
}
