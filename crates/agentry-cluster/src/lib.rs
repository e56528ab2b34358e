//! # agentry-cluster
//!
//! Agentry processes as one **cluster** over NATS (issue 14): every process is a **node**
//! that joins a named cluster; nodes see each other come and go ([`NodeUp`] / [`NodeDown`]),
//! find agents by global name ([`Cluster::register`] / [`Cluster::lookup`]), watch agents of
//! other nodes ([`Cluster::watch`] → [`RemoteTerminated`]), start agents on other nodes from
//! named factories ([`Cluster::spawn`]) and supervise them across nodes
//! ([`remote_child`]). Messages to agents of other nodes travel through `agentry-remote`'s
//! gateway: an [`AgentRef`] carries the global mbox name of its agent.
//!
//! ```no_run
//! use agentry::{Agent, Ctx, Define, DefineError, Env};
//! use agentry_cluster::{Cluster, NodeDown, NodeUp};
//! use std::sync::Arc;
//!
//! /// Logs the members coming and going.
//! struct Log(agentry::MultiMbox);
//! impl Agent for Log {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.from(&self.0)
//!             .on(|_: &mut Log, _: &mut Ctx<Log>, up: Arc<NodeUp>| println!("up: {}", up.0.id))?;
//!         def.from(&self.0)
//!             .on(|_: &mut Log, _: &mut Ctx<Log>, d: Arc<NodeDown>| {
//!                 println!("down: {} ({:?})", d.node, d.reason)
//!             })?;
//!         Ok(())
//!     }
//! }
//!
//! let env = Env::new().expect("env");
//! let cluster = Cluster::builder("shop", "node-1")
//!     .meta("zone", "a")
//!     .join(env.handle(), "nats://127.0.0.1:4222,nats://127.0.0.1:4223")
//!     .expect("joined");
//! env.handle().register_agent(Log(cluster.events())).expect("registered");
//! # cluster.leave();
//! ```
//!
//! ## Map of the crate
//!
//! - [`guide`]: the chapter on the cluster (the model, with examples).
//! - [`Cluster`] / [`ClusterBuilder`]: join ([`ClusterBuilder::join`]), the view
//!   ([`Cluster::members`], [`Cluster::events`]: [`NodeUp`], [`NodeDown`] with a
//!   [`DownReason`], [`Rejoined`]), [`Cluster::leave`], counters ([`ClusterStats`]).
//!   Nodes are [`NodeInfo`] / [`NodeKey`] (id + incarnation).
//! - Agents: [`Cluster::expose`] → [`AgentRef`]; registry: [`Cluster::register`],
//!   [`Cluster::lookup`], [`Cluster::unregister`], [`Cluster::register_service`],
//!   [`Cluster::lookup_service`] ([`RegistryError`]).
//! - Remote death watch: [`Cluster::watch`], [`Cluster::unwatch`] → [`RemoteTerminated`]
//!   with a [`RemoteExit`].
//! - Remote spawn: [`Cluster::add_factory`] ([`Spawned`]), [`Cluster::spawn`],
//!   [`Cluster::stop_remote`] ([`SpawnError`]); supervision across nodes: [`remote_child`]
//!   ([`RemoteChildSpec`], [`RemoteChildHandle`]).
//!
//! ## Design, in one paragraph
//!
//! Membership is **heartbeats on a NATS subject** (`agentry.cluster.<name>.hb`, every
//! `bound / 4` by default), a leave message on graceful shutdown, and a per-node view that
//! declares a member down after `bound` (default 2 s, so a killed process is reported down
//! within 3 s) — sans-IO, in `membership.rs`. A JetStream key-value bucket with TTL was the
//! alternative for the member list; it was not chosen because a KV watch adds a JetStream
//! round trip to every heartbeat, per-key TTL needs nats-server 2.11 (Debian ships 2.9), and
//! a bucket-wide max age cannot express "this node's entry expires". The **registry** does use
//! a KV bucket, because names need an atomic conflict check (`create`, compare-and-set).
//! The full guarantees are §20 of `docs/SEMANTICS.md`.
//!
//! ## Under a partition (what is not guaranteed)
//!
//! - A node cut off from NATS, and the nodes on the other side of a partition between NATS
//!   servers, are reported down after the bound: both sides see the other `Timeout`, their
//!   watches fire `NodeDown`, their names vanish. Nothing tells a slow node from a dead one.
//! - A node that does not hear its own heartbeats for the bound while its NATS connection is
//!   down rejoins as a new incarnation ([`Rejoined`]); a node told that it is down elsewhere
//!   (its heartbeats reached a node that had declared it down) does the same. Its old
//!   incarnation's names are gone and must be registered again; its agents did not stop —
//!   two sides of a partition may both run "the same" supervised child (split brain).
//! - The registry bucket has one replica: while its server is away, registry calls fail with
//!   [`RegistryError::Unavailable`].
//!
//! ## Limits
//!
//! - [`RemoteTerminated`] is the cluster's own message, not core's `Terminated`: core's
//!   `WatchId` and `WatchTarget` cannot name a remote agent, and `ExitReason` has no
//!   `NodeDown`. `ctx.watch(&remote)` is therefore `cluster.watch(ctx.mbox(), &remote)`.
//! - Each node keeps the reason of the last [`KEEP_DEPARTED`] agents it exposed that are gone
//!   (a watch of an older one fires [`RemoteExit::Unknown`]), and a tombstone for every node
//!   incarnation it saw down (small entries, never pruned: they grow with restarts, not with
//!   traffic). A `Gone` publication finds its watches through an index by target; a node
//!   going down scans the watched targets, and registry cleanup the keys of the bucket.
//! - Every node receives every `gone` publication of the cluster (one subject).
//! - A remote spawn that times out may have started its agent; nothing stops it.
//! - After a rejoin, names are not re-registered automatically.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod cluster;
mod error;
mod event;
pub mod guide;
mod membership;
mod node;
mod registry;
mod sentinel;
mod spawn;
mod stats;
mod supervise;
mod watch;
mod wire;

pub use crate::{
    cluster::{Cluster, ClusterBuilder, Rejoined},
    error::{RegistryError, SpawnError, StartError},
    event::{DownReason, NodeDown, NodeUp, RemoteExit, RemoteTerminated, RemoteWatchId},
    node::{AgentRef, NodeInfo, NodeKey},
    sentinel::KEEP_DEPARTED,
    spawn::{Factory, Spawned},
    stats::ClusterStats,
    supervise::{RemoteChild, RemoteChildHandle, RemoteChildSpec, remote_child},
};
