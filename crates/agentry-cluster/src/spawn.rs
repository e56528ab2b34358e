//! Remote spawn: a node offers agent **factories** by name; any node starts an agent from a
//! factory on a chosen node and gets its [`AgentRef`] back.
//!
//! # Ground rules
//!
//! - A factory (`Fn(&EnvHandle, &[u8]) -> Result<Spawned, String>`) registers a coop in the
//!   node's environment and returns the agent to expose, its coop and its global mbox name;
//!   the arguments are bytes chosen by the application (for example postcard).
//!   [`Cluster::add_factory`] announces the factory's name in the node's heartbeats
//!   ([`NodeInfo::factories`](crate::NodeInfo::factories)), which placement uses.
//! - [`Cluster::spawn`] is a NATS request to the node (`spawn.<node>`): the node runs the
//!   factory on a blocking thread, exposes the agent, and answers. Every request ends in one
//!   answer or one typed [`SpawnError`]. A timeout does not cancel: the agent may have been
//!   started (Limits).
//! - [`Cluster::stop_remote`] asks the owning node to deregister the coop of a spawned agent
//!   (`DeregReason::Normal`); its watchers then hear `Exited(Normal)`.

use crate::cluster::{Cluster, Inner};
use crate::error::SpawnError;
use crate::node::{AgentRef, valid_token};
use crate::wire::{SpawnAnswer, SpawnRequest, StopRequest, decode, encode};
use agentry::{CoopId, EnvHandle, Mbox};
use futures_util::StreamExt;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

/// What a factory started: the agent to expose, its coop (deregistered by
/// [`Cluster::stop_remote`]) and the global mbox name that reaches it.
#[derive(Debug, Clone)]
pub struct Spawned {
    /// The agent.
    pub mbox: Mbox,
    /// Its coop.
    pub coop: CoopId,
    /// The global mbox name it is subscribed under (may be empty).
    pub address: String,
}

/// A factory: starts an agent in `env` from `args`.
pub type Factory = dyn Fn(&EnvHandle, &[u8]) -> Result<Spawned, String> + Send + Sync;

#[derive(Default)]
pub(crate) struct Factories(Mutex<BTreeMap<String, Arc<Factory>>>);

impl fmt::Debug for Factories {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.0
                    .lock()
                    .expect("invariant: no panic under this lock")
                    .keys(),
            )
            .finish()
    }
}

impl Cluster {
    /// Offers `factory` under `name` (one token) to remote spawn requests, replacing a
    /// factory of that name; announced at once in an extra heartbeat.
    pub fn add_factory(
        &self,
        name: &str,
        factory: impl Fn(&EnvHandle, &[u8]) -> Result<Spawned, String> + Send + Sync + 'static,
    ) -> Result<(), SpawnError> {
        if !valid_token(name) {
            return Err(SpawnError::InvalidName);
        }
        let names: Vec<String> = {
            let mut f = self
                .inner
                .factories
                .0
                .lock()
                .expect("invariant: no panic under this lock");
            f.insert(name.to_owned(), Arc::new(factory));
            f.keys().cloned().collect()
        };
        let me = {
            let mut me = self
                .inner
                .me
                .lock()
                .expect("invariant: no panic under this lock");
            me.factories = names;
            me.clone()
        };
        // Announced at once rather than with the next periodic heartbeat.
        let (client, subject) = (self.inner.client.clone(), self.inner.subject("hb"));
        self.inner.rt.spawn(async move {
            let _ = client.publish(subject, encode(&me)).await;
        });
        Ok(())
    }

    /// Starts an agent from factory `factory` with `args` on node `node` (an id; its
    /// current incarnation answers) and returns it, exposed by that node. Blocks at most the
    /// cluster's timeout.
    pub fn spawn(&self, node: &str, factory: &str, args: &[u8]) -> Result<AgentRef, SpawnError> {
        if !valid_token(node) || !valid_token(factory) {
            return Err(SpawnError::InvalidName);
        }
        if self.inner.is_closed() {
            return Err(SpawnError::Closed);
        }
        let request = encode(&SpawnRequest {
            factory: factory.to_owned(),
            args: args.to_vec(),
        });
        let subject = self.inner.subject(&format!("spawn.{node}"));
        let client = self.inner.client.clone();
        let timeout = self.inner.timeout;
        let answer = self
            .inner
            .block(timeout, async move {
                tokio::time::timeout(timeout, client.request(subject, request)).await
            })
            .ok_or(SpawnError::Timeout)?
            .map_err(|_| SpawnError::Timeout)?;
        let m = answer.map_err(|e| match e.kind() {
            async_nats::client::RequestErrorKind::NoResponders => {
                SpawnError::NoNode(node.to_owned())
            }
            _ => SpawnError::Timeout,
        })?;
        match decode::<SpawnAnswer>(&m.payload) {
            Some(SpawnAnswer::Started(r)) => Ok(r),
            Some(SpawnAnswer::UnknownFactory) => Err(SpawnError::UnknownFactory {
                node: node.to_owned(),
                factory: factory.to_owned(),
            }),
            Some(SpawnAnswer::Failed(e)) => Err(SpawnError::Factory(e)),
            None => Err(SpawnError::Malformed("spawn answer".into())),
        }
    }

    /// Asks the node of `agent` to deregister the coop it was spawned in (nothing happens
    /// for an agent exposed without a coop, or gone). Does not wait.
    pub fn stop_remote(&self, agent: &AgentRef) {
        if self.inner.is_closed() {
            return;
        }
        let subject = self.inner.subject(&format!("stop.{}", agent.node.id));
        let body = encode(&StopRequest {
            incarnation: agent.node.incarnation,
            key: agent.key,
        });
        let client = self.inner.client.clone();
        self.inner.rt.spawn(async move {
            let _ = client.publish(subject, body).await;
        });
    }
}

/// Answers the spawn requests addressed to this node.
pub(crate) async fn serve(weak: Weak<Inner>, mut sub: async_nats::Subscriber) {
    while let Some(m) = sub.next().await {
        let Some(inner) = weak.upgrade() else { return };
        let (Some(req), Some(reply)) = (decode::<SpawnRequest>(&m.payload), m.reply) else {
            inner.counters.inc(&inner.counters.malformed);
            continue;
        };
        let factory = inner
            .factories
            .0
            .lock()
            .expect("invariant: no panic under this lock")
            .get(&req.factory)
            .cloned();
        let answer = match factory {
            None => SpawnAnswer::UnknownFactory,
            Some(f) => {
                let env = inner.env.clone();
                let started = tokio::task::spawn_blocking(move || f(&env, &req.args)).await;
                match started {
                    Ok(Ok(s)) => {
                        inner.counters.inc(&inner.counters.spawned);
                        let cluster = Cluster {
                            inner: Arc::clone(&inner),
                        };
                        SpawnAnswer::Started(cluster.expose(&s.mbox, &s.address, Some(s.coop)))
                    }
                    Ok(Err(e)) => SpawnAnswer::Failed(e),
                    Err(e) => SpawnAnswer::Failed(format!("factory panicked: {e}")),
                }
            }
        };
        let _ = inner.client.publish(reply, encode(&answer)).await;
    }
}
