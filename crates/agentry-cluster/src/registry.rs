//! The registry of named agents: global names → [`AgentRef`], in a JetStream key-value
//! bucket shared by the cluster (`agentry-cluster-<cluster>`, file storage, one replica).
//!
//! # Ground rules
//!
//! - A name is held by one agent of one node incarnation. [`Cluster::register`] creates the
//!   key with the bucket's atomic `create`: of two nodes registering one name at once, one
//!   wins and the other gets [`RegistryError::NameTaken`] with the owner. A name whose
//!   holder's incarnation is down in this node's view is taken over with an atomic
//!   compare-and-set on the revision read (two takers: one wins).
//! - Names vanish with their holder: when an exposed agent finishes, its node deletes its
//!   names; when a node incarnation goes down, **every** node that sees it down deletes its
//!   entries (compare-and-set on the revision read, so a name re-registered meanwhile is
//!   kept). Until then, [`Cluster::lookup`] already answers
//!   [`RegistryError::UnknownName`] for a holder that is down in the asking node's view.
//! - Service names ([`Cluster::register_service`]) have one entry per instance
//!   (`s.<name>.<node>.<incarnation>.<key>`), never conflict, and vanish the same way;
//!   [`Cluster::lookup_service`] lists the live instances. Sending to the service is the
//!   gateway's business: the instances subscribe the same global mbox with a queue group
//!   (`Gateway::subscribe_queue` / `serve`), and each message reaches one of them.
//! - Why a KV bucket and not heartbeats: names need an atomic conflict check, which a
//!   broadcast cannot give; NATS' per-key TTL (server 2.11) is not used, because the
//!   servers this project runs on (Debian's 2.9) lack it — removal is driven by the
//!   membership view instead, which also makes it faster than any TTL (the failure bound).
//! - The bucket lives on one NATS server (one replica): while that server is unreachable,
//!   registry operations fail with [`RegistryError::Unavailable`]; membership and watches do
//!   not depend on it.

use crate::cluster::{Cluster, Inner};
use crate::error::{RegistryError, StartError};
use crate::node::{AgentRef, NodeKey, valid_name};
use crate::wire::{decode, encode};
use async_nats::jetstream::{self, kv};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// A registry entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Record {
    name: String,
    agent: AgentRef,
}

/// Opens (or creates) the cluster's bucket.
pub(crate) fn open_bucket(
    rt: &tokio::runtime::Handle,
    client: &async_nats::Client,
    cluster: &str,
    timeout: Duration,
) -> Result<kv::Store, StartError> {
    let client = client.clone();
    let bucket = format!("agentry-cluster-{cluster}");
    // Right after the servers start, JetStream may still elect its leader: retry.
    let fut = async move {
        let js = jetstream::new(client);
        loop {
            if let Ok(store) = js.get_key_value(bucket.clone()).await {
                return store;
            }
            // The bucket's stream is made by hand: `create_key_value` of async-nats 0.51 sends
            // fields that nats-server 2.9 rejects, in an answer the client cannot parse.
            let created = js
                .get_or_create_stream(jetstream::stream::Config {
                    name: format!("KV_{bucket}"),
                    subjects: vec![format!("$KV.{bucket}.>")],
                    max_messages_per_subject: 1,
                    storage: jetstream::stream::StorageType::File,
                    num_replicas: 1,
                    discard: jetstream::stream::DiscardPolicy::New,
                    allow_rollup: true,
                    deny_delete: true,
                    allow_direct: true,
                    ..Default::default()
                })
                .await;
            if let Err(e) = created {
                tracing::debug!(error = %e, "agentry-cluster: registry bucket not ready");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(tokio::time::timeout(timeout, fut).await);
    });
    match rx.recv_timeout(timeout + Duration::from_secs(1)) {
        Ok(Ok(store)) => Ok(store),
        _ => Err(StartError::Registry(
            "no JetStream key-value bucket within the timeout".into(),
        )),
    }
}

fn name_key(name: &str) -> String {
    format!("n.{name}")
}

fn service_key(name: &str, agent: &AgentRef) -> String {
    format!(
        "s.{name}.{}.{}.{}",
        agent.node.id, agent.node.incarnation, agent.key
    )
}

/// Whether the holder of a record is gone as far as this node knows.
fn holder_gone(inner: &Inner, holder: &NodeKey) -> bool {
    let me = inner.my_key();
    if holder.id == me.id {
        return holder.incarnation != me.incarnation;
    }
    inner
        .view
        .lock()
        .expect("invariant: no panic under this lock")
        .is_down(holder)
}

impl Cluster {
    fn store(&self) -> Result<kv::Store, RegistryError> {
        if self.inner.is_closed() {
            return Err(RegistryError::Closed);
        }
        self.inner.kv.clone().ok_or(RegistryError::Disabled)
    }

    fn check_local(&self, agent: &AgentRef) -> Result<(), RegistryError> {
        if self.inner.locals.is_alive(agent) && agent.node == self.inner.my_key() {
            Ok(())
        } else {
            Err(RegistryError::NotLocal)
        }
    }

    /// Registers the exposed local agent `agent` under the global `name` (dotted tokens of
    /// `[A-Za-z0-9_-]`). Errors: [`RegistryError::NameTaken`] if a live holder has it,
    /// [`RegistryError::NotLocal`] if `agent` is not a live agent exposed by this node
    /// incarnation.
    pub fn register(&self, name: &str, agent: &AgentRef) -> Result<(), RegistryError> {
        if !valid_name(name) {
            return Err(RegistryError::InvalidName(name.to_owned()));
        }
        let store = self.store()?;
        self.check_local(agent)?;
        let record = encode(&Record {
            name: name.to_owned(),
            agent: agent.clone(),
        });
        let key = name_key(name);
        let inner = Arc::clone(&self.inner);
        let owned = name.to_owned();
        self.inner
            .block(self.inner.timeout, async move {
                for _ in 0..8 {
                    match store.create(&key, record.clone()).await {
                        Ok(_) => return Ok(()),
                        Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {}
                        Err(e) => return Err(RegistryError::Unavailable(e.to_string())),
                    }
                    let entry = store
                        .entry(key.clone())
                        .await
                        .map_err(|e| RegistryError::Unavailable(e.to_string()))?;
                    // Deleted meanwhile: try to create again.
                    let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
                        continue;
                    };
                    let Some(held) = decode::<Record>(&entry.value) else {
                        // Not ours to judge: a malformed entry is overwritten.
                        if store
                            .update(&key, record.clone(), entry.revision)
                            .await
                            .is_ok()
                        {
                            return Ok(());
                        }
                        continue;
                    };
                    if !holder_gone(&inner, &held.agent.node) {
                        return Err(RegistryError::NameTaken {
                            name: owned.clone(),
                            owner: held.agent.node,
                        });
                    }
                    if store
                        .update(&key, record.clone(), entry.revision)
                        .await
                        .is_ok()
                    {
                        return Ok(());
                    }
                }
                Err(RegistryError::Unavailable("contention".into()))
            })
            .unwrap_or_else(|| Err(RegistryError::Unavailable("timed out".into())))?;
        self.inner.locals.add_name(agent, name);
        Ok(())
    }

    /// The agent registered under `name`: [`RegistryError::UnknownName`] if none is, or if
    /// its holder's node incarnation is down in this node's view.
    pub fn lookup(&self, name: &str) -> Result<AgentRef, RegistryError> {
        if !valid_name(name) {
            return Err(RegistryError::InvalidName(name.to_owned()));
        }
        let store = self.store()?;
        let key = name_key(name);
        let got = self
            .inner
            .block(self.inner.timeout, async move { store.get(key).await })
            .ok_or_else(|| RegistryError::Unavailable("timed out".into()))?
            .map_err(|e| RegistryError::Unavailable(e.to_string()))?;
        let unknown = || RegistryError::UnknownName(name.to_owned());
        let record = got.and_then(|b| decode::<Record>(&b)).ok_or_else(unknown)?;
        if holder_gone(&self.inner, &record.agent.node) {
            return Err(unknown());
        }
        Ok(record.agent)
    }

    /// Removes `name` if this node holds it; `Ok(false)` if it does not.
    pub fn unregister(&self, name: &str) -> Result<bool, RegistryError> {
        if !valid_name(name) {
            return Err(RegistryError::InvalidName(name.to_owned()));
        }
        let store = self.store()?;
        let me = self.inner.my_key();
        let key = name_key(name);
        self.inner
            .block(self.inner.timeout, async move {
                delete_if(&store, &key, |r| r.agent.node == me).await
            })
            .unwrap_or_else(|| Err(RegistryError::Unavailable("timed out".into())))
    }

    /// Adds the exposed local agent `agent` as an instance of the service `name` (no
    /// conflicts: one entry per instance).
    pub fn register_service(&self, name: &str, agent: &AgentRef) -> Result<(), RegistryError> {
        if !valid_name(name) {
            return Err(RegistryError::InvalidName(name.to_owned()));
        }
        let store = self.store()?;
        self.check_local(agent)?;
        let key = service_key(name, agent);
        let record = encode(&Record {
            name: name.to_owned(),
            agent: agent.clone(),
        });
        let k = key.clone();
        self.inner
            .block(
                self.inner.timeout,
                async move { store.put(k, record).await },
            )
            .ok_or_else(|| RegistryError::Unavailable("timed out".into()))?
            .map_err(|e| RegistryError::Unavailable(e.to_string()))?;
        self.inner.locals.add_name(agent, &key[2..]);
        Ok(())
    }

    /// The live instances of the service `name` (empty if none).
    pub fn lookup_service(&self, name: &str) -> Result<Vec<AgentRef>, RegistryError> {
        if !valid_name(name) {
            return Err(RegistryError::InvalidName(name.to_owned()));
        }
        let store = self.store()?;
        let prefix = format!("s.{name}.");
        let owned = name.to_owned();
        let records = self
            .inner
            .block(self.inner.timeout, async move {
                let mut out = Vec::new();
                let mut keys = store
                    .keys()
                    .await
                    .map_err(|e| RegistryError::Unavailable(e.to_string()))?;
                // A set: the key listing may repeat a key while the bucket changes.
                let mut matching = std::collections::BTreeSet::new();
                while let Some(k) = keys.next().await {
                    let k = k.map_err(|e| RegistryError::Unavailable(e.to_string()))?;
                    if k.starts_with(&prefix) {
                        matching.insert(k);
                    }
                }
                for k in matching {
                    if let Ok(Some(b)) = store.get(k).await
                        && let Some(r) = decode::<Record>(&b)
                        && r.name == owned
                    {
                        out.push(r.agent);
                    }
                }
                Ok(out)
            })
            .unwrap_or_else(|| Err(RegistryError::Unavailable("timed out".into())))?;
        let mut live: Vec<AgentRef> = records
            .into_iter()
            .filter(|a| !holder_gone(&self.inner, &a.node))
            .collect();
        live.sort_by(|a, b| (&a.node, a.key).cmp(&(&b.node, b.key)));
        Ok(live)
    }
}

/// Deletes `key` if its record satisfies `whose` (compare-and-set on the revision read).
async fn delete_if(
    store: &kv::Store,
    key: &str,
    whose: impl Fn(&Record) -> bool,
) -> Result<bool, RegistryError> {
    let entry = store
        .entry(key.to_owned())
        .await
        .map_err(|e| RegistryError::Unavailable(e.to_string()))?;
    let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
        return Ok(false);
    };
    match decode::<Record>(&entry.value) {
        Some(r) if whose(&r) => Ok(store
            .delete_expect_revision(key, Some(entry.revision))
            .await
            .is_ok()),
        _ => Ok(false),
    }
}

/// Deletes every entry held by `node` (it went down), in the background.
pub(crate) fn forget_node(inner: &Arc<Inner>, node: NodeKey) {
    let Some(store) = inner.kv.clone() else {
        return;
    };
    inner.rt.spawn(async move {
        let Ok(mut keys) = store.keys().await else {
            return;
        };
        let mut all = std::collections::BTreeSet::new();
        while let Some(Ok(k)) = keys.next().await {
            all.insert(k);
        }
        for k in all {
            let _ = delete_if(&store, &k, |r| r.agent.node == node).await;
        }
    });
}

/// Deletes the names (`n.`/`s.` keys without their prefix letter) held by `agent`, which
/// finished, in the background.
pub(crate) fn forget_names(inner: &Arc<Inner>, agent: AgentRef, names: Vec<String>) {
    let Some(store) = inner.kv.clone() else {
        return;
    };
    if names.is_empty() {
        return;
    }
    inner.rt.spawn(async move {
        for n in names {
            // A service entry was recorded as its key without "s."; a plain name as itself.
            for key in [format!("n.{n}"), format!("s.{n}")] {
                let _ = delete_if(&store, &key, |r| {
                    r.agent.node == agent.node && r.agent.key == agent.key
                })
                .await;
            }
        }
    });
}
