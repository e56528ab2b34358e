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
use std::sync::Arc;

enum Status {
    Registered,
    Deregistering {
        reason: DeregReason,
        finishing: bool,
    },
}

/// One registered coop. Kept small: a tree of 10^6 coops of one agent each (`Ctx::spawn`)
/// holds 10^6 entries.
struct Entry {
    parent: Option<CoopId>,
    /// Its children, a list through their entries (`NO_SLOT`: none): a coop may have many
    /// children (an acceptor, a hub), each unlinked in constant time as it finishes, and a
    /// coop without children carries no set.
    first_child: u32,
    /// Its neighbours in its parent's list of children.
    prev_sibling: u32,
    next_sibling: u32,
    live_agents: u32,
    agents: Agents,
    status: Status,
    panic_reaction: PanicReaction,
    /// What few coops have: deregistration listeners, a supervisor (one box, absent for
    /// most: the entry stays 72 bytes).
    rare: Option<Box<RareEntry>>,
}

/// The parts of a coop's entry that few coops have.
#[derive(Default)]
struct RareEntry {
    listeners: Vec<DeregListener>,
    /// What its supervisor publishes, if it supervises.
    supervisor: Option<Arc<SupervisorShared>>,
}

// Every registered coop has one (a tree of 10^6 coops of one agent each holds 10^6).
const _: () = assert!(std::mem::size_of::<Entry>() <= 72);

impl Entry {
    fn has_children(&self) -> bool {
        self.first_child != NO_SLOT
    }

    fn supervisor(&self) -> Option<&Arc<SupervisorShared>> {
        self.rare.as_ref()?.supervisor.as_ref()
    }
}

/// A coop's agents, in the order they were added: one inline (no allocation: a coop started by
/// `Ctx::spawn` or `register_agent`), or a boxed list.
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
        !self
            .coops
            .get(id)
            .is_some_and(|e| matches!(e.status, Status::Registered))
    }

    /// The agents of a registered coop, in the order they were added.
    pub(crate) fn agents_of(&self, id: CoopId) -> &[Arc<AgentShared>] {
        self.coops.get(id).map_or(&[], |e| e.agents.as_slice())
    }

    /// What a snapshot shows of coop `id` (`snapshot.rs`), if it is in the registry.
    pub(crate) fn coop_for_report(&self, id: CoopId) -> Option<CoopView<'_>> {
        let e = self.coops.get(id)?;
        Some(CoopView {
            parent: e.parent,
            live_agents: e.live_agents as usize,
            deregistering: !matches!(e.status, Status::Registered),
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
            if !matches!(parent_entry.status, Status::Registered) {
                return Err(RegisterError::ParentDeregistering(p));
            }
        }
        let live_agents = u32::try_from(agents.as_slice().len())
            .expect("invariant: fewer than 2^32 agents in a coop");
        let id = self.coops.insert(|_| Entry {
            parent,
            first_child: NO_SLOT,
            prev_sibling: NO_SLOT,
            next_sibling: NO_SLOT,
            live_agents,
            agents,
            status: Status::Registered,
            panic_reaction,
            rare: (!listeners.is_empty() || supervisor.is_some()).then(|| {
                Box::new(RareEntry {
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
            .filter(|(_, e)| e.parent.is_none())
            .map(|(id, _)| id)
            .collect()
    }

    pub(crate) fn begin_deregistration(
        &mut self,
        id: CoopId,
        reason: DeregReason,
    ) -> Result<Actions, DeregisterError> {
        let entry = self.coops.get(id).ok_or(DeregisterError::NotFound(id))?;
        if !matches!(entry.status, Status::Registered) {
            return Err(DeregisterError::AlreadyDeregistering(id));
        }
        let mut actions = Actions::default();
        let mut leaves = Vec::new();
        let mut stack = vec![(id, reason)];
        while let Some((c, why)) = stack.pop() {
            let Some(e) = self.coops.get_mut(c) else {
                continue;
            };
            if !matches!(e.status, Status::Registered) {
                continue;
            }
            e.status = Status::Deregistering {
                reason: why,
                finishing: false,
            };
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
        let reason = match self.coops.get(coop).map(|e| &e.status) {
            Some(Status::Deregistering { reason, .. }) => ExitReason::from(*reason),
            Some(Status::Registered) => ExitReason::Normal,
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
            if matches!(e.status, Status::Registered) && e.has_children() {
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
        if let Status::Deregistering { finishing, .. } = &mut e.status {
            *finishing = true;
        }
        if e.live_agents == 0 {
            self.finalize(coop, actions);
        } else {
            actions.finish.extend(e.agents.as_slice().iter().cloned());
        }
    }

    /// Removes a coop whose agents are all gone, then lets a waiting parent finish.
    fn finalize(&mut self, coop: CoopId, actions: &mut Actions) {
        let mut next = Some(coop);
        while let Some(c) = next.take() {
            if let Some(p) = self.coops.get(c).and_then(|e| e.parent) {
                self.unlink_child(p, c);
            }
            let Some(e) = self.coops.remove(c) else {
                break;
            };
            let reason = match e.status {
                Status::Deregistering { reason, .. } => reason,
                Status::Registered => DeregReason::Normal,
            };
            self.watches
                .fire(WatchTarget::Coop(c), reason.into(), &mut actions.terminated);
            tracing::debug!(coop = %c, ?reason, "coop deregistered");
            if let Some(rare) = e.rare
                && !rare.listeners.is_empty()
            {
                let event = CoopDeregistered { coop: c, reason };
                actions.notify.push((rare.listeners, event));
            }
            let Some(p) = e.parent else { continue };
            let Some(pe) = self.coops.get_mut(p) else {
                continue;
            };
            let waiting = matches!(
                pe.status,
                Status::Deregistering {
                    finishing: false,
                    ..
                }
            );
            if waiting && !pe.has_children() {
                if let Status::Deregistering { finishing, .. } = &mut pe.status {
                    *finishing = true;
                }
                if pe.live_agents == 0 {
                    next = Some(p);
                } else {
                    actions.finish.extend(pe.agents.as_slice().iter().cloned());
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
    fn one_agent_is_kept_inline_and_any_other_count_as_a_list_in_order() {
        for n in [0, 1, 2, 5] {
            let made = agents(n);
            let kept: Agents = made.iter().cloned().collect();
            assert_eq!(matches!(kept, Agents::One(_)), n == 1, "{n} agents");
            let ids: Vec<_> = kept.as_slice().iter().map(|a| a.mbox_id).collect();
            let expected: Vec<_> = made.iter().map(|a| a.mbox_id).collect();
            assert_eq!(ids, expected, "{n} agents, in the order they were added");
        }
    }
}
