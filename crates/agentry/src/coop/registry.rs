//! The coop tree of one environment and the deregistration protocol.
//!
//! The registry is plain data behind the environment's mutex. Its operations return
//! [`Actions`] (finish demands to push, listeners to notify) that the environment carries out
//! after releasing the lock, so no user code and no queue push runs under it.
//!
//! Protocol, for `begin_deregistration(c)`:
//! 1. `c` and every descendant not already leaving are marked `Deregistering` (descendants
//!    with reason `ParentDeregistered`).
//! 2. Each marked coop without children starts *finishing*: its agents get a finish demand.
//! 3. When a coop's last agent has been dropped (`agent_finished`), the coop is removed and
//!    its listeners notified; if its parent is deregistering and now childless, the parent
//!    starts finishing (step 2).

use super::table::{CoopTable, NO_SLOT};
use super::{CoopDeregistered, DeregListener};
use crate::error::{DeregisterError, RegisterError};
use crate::ids::{CoopId, WatchId};
use crate::mbox::Mbox;
use crate::mbox::direct::AgentShared;
use crate::panic_reaction::PanicReaction;
use crate::reason::DeregReason;
use crate::reason::ExitReason;
use crate::supervision::SupervisorShared;
use crate::watch::table::WatchTable;
use crate::watch::{Terminated, WatchTarget};
use std::num::NonZeroU64;
use std::sync::Arc;

/// One registered coop. Kept small: a tree of 10^6 coops of one agent each (`Ctx::spawn`)
/// holds 10^6 entries.
struct Entry {
    /// Its parent's sequence number (`None`: a root coop) and slot, the two parts of the
    /// parent's id, kept apart so that the slot packs with the other slots.
    parent_seq: Option<NonZeroU64>,
    parent_slot: u32,
    /// Its children, a list through their entries (`NO_SLOT`: none): a coop may have many
    /// children (an acceptor, a hub), each unlinked in constant time as it finishes, and a
    /// coop without children carries no set.
    first_child: u32,
    /// Its neighbours in its parent's list of children.
    prev_sibling: u32,
    next_sibling: u32,
    live_agents: u32,
    /// Why it is leaving, once its deregistration began (`None`: registered).
    leaving: Option<DeregReason>,
    /// Leaving, with its children gone: its agents have their finish demands.
    finishing: bool,
    panic_reaction: PanicReaction,
    /// Its agent, if it has exactly one (a coop started by `Ctx::spawn` or `register_agent`:
    /// no allocation); the agents of any other coop are in its rare part.
    one_agent: Option<Arc<AgentShared>>,
    /// What few coops have: more than one agent, deregistration listeners, a supervisor (one
    /// box, absent for most: the entry stays 56 bytes).
    rare: Option<Box<RareEntry>>,
}

/// The parts of a coop's entry that few coops have.
#[derive(Default)]
struct RareEntry {
    /// Its agents in the order they were added, unless it has exactly one (then `one_agent`).
    agents: Box<[Arc<AgentShared>]>,
    listeners: Vec<DeregListener>,
    /// What its supervisor publishes, if it supervises.
    supervisor: Option<Arc<SupervisorShared>>,
}

// Every registered coop has one (a tree of 10^6 coops of one agent each holds 10^6); with its
// table slot's sequence number, 64 bytes.
const _: () = assert!(std::mem::size_of::<Entry>() <= 56);

impl Entry {
    fn has_children(&self) -> bool {
        self.first_child != NO_SLOT
    }

    fn is_registered(&self) -> bool {
        self.leaving.is_none()
    }

    /// Leaving, but still waiting for its children.
    fn waits_for_children(&self) -> bool {
        self.leaving.is_some() && !self.finishing
    }

    fn parent(&self) -> Option<CoopId> {
        self.parent_seq
            .map(|seq| CoopId::in_slot(self.parent_slot, seq))
    }

    fn agents(&self) -> &[Arc<AgentShared>] {
        match (&self.one_agent, &self.rare) {
            (Some(agent), _) => std::slice::from_ref(agent),
            (None, Some(rare)) => &rare.agents,
            (None, None) => &[],
        }
    }

    fn supervisor(&self) -> Option<&Arc<SupervisorShared>> {
        self.rare.as_ref()?.supervisor.as_ref()
    }
}

/// A new coop's agents, in the order they were added: one (kept inline in its entry: a coop
/// started by `Ctx::spawn` or `register_agent`), or a boxed list (kept in its rare part).
pub(crate) enum Agents {
    One(Arc<AgentShared>),
    Many(Box<[Arc<AgentShared>]>),
}

impl Agents {
    fn as_slice(&self) -> &[Arc<AgentShared>] {
        match self {
            Agents::One(agent) => std::slice::from_ref(agent),
            Agents::Many(agents) => agents,
        }
    }
}

impl FromIterator<Arc<AgentShared>> for Agents {
    fn from_iter<I: IntoIterator<Item = Arc<AgentShared>>>(agents: I) -> Self {
        let mut agents = agents.into_iter();
        match (agents.next(), agents.next()) {
            (Some(one), None) => Agents::One(one),
            (first, second) => {
                Agents::Many(first.into_iter().chain(second).chain(agents).collect())
            }
        }
    }
}

/// Work for the environment to do outside the registry lock.
#[derive(Default)]
pub(crate) struct Actions {
    /// Agents to send a finish demand to.
    pub(crate) finish: Vec<Arc<AgentShared>>,
    /// Listeners to notify (only coops that have any).
    pub(crate) notify: Vec<(Vec<DeregListener>, CoopDeregistered)>,
    /// Death-watch messages to send (`watch.rs`).
    pub(crate) terminated: Vec<(Mbox, Terminated)>,
    /// The registry became empty.
    pub(crate) became_empty: bool,
}

impl Actions {
    /// Nothing to do.
    pub(crate) fn is_empty(&self) -> bool {
        self.finish.is_empty()
            && self.notify.is_empty()
            && self.terminated.is_empty()
            && !self.became_empty
    }

    fn absorb(&mut self, more: Actions) {
        self.finish.extend(more.finish);
        self.notify.extend(more.notify);
        self.terminated.extend(more.terminated);
        self.became_empty |= more.became_empty;
    }
}

#[derive(Default)]
pub(crate) struct Registry {
    coops: CoopTable<Entry>,
    pub(crate) watches: WatchTable,
}

/// What the registry shows a snapshot of one coop ([`Registry::coop_for_report`]).
pub(crate) struct CoopView<'a> {
    pub(crate) parent: Option<CoopId>,
    pub(crate) live_agents: usize,
    pub(crate) deregistering: bool,
    pub(crate) supervisor: Option<&'a SupervisorShared>,
}

impl Registry {
    pub(crate) fn len(&self) -> usize {
        self.coops.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.coops.is_empty()
    }

    /// The panic reaction of a registered coop (children inherit it).
    pub(crate) fn panic_reaction_of(&self, id: CoopId) -> Option<PanicReaction> {
        self.coops.get(id).map(|e| e.panic_reaction)
    }

    /// The children of `entry`, in its list's order.
    fn children_of<'a>(&'a self, entry: &Entry) -> impl Iterator<Item = CoopId> + 'a {
        let mut next = entry.first_child;
        std::iter::from_fn(move || {
            let (child, e) = self.coops.by_slot(next)?;
            next = e.next_sibling;
            Some(child)
        })
    }

    /// Links `child`, just inserted, first in `parent`'s list of children.
    fn link_child(&mut self, parent: CoopId, child: CoopId) {
        let Some(p) = self.coops.get_mut(parent) else {
            return;
        };
        let first = std::mem::replace(&mut p.first_child, child.slot());
        if let Some(f) = self.coops.by_slot_mut(first) {
            f.prev_sibling = child.slot();
        }
        if let Some(c) = self.coops.get_mut(child) {
            c.next_sibling = first;
        }
    }

    /// Unlinks `child` (still in the table) from `parent`'s list of children.
    fn unlink_child(&mut self, parent: CoopId, child: CoopId) {
        let Some(c) = self.coops.get(child) else {
            return;
        };
        let (prev, next) = (c.prev_sibling, c.next_sibling);
        if let Some(n) = self.coops.by_slot_mut(next) {
            n.prev_sibling = prev;
        }
        match self.coops.by_slot_mut(prev) {
            Some(p) => p.next_sibling = next,
            None => {
                if let Some(p) = self.coops.get_mut(parent) {
                    p.first_child = next;
                }
            }
        }
    }

    /// True unless `id` is registered and not being deregistered.
    pub(crate) fn is_leaving(&self, id: CoopId) -> bool {
        !self.coops.get(id).is_some_and(Entry::is_registered)
    }

    /// The agents of a registered coop, in the order they were added.
    pub(crate) fn agents_of(&self, id: CoopId) -> &[Arc<AgentShared>] {
        self.coops.get(id).map_or(&[], Entry::agents)
    }

    /// What a snapshot shows of coop `id` (`snapshot.rs`), if it is in the registry.
    pub(crate) fn coop_for_report(&self, id: CoopId) -> Option<CoopView<'_>> {
        let e = self.coops.get(id)?;
        Some(CoopView {
            parent: e.parent(),
            live_agents: e.live_agents as usize,
            deregistering: !e.is_registered(),
            supervisor: e.supervisor().map(|s| &**s),
        })
    }

    pub(crate) fn supervisor_of(&self, id: CoopId) -> Option<&Arc<SupervisorShared>> {
        self.coops.get(id)?.supervisor()
    }

    /// `watcher` watches the agent of `target`; returns the watch and, if the agent is already
    /// gone, its `Terminated` (the watch is then not kept).
    pub(crate) fn watch_agent(
        &mut self,
        watcher: &Mbox,
        target: &AgentShared,
    ) -> (WatchId, Option<Terminated>) {
        let id = WatchId::next();
        let what = WatchTarget::Agent(target.mbox_id);
        match target.exit.get() {
            Some(reason) => (
                id,
                Some(Terminated {
                    watch: id,
                    target: what,
                    reason,
                }),
            ),
            None => {
                self.watches.add(id, watcher, what);
                (id, None)
            }
        }
    }

    /// `watcher` watches the coop `coop`; as [`watch_agent`](Self::watch_agent).
    pub(crate) fn watch_coop(
        &mut self,
        watcher: &Mbox,
        coop: CoopId,
    ) -> (WatchId, Option<Terminated>) {
        let id = WatchId::next();
        let what = WatchTarget::Coop(coop);
        if self.coops.get(coop).is_some() {
            self.watches.add(id, watcher, what);
            (id, None)
        } else {
            let gone = Terminated {
                watch: id,
                target: what,
                reason: ExitReason::Unknown,
            };
            (id, Some(gone))
        }
    }

    /// Checks the parent and records a new coop; returns its id.
    pub(crate) fn insert(
        &mut self,
        parent: Option<CoopId>,
        agents: Agents,
        listeners: Vec<DeregListener>,
        panic_reaction: PanicReaction,
        supervisor: Option<Arc<SupervisorShared>>,
    ) -> Result<CoopId, RegisterError> {
        if let Some(p) = parent {
            let parent_entry = self.coops.get(p).ok_or(RegisterError::ParentNotFound(p))?;
            if !parent_entry.is_registered() {
                return Err(RegisterError::ParentDeregistering(p));
            }
        }
        let live_agents = u32::try_from(agents.as_slice().len())
            .expect("invariant: fewer than 2^32 agents in a coop");
        let (one_agent, more) = match agents {
            Agents::One(agent) => (Some(agent), None),
            Agents::Many(agents) => (None, Some(agents).filter(|a| !a.is_empty())),
        };
        let id = self.coops.insert(|_| Entry {
            parent_seq: parent.map(CoopId::seq),
            parent_slot: parent.map_or(NO_SLOT, CoopId::slot),
            first_child: NO_SLOT,
            prev_sibling: NO_SLOT,
            next_sibling: NO_SLOT,
            live_agents,
            leaving: None,
            finishing: false,
            panic_reaction,
            one_agent,
            rare: (more.is_some() || !listeners.is_empty() || supervisor.is_some()).then(|| {
                Box::new(RareEntry {
                    agents: more.unwrap_or_default(),
                    listeners,
                    supervisor,
                })
            }),
        });
        if let Some(p) = parent {
            self.link_child(p, id);
        }
        Ok(id)
    }

    /// Adds `listener` to the coop `id`'s deregistration listeners; gives it back if the coop
    /// is gone (then there is nothing to wait for).
    pub(crate) fn add_listener(
        &mut self,
        id: CoopId,
        listener: DeregListener,
    ) -> Result<(), DeregListener> {
        let Some(entry) = self.coops.get_mut(id) else {
            return Err(listener);
        };
        entry
            .rare
            .get_or_insert_with(Box::default)
            .listeners
            .push(listener);
        Ok(())
    }

    /// Coops without a parent.
    pub(crate) fn roots(&self) -> Vec<CoopId> {
        self.coops
            .iter()
            .filter(|(_, e)| e.parent_seq.is_none())
            .map(|(id, _)| id)
            .collect()
    }

    pub(crate) fn begin_deregistration(
        &mut self,
        id: CoopId,
        reason: DeregReason,
    ) -> Result<Actions, DeregisterError> {
        let entry = self.coops.get(id).ok_or(DeregisterError::NotFound(id))?;
        if !entry.is_registered() {
            return Err(DeregisterError::AlreadyDeregistering(id));
        }
        let mut actions = Actions::default();
        if !entry.has_children() {
            // Most coops: the coop is the only one to finish (no walk, no lists).
            self.coops
                .get_mut(id)
                .expect("invariant: found above")
                .leaving = Some(reason);
            self.start_finishing(id, &mut actions);
            return Ok(actions);
        }
        let mut leaves = Vec::new();
        let mut stack = vec![(id, reason)];
        while let Some((c, why)) = stack.pop() {
            let Some(e) = self.coops.get_mut(c) else {
                continue;
            };
            if !e.is_registered() {
                continue;
            }
            e.leaving = Some(why);
            if !e.has_children() {
                leaves.push(c);
                continue;
            }
            let e = self.coops.get(c).expect("invariant: marked above");
            let children = self.children_of(e);
            stack.extend(children.map(|child| (child, DeregReason::ParentDeregistered)));
        }
        for leaf in leaves {
            self.start_finishing(leaf, &mut actions);
        }
        Ok(actions)
    }

    /// One agent of `coop` has finished and been dropped: it records why on its mbox, its
    /// watches fire and the watches it made are dropped (`watch.rs`).
    pub(crate) fn agent_finished(&mut self, coop: CoopId, agent: &AgentShared) -> Actions {
        let mut actions = Actions::default();
        let reason = match self.coops.get(coop).map(|e| e.leaving) {
            Some(Some(reason)) => ExitReason::from(reason),
            Some(None) => ExitReason::Normal,
            None => ExitReason::Unknown,
        };
        agent.exit.set(reason);
        self.watches.fire(
            WatchTarget::Agent(agent.mbox_id),
            reason,
            &mut actions.terminated,
        );
        self.watches.drop_watcher(agent.mbox_id);
        let Some(e) = self.coops.get_mut(coop) else {
            tracing::error!(%coop, "agent finished in an unknown coop");
            return actions;
        };
        e.live_agents -= 1;
        if e.live_agents == 0 {
            if e.is_registered() && e.has_children() {
                // Its last agent stopped itself: its children go first, then the coop.
                if let Ok(more) = self.begin_deregistration(coop, DeregReason::Normal) {
                    actions.absorb(more);
                }
            } else {
                self.finalize(coop, &mut actions);
            }
        }
        actions
    }

    /// Sends finish demands to `coop`'s agents, or removes it at once if it has none.
    fn start_finishing(&mut self, coop: CoopId, actions: &mut Actions) {
        let Some(e) = self.coops.get_mut(coop) else {
            return;
        };
        if e.leaving.is_some() {
            e.finishing = true;
        }
        if e.live_agents == 0 {
            self.finalize(coop, actions);
        } else {
            actions.finish.extend(e.agents().iter().cloned());
        }
    }

    /// Removes a coop whose agents are all gone, then lets a waiting parent finish.
    fn finalize(&mut self, coop: CoopId, actions: &mut Actions) {
        let mut next = Some(coop);
        while let Some(c) = next.take() {
            if let Some(p) = self.coops.get(c).and_then(Entry::parent) {
                self.unlink_child(p, c);
            }
            let Some(e) = self.coops.remove(c) else {
                break;
            };
            let reason = e.leaving.unwrap_or(DeregReason::Normal);
            let parent = e.parent();
            self.watches
                .fire(WatchTarget::Coop(c), reason.into(), &mut actions.terminated);
            tracing::debug!(coop = %c, ?reason, "coop deregistered");
            if let Some(rare) = e.rare
                && !rare.listeners.is_empty()
            {
                let event = CoopDeregistered { coop: c, reason };
                actions.notify.push((rare.listeners, event));
            }
            let Some(p) = parent else { continue };
            let Some(pe) = self.coops.get_mut(p) else {
                continue;
            };
            if pe.waits_for_children() && !pe.has_children() {
                pe.finishing = true;
                if pe.live_agents == 0 {
                    next = Some(p);
                } else {
                    actions.finish.extend(pe.agents().iter().cloned());
                }
            }
        }
        if self.coops.is_empty() {
            actions.became_empty = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Agents;
    use crate::mbox::class::AgentClass;
    use crate::mbox::direct::AgentShared;
    use crate::stats::EnvCounters;
    use std::sync::Arc;

    fn agents(n: usize) -> Vec<Arc<AgentShared>> {
        let counters = Arc::new(EnvCounters::new(None, None));
        (0..n)
            .map(|_| {
                Arc::new(AgentShared::new(AgentClass::new::<()>(
                    "t",
                    Arc::clone(&counters),
                    std::sync::Weak::<crate::env::EnvInner>::new(),
                )))
            })
            .collect()
    }

    #[test]
    fn a_listener_added_to_a_registered_coop_hears_its_end_and_one_for_a_gone_coop_is_given_back() {
        use super::Registry;
        use crate::coop::DeregListener;
        use crate::reason::DeregReason;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let heard = Arc::new(AtomicUsize::new(0));
        let listener = || {
            let heard = Arc::clone(&heard);
            DeregListener::Callback(Box::new(move |_| {
                heard.fetch_add(1, Ordering::Relaxed);
            }))
        };
        let mut registry = Registry::default();
        let made = agents(1);
        let id = registry
            .insert(
                None,
                made.iter().cloned().collect(),
                vec![listener()],
                crate::PanicReaction::Ignore,
                None,
            )
            .expect("a root coop");
        assert!(registry.add_listener(id, listener()).is_ok());
        registry
            .begin_deregistration(id, DeregReason::Normal)
            .expect("registered");
        let actions = registry.agent_finished(id, &made[0]);
        for (listeners, event) in actions.notify {
            assert_eq!(event.coop, id);
            listeners.into_iter().for_each(|l| l.notify(event));
        }
        // The listener given at registration and the one added later.
        assert_eq!(heard.load(Ordering::Relaxed), 2);
        // The coop is gone: a listener is given back, and never called.
        let Err(given_back) = registry.add_listener(id, listener()) else {
            panic!("the coop is gone");
        };
        drop(given_back);
        assert_eq!(heard.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn one_agent_is_kept_inline_and_any_other_count_in_the_rare_part_in_order() {
        use super::Registry;

        let mut registry = Registry::default();
        for n in [0, 1, 2, 5] {
            let made = agents(n);
            let kept: Agents = made.iter().cloned().collect();
            assert_eq!(matches!(kept, Agents::One(_)), n == 1, "{n} agents");
            let id = registry
                .insert(None, kept, Vec::new(), crate::PanicReaction::Ignore, None)
                .expect("a root coop");
            let entry = registry.coops.get(id).expect("registered");
            assert_eq!(entry.one_agent.is_some(), n == 1, "{n} agents");
            assert_eq!(
                entry.rare.is_some(),
                n > 1,
                "{n} agents: a box only for a list"
            );
            let ids: Vec<_> = registry.agents_of(id).iter().map(|a| a.mbox_id).collect();
            let expected: Vec<_> = made.iter().map(|a| a.mbox_id).collect();
            assert_eq!(ids, expected, "{n} agents, in the order they were added");
        }
    }
}
