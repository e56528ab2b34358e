//! The membership view of one node: a sans-IO state machine fed with heartbeats, leave
//! messages and the current time; it answers with the [`Change`]s to announce.
//!
//! # Ground rules
//!
//! - A member is a node *incarnation* `(id, incarnation)`. It is **up** from its first
//!   heartbeat heard until one of: its leave message ([`DownReason::Left`]); no heartbeat
//!   for `bound` ([`DownReason::Timeout`]); a heartbeat of another incarnation of the same id
//!   ([`DownReason::Restarted`]); this node's own rejoin ([`DownReason::LocalRejoin`]).
//! - **Down is final**: an incarnation that was down is remembered (a tombstone) and never
//!   comes up again in this view. Its later heartbeats (a partition healed, a process that
//!   hung and resumed) are answered by [`Outcome::evict`]: the caller tells that node, which
//!   rejoins as a new incarnation. So every incarnation has at most one `Up` and at most one
//!   `Down`, in that order, and watchers / registry cleanups keyed on an incarnation run once.
//! - The machine never reads the clock: `now` is passed in (tests drive it with made-up
//!   instants).
//! - [`Membership::rejoin`] (this node was cut off, or was told it is down) starts a new
//!   view: every member is down for this node, and the tombstones are forgotten.
//! - Tombstones are kept for the life of the view (one small entry per incarnation that ever
//!   went down; see the crate's Limits).

use crate::event::DownReason;
use crate::node::{NodeInfo, NodeKey};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// A change of the view, to announce in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The incarnation is up.
    Up(NodeInfo),
    /// The incarnation is down.
    Down(NodeKey, DownReason),
}

/// What a heartbeat produced.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Changes to announce, in order.
    pub changes: Vec<Change>,
    /// The sender is an incarnation that is down here: tell it to rejoin.
    pub evict: bool,
}

#[derive(Debug)]
struct Member {
    info: NodeInfo,
    last_heard: Instant,
}

/// The view (see the ground rules).
#[derive(Debug)]
pub(crate) struct Membership {
    me: String,
    bound: Duration,
    up: BTreeMap<String, Member>,
    down: HashMap<NodeKey, DownReason>,
}

impl Membership {
    /// An empty view for node `me`, declaring silent members down after `bound`.
    pub(crate) fn new(me: &str, bound: Duration) -> Self {
        Membership {
            me: me.to_owned(),
            bound,
            up: BTreeMap::new(),
            down: HashMap::new(),
        }
    }

    /// A heartbeat of `info` heard at `now`.
    pub(crate) fn heartbeat(&mut self, now: Instant, info: &NodeInfo) -> Outcome {
        let mut out = Outcome::default();
        if info.id == self.me {
            return out;
        }
        let key = info.key();
        if self.down.contains_key(&key) {
            out.evict = true;
            return out;
        }
        match self.up.get_mut(&info.id) {
            Some(m) if m.info.incarnation == info.incarnation => {
                m.last_heard = now;
                if m.info != *info {
                    // Metadata or factories changed: kept, not announced.
                    m.info = info.clone();
                }
            }
            Some(m) => {
                let old = m.info.key();
                self.down.insert(old.clone(), DownReason::Restarted);
                out.changes.push(Change::Down(old, DownReason::Restarted));
                *m = Member {
                    info: info.clone(),
                    last_heard: now,
                };
                out.changes.push(Change::Up(info.clone()));
            }
            None => {
                self.up.insert(
                    info.id.clone(),
                    Member {
                        info: info.clone(),
                        last_heard: now,
                    },
                );
                out.changes.push(Change::Up(info.clone()));
            }
        }
        out
    }

    /// `key` announced that it leaves.
    pub(crate) fn leave(&mut self, key: &NodeKey) -> Option<Change> {
        self.remove_if(key, DownReason::Left)
    }

    /// Declares down every member not heard for `bound` before `now`.
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<Change> {
        let silent: Vec<NodeKey> = self
            .up
            .values()
            .filter(|m| now.saturating_duration_since(m.last_heard) >= self.bound)
            .map(|m| m.info.key())
            .collect();
        silent
            .iter()
            .filter_map(|k| self.remove_if(k, DownReason::Timeout))
            .collect()
    }

    /// This node rejoins as a new incarnation: every member is down for it, and every
    /// tombstone is forgotten — the new incarnation starts with an empty view (the members it
    /// lost may still be up for the others: they are heard again and come up again).
    pub(crate) fn rejoin(&mut self) -> Vec<Change> {
        let all: Vec<NodeKey> = self.up.values().map(|m| m.info.key()).collect();
        let changes = all
            .iter()
            .filter_map(|k| self.remove_if(k, DownReason::LocalRejoin))
            .collect();
        self.down.clear();
        changes
    }

    /// Whether `key` is up in this view.
    pub(crate) fn is_up(&self, key: &NodeKey) -> bool {
        self.up
            .get(&key.id)
            .is_some_and(|m| m.info.incarnation == key.incarnation)
    }

    /// Whether `key` was up here and is down.
    pub(crate) fn is_down(&self, key: &NodeKey) -> bool {
        self.down.contains_key(key)
    }

    /// Why `key` is down, if it is.
    pub(crate) fn down_reason(&self, key: &NodeKey) -> Option<DownReason> {
        self.down.get(key).copied()
    }

    /// The members up, by id.
    pub(crate) fn members(&self) -> Vec<NodeInfo> {
        self.up.values().map(|m| m.info.clone()).collect()
    }

    fn remove_if(&mut self, key: &NodeKey, reason: DownReason) -> Option<Change> {
        if !self.is_up(key) {
            // Never heard, or down already: remember it so it cannot come up later.
            self.down.entry(key.clone()).or_insert(reason);
            return None;
        }
        self.up.remove(&key.id);
        self.down.insert(key.clone(), reason);
        Some(Change::Down(key.clone(), reason))
    }
}

#[cfg(test)]
mod tests;
