//! Remote death watch: an agent learns, by a [`RemoteTerminated`] message on its own mbox,
//! that an agent of another node is gone — it finished, or its node went down.
//!
//! # Ground rules
//!
//! - [`Cluster::watch`] records the watch **before** anything can fire it, then: a target of
//!   this node is answered from the local table; a target whose node incarnation is down in
//!   this node's view fires at once (`NodeDown`); otherwise the owner is asked (a NATS
//!   request) — `Gone` fires with the agent's reason, `Unknown` fires `Unknown`, `Alive`
//!   waits. While it waits, three things can fire it: the owner's `Gone` publication (every
//!   node subscribes `gone` at start), the `NodeDown` of the owner incarnation (membership),
//!   and the owner's answer to a re-check sent every `5 × bound` (which covers a `Gone`
//!   publication lost while a connection was down).
//! - Firing removes the watch from the table under its lock and only the remover sends:
//!   **exactly one** `RemoteTerminated` per watch, whichever path comes first, unless
//!   [`Cluster::unwatch`] removed it first.
//! - A watch of an owner that never answers and never appears in the view (a reference to a
//!   node that does not exist) fires `Unknown` after the bound.
//! - The sentinel (`sentinel.rs`) death-watches every watcher; when one finishes, its remote
//!   watches are dropped unfired — nothing is kept for a watcher nobody can hear.

use crate::cluster::{Cluster, Inner};
use crate::event::{DownReason, RemoteExit, RemoteTerminated, RemoteWatchId};
use crate::node::{AgentRef, NodeKey};
use crate::wire::{Gone, WatchAnswer, WatchQuery, decode, encode};
use agentry::{Mbox, MboxId};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Entry {
    watcher: Mbox,
    target: AgentRef,
}

/// The remote watches this node made.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    next: AtomicU64,
    table: Mutex<Table>,
}

/// The watches by id, and their ids by target: a `Gone` publication (every node receives
/// every one) finds the watches of its agent without scanning the others.
#[derive(Debug, Default)]
struct Table {
    entries: HashMap<u64, Entry>,
    by_target: HashMap<(NodeKey, u64), Vec<u64>>,
    /// Watch ids by watcher: the watches of a watcher that finished are dropped with it.
    by_watcher: HashMap<MboxId, Vec<u64>>,
}

impl Table {
    /// Records watch `id`; true if its watcher had no other watch (the sentinel then
    /// death-watches the watcher).
    fn insert(&mut self, id: u64, entry: Entry) -> bool {
        let target = (entry.target.node.clone(), entry.target.key);
        self.by_target.entry(target).or_default().push(id);
        let of_watcher = self.by_watcher.entry(entry.watcher.id()).or_default();
        of_watcher.push(id);
        let first = of_watcher.len() == 1;
        self.entries.insert(id, entry);
        first
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        forget(
            &mut self.by_target,
            (entry.target.node.clone(), entry.target.key),
            id,
        );
        forget(&mut self.by_watcher, entry.watcher.id(), id);
        Some(entry)
    }

    /// Removes every watch of `watcher`.
    fn remove_watcher(&mut self, watcher: MboxId) {
        for id in self.by_watcher.remove(&watcher).unwrap_or_default() {
            self.remove(id);
        }
    }

    fn of_target(&self, node: &NodeKey, key: u64) -> Vec<u64> {
        self.by_target
            .get(&(node.clone(), key))
            .cloned()
            .unwrap_or_default()
    }

    /// The watches of every agent of `node` (a node going down is rare: one pass over the
    /// watched targets).
    fn of_node(&self, node: &NodeKey) -> Vec<u64> {
        self.by_target
            .iter()
            .filter(|((n, _), _)| n == node)
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect()
    }
}

/// Takes `id` out of the list of `key`, and the list out of `index` once it is empty.
fn forget<K: std::hash::Hash + Eq>(index: &mut HashMap<K, Vec<u64>>, key: K, id: u64) {
    if let Some(ids) = index.get_mut(&key) {
        ids.retain(|other| *other != id);
        if ids.is_empty() {
            index.remove(&key);
        }
    }
}

impl Watches {
    /// The watcher `watcher` finished: its watches go, unfired (nobody would read them).
    pub(crate) fn watcher_gone(&self, watcher: MboxId) {
        self.lock().remove_watcher(watcher);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .expect("invariant: no panic under this lock")
    }

    fn contains(&self, id: u64) -> bool {
        self.lock().entries.contains_key(&id)
    }

    /// Fires watch `id` if it is still there (exactly once: the remover sends).
    fn fire(&self, inner: &Inner, id: u64, reason: RemoteExit) {
        let entry = self.lock().remove(id);
        if let Some(e) = entry {
            inner.counters.inc(&inner.counters.terminated);
            e.watcher.send(RemoteTerminated {
                watch: RemoteWatchId(id),
                target: e.target,
                reason,
            });
        }
    }

    fn fire_all(&self, inner: &Inner, ids: Vec<u64>, reason: RemoteExit) {
        for id in ids {
            self.fire(inner, id, reason);
        }
    }

    /// `node` went down: fires every watch of its agents.
    pub(crate) fn node_down(&self, inner: &Inner, node: &NodeKey, reason: DownReason) {
        let ids = self.lock().of_node(node);
        self.fire_all(inner, ids, RemoteExit::NodeDown(reason));
    }

    /// Agent `key` of `node` is gone: fires its watches.
    pub(crate) fn gone(&self, inner: &Inner, node: &NodeKey, key: u64, reason: RemoteExit) {
        let ids = self.lock().of_target(node, key);
        self.fire_all(inner, ids, reason);
    }
}

impl Cluster {
    /// Watches the agent `target` (of any node, this one included) for `watcher`: when it is
    /// gone, `watcher` receives one [`RemoteTerminated`] — at once if it is gone already (see
    /// the module's ground rules). The watcher subscribes a handler for `RemoteTerminated`
    /// like for any message.
    pub fn watch(&self, watcher: &Mbox, target: &AgentRef) -> RemoteWatchId {
        let inner = &self.inner;
        let id = inner.watches.next.fetch_add(1, Ordering::Relaxed) + 1;
        let first_of_watcher = inner.watches.lock().insert(
            id,
            Entry {
                watcher: watcher.clone(),
                target: target.clone(),
            },
        );
        if first_of_watcher && let Some(s) = inner.sentinel.get() {
            s.send(crate::sentinel::TrackWatcher(watcher.clone()));
        }
        let me = inner.my_key();
        if target.node.id == me.id && target.node.incarnation == me.incarnation {
            match inner.locals.answer(target.node.incarnation, target.key) {
                WatchAnswer::Alive => {}
                WatchAnswer::Gone(r) => inner.watches.fire(inner, id, RemoteExit::Exited(r.into())),
                WatchAnswer::Unknown => inner.watches.fire(inner, id, RemoteExit::Unknown),
            }
            return RemoteWatchId(id);
        }
        let down = inner
            .view
            .lock()
            .expect("invariant: no panic under this lock")
            .down_reason(&target.node);
        if let Some(reason) = down {
            inner.watches.fire(inner, id, RemoteExit::NodeDown(reason));
        } else if target.node.id == me.id {
            // An earlier incarnation of this node: down for the others since this one began.
            inner
                .watches
                .fire(inner, id, RemoteExit::NodeDown(DownReason::LocalRejoin));
        } else {
            inner
                .rt
                .spawn(ask_owner(Arc::downgrade(inner), id, target.clone()));
        }
        RemoteWatchId(id)
    }

    /// Removes a remote watch; `false` if it already fired or was removed.
    pub fn unwatch(&self, watch: RemoteWatchId) -> bool {
        self.inner.watches.lock().remove(watch.0).is_some()
    }

    /// The remote watches waiting to fire.
    pub fn watch_count(&self) -> usize {
        self.inner.watches.lock().entries.len()
    }
}

/// Asks the owner of `target` until the watch fired or was removed (see the ground rules).
async fn ask_owner(weak: Weak<Inner>, id: u64, target: AgentRef) {
    let started = Instant::now();
    let query = encode(&WatchQuery {
        incarnation: target.node.incarnation,
        key: target.key,
    });
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if !inner.watches.contains(id) || inner.is_closed() {
            return;
        }
        let subject = inner.subject(&format!("watch.{}", target.node.id));
        let client = inner.client.clone();
        let (bound, timeout) = (inner.bound, inner.timeout);
        drop(inner);
        let answer = tokio::time::timeout(timeout, client.request(subject, query.clone())).await;
        let Some(inner) = weak.upgrade() else { return };
        let wait = match answer {
            Ok(Ok(m)) => match decode::<WatchAnswer>(&m.payload) {
                Some(WatchAnswer::Alive) => bound * 5,
                Some(WatchAnswer::Gone(r)) => {
                    inner.watches.fire(&inner, id, RemoteExit::Exited(r.into()));
                    return;
                }
                Some(WatchAnswer::Unknown) => {
                    inner.watches.fire(&inner, id, RemoteExit::Unknown);
                    return;
                }
                None => {
                    inner.counters.inc(&inner.counters.malformed);
                    bound
                }
            },
            // No responders, or no answer: the node is gone, unreachable, or not yet routed.
            _ => {
                let up = inner
                    .view
                    .lock()
                    .expect("invariant: no panic under this lock")
                    .is_up(&target.node);
                if !up && started.elapsed() >= bound {
                    let down = inner
                        .view
                        .lock()
                        .expect("invariant: no panic under this lock")
                        .down_reason(&target.node);
                    let reason = down.map_or(RemoteExit::Unknown, RemoteExit::NodeDown);
                    inner.watches.fire(&inner, id, reason);
                    return;
                }
                bound / 4
            }
        };
        drop(inner);
        tokio::time::sleep(wait.max(Duration::from_millis(10))).await;
    }
}

/// Fires the watches of agents whose owners published `Gone`.
pub(crate) async fn serve_gone(weak: Weak<Inner>, mut sub: async_nats::Subscriber) {
    while let Some(m) = sub.next().await {
        let Some(inner) = weak.upgrade() else { return };
        match decode::<Gone>(&m.payload) {
            Some(g) => {
                inner
                    .watches
                    .gone(&inner, &g.node, g.key, RemoteExit::Exited(g.reason.into()))
            }
            None => inner.counters.inc(&inner.counters.malformed),
        }
    }
}

#[cfg(test)]
mod tests;
