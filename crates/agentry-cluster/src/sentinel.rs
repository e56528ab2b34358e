//! The node's own agents as the cluster sees them: the table of *exposed* agents, and the
//! sentinel agent that death-watches them locally.
//!
//! # Ground rules
//!
//! - [`Cluster::expose`] gives a local agent a key (never reused by the process) and an
//!   [`AgentRef`]; the sentinel agent watches it with the core death watch. When the agent
//!   is gone, the sentinel records the reason in the table **first**, then fires the local
//!   remote-watches of it and publishes [`Gone`] on the `gone` subject, then deletes the
//!   agent's names from the registry. A watch query answered after the record sees `Gone`;
//!   one answered before it was sent before the `Gone` publication, whose subscription the
//!   querying node made at start — so a watcher hears of the departure one way or the other.
//! - The table keeps the reason of the last [`KEEP_DEPARTED`] departed agents (for watches
//!   made later: "already gone" with the real reason); older departures are forgotten, and a
//!   watch of one made now fires at once with [`RemoteExit::Unknown`] — still exactly once,
//!   and the table stays bounded by the live agents plus that many.

use crate::cluster::{Cluster, Inner};
use crate::event::RemoteExit;
use crate::node::AgentRef;
use crate::wire::{Gone, StopRequest, WatchAnswer, WatchQuery, decode, encode};
use agentry::{
    Agent, CoopId, Ctx, Define, DefineError, DeregReason, Mbox, MboxId, WatchId, watch::ExitReason,
    watch::Terminated,
};
use futures_util::StreamExt;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, Weak};

#[derive(Debug)]
struct Local {
    incarnation: u64,
    coop: Option<CoopId>,
    gone: Option<ExitReason>,
    names: Vec<String>,
}

/// The table of exposed agents (see the ground rules).
#[derive(Debug, Default)]
pub(crate) struct Locals {
    inner: Mutex<LocalsInner>,
}

#[derive(Debug, Default)]
struct LocalsInner {
    next_key: u64,
    agents: HashMap<u64, Local>,
    /// Keys of departed agents still in `agents`, oldest first.
    departed: VecDeque<u64>,
}

/// Departed agents whose reason a node remembers (see the ground rules).
pub const KEEP_DEPARTED: usize = 65_536;

impl Locals {
    fn lock(&self) -> std::sync::MutexGuard<'_, LocalsInner> {
        self.inner
            .lock()
            .expect("invariant: no panic under this lock")
    }

    /// Whether `r` is an exposed agent of this node that is not gone.
    pub(crate) fn is_alive(&self, r: &AgentRef) -> bool {
        self.lock()
            .agents
            .get(&r.key)
            .is_some_and(|l| l.incarnation == r.node.incarnation && l.gone.is_none())
    }

    /// Records that `r` holds `name` (deleted from the registry when `r` is gone).
    pub(crate) fn add_name(&self, r: &AgentRef, name: &str) {
        if let Some(l) = self.lock().agents.get_mut(&r.key) {
            l.names.push(name.to_owned());
        }
    }

    /// What a watch of `key` of `incarnation` should hear now.
    pub(crate) fn answer(&self, incarnation: u64, key: u64) -> WatchAnswer {
        match self.lock().agents.get(&key) {
            Some(l) if l.incarnation == incarnation => match l.gone {
                None => WatchAnswer::Alive,
                Some(r) => WatchAnswer::Gone(r.into()),
            },
            _ => WatchAnswer::Unknown,
        }
    }

    /// Records that agent `key` is gone for `reason` (forgetting the oldest departure beyond
    /// [`KEEP_DEPARTED`]); gives back its incarnation and the names it held, or `None` if it
    /// is not in the table or departed already.
    fn depart(&self, key: u64, reason: ExitReason) -> Option<(u64, Vec<String>)> {
        let mut t = self.lock();
        let l = t.agents.get_mut(&key).filter(|l| l.gone.is_none())?;
        l.gone = Some(reason);
        let departed = (l.incarnation, std::mem::take(&mut l.names));
        t.departed.push_back(key);
        if t.departed.len() > KEEP_DEPARTED
            && let Some(oldest) = t.departed.pop_front()
        {
            t.agents.remove(&oldest);
        }
        Some(departed)
    }

    fn coop_of(&self, incarnation: u64, key: u64) -> Option<CoopId> {
        self.lock()
            .agents
            .get(&key)
            .filter(|l| l.incarnation == incarnation && l.gone.is_none())
            .and_then(|l| l.coop)
    }
}

impl Cluster {
    /// Makes the local agent behind `agent` known to the cluster under `address` (the
    /// global mbox name the application subscribed it under with its gateway; may be empty):
    /// remote nodes can then [`watch`](Self::watch) it, and it can be
    /// [`register`](Self::register)ed under names. `coop`, if given, is the coop that
    /// [`stop_remote`](Self::stop_remote) deregisters.
    pub fn expose(&self, agent: &Mbox, address: &str, coop: Option<CoopId>) -> AgentRef {
        let node = self.inner.my_key();
        let key = {
            let mut t = self.inner.locals.lock();
            t.next_key += 1;
            let key = t.next_key;
            t.agents.insert(
                key,
                Local {
                    incarnation: node.incarnation,
                    coop,
                    gone: None,
                    names: Vec::new(),
                },
            );
            key
        };
        if let Some(s) = self.inner.sentinel.get() {
            s.send(Track {
                key,
                agent: agent.clone(),
            });
        }
        AgentRef {
            node,
            key,
            address: address.to_owned(),
        }
    }
}

/// Sentinel: death-watch this watcher of remote agents (`watch.rs`), so that its remote
/// watches go when it finishes.
pub(crate) struct TrackWatcher(pub(crate) Mbox);

/// Sentinel: watch this agent.
struct Track {
    key: u64,
    agent: Mbox,
}

/// The agent that death-watches exposed agents (see the ground rules).
pub(crate) struct Sentinel {
    inner: Weak<Inner>,
    watching: HashMap<WatchId, u64>,
    /// Watchers of remote agents, by the core watch on them (one per watcher: a watcher that
    /// watches again after its watches fired is not watched twice).
    watchers: HashMap<WatchId, MboxId>,
    tracked: HashSet<MboxId>,
}

impl Sentinel {
    pub(crate) fn new(inner: Weak<Inner>) -> Self {
        Sentinel {
            inner,
            watching: HashMap::new(),
            watchers: HashMap::new(),
            tracked: HashSet::new(),
        }
    }

    fn on_track(&mut self, ctx: &mut Ctx<Self>, t: Track) {
        match ctx.watch(&t.agent) {
            Ok(id) => {
                self.watching.insert(id, t.key);
            }
            // Never registered: it is not an agent that can finish; report it gone.
            Err(_) => self.departed(t.key, ExitReason::Unknown),
        }
    }

    fn on_track_watcher(&mut self, ctx: &mut Ctx<Self>, TrackWatcher(watcher): TrackWatcher) {
        if !self.tracked.insert(watcher.id()) {
            return;
        }
        match ctx.watch(&watcher) {
            Ok(id) => {
                self.watchers.insert(id, watcher.id());
            }
            // Not an agent's mbox (it cannot finish): its watches stay until they fire.
            Err(_) => {
                self.tracked.remove(&watcher.id());
            }
        }
    }

    fn on_terminated(&mut self, _: &mut Ctx<Self>, t: Terminated) {
        if let Some(key) = self.watching.remove(&t.watch) {
            self.departed(key, t.reason);
        } else if let Some(watcher) = self.watchers.remove(&t.watch) {
            self.tracked.remove(&watcher);
            if let Some(inner) = self.inner.upgrade() {
                inner.watches.watcher_gone(watcher);
            }
        }
    }

    fn departed(&mut self, key: u64, reason: ExitReason) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        let Some((incarnation, names)) = inner.locals.depart(key, reason) else {
            return;
        };
        let mut node = inner.my_key();
        node.incarnation = incarnation;
        let agent = AgentRef {
            node: node.clone(),
            key,
            address: String::new(),
        };
        inner
            .watches
            .gone(&inner, &node, key, RemoteExit::Exited(reason));
        let gone = Gone {
            node,
            key,
            reason: reason.into(),
        };
        let client = inner.client.clone();
        let subject = inner.subject("gone");
        inner.rt.spawn(async move {
            let _ = client.publish(subject, encode(&gone)).await;
        });
        crate::registry::forget_names(&inner, agent, names);
    }
}

impl Agent for Sentinel {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Sentinel::on_track)?
            .on(Sentinel::on_track_watcher)?
            .on(Sentinel::on_terminated)?;
        Ok(())
    }
}

/// Answers watch queries and stop requests addressed to this node.
pub(crate) async fn serve_queries(
    weak: Weak<Inner>,
    mut watch: async_nats::Subscriber,
    mut stop: async_nats::Subscriber,
) {
    loop {
        tokio::select! {
            m = watch.next() => {
                let (Some(m), Some(inner)) = (m, weak.upgrade()) else { return };
                let (Some(q), Some(reply)) = (decode::<WatchQuery>(&m.payload), m.reply) else {
                    inner.counters.inc(&inner.counters.malformed);
                    continue;
                };
                let answer = inner.locals.answer(q.incarnation, q.key);
                let _ = inner.client.publish(reply, encode(&answer)).await;
            }
            m = stop.next() => {
                let (Some(m), Some(inner)) = (m, weak.upgrade()) else { return };
                let Some(q) = decode::<StopRequest>(&m.payload) else {
                    inner.counters.inc(&inner.counters.malformed);
                    continue;
                };
                if let Some(coop) = inner.locals.coop_of(q.incarnation, q.key) {
                    let _ = inner.env.deregister_coop(coop, DeregReason::Normal);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
