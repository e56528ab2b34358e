//! The registration transaction: a coop's agents define themselves, bind, are committed and
//! start (`EnvInner::register`; phases 1–4 below, the start step in `agent/start.rs`).
//!
//! A coop of one agent made without a coop builder (`Ctx::spawn`, `EnvHandle::register_agent`)
//! goes through the same four phases in `EnvInner::register_alone`, each the same step
//! (`define_agent`, `prepare_binding`, `commit_agent`, `push_start`) applied to one agent
//! instead of a list: nothing is boxed, listed or collected for it.

use super::{EnvInner, SHUTTING_DOWN};
use crate::agent::Agent;
use crate::agent::cell::{Attach, Defined, Observe, Placement, StartTicket, attached, define_cell};
use crate::agent::define::DefinitionCheck;
use crate::agent::start::{CoopStart, Failed};
use crate::coop::registry::Agents;
use crate::coop::{Coop, PendingAgent};
use crate::demand::Demand;
use crate::disp::{BindScope, Binder, EventQueue, on_a_dispatcher_thread};
use crate::error::{DefineError, RegisterError};
use crate::ids::CoopId;
use crate::mbox::Mbox;
use crate::mbox::class::AgentClass;
use crate::mbox::direct::{AgentShared, Binding, TypeRules};
use crate::mbox::limit::LimitTable;
use crate::mbox::supervisor_link::SupervisorLink;
use crate::panic_reaction::PanicReaction;
use std::any::TypeId;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// One agent of a coop being registered, between its definition and the commit.
/// Its shared part is its cell's (`DefinedAgent::shared`).
struct DefinedEntry {
    defined: Defined,
    /// Its dispatcher's queue, once its binding is prepared (phase 2).
    queue: Option<EventQueue>,
}

// The coop's list of pending agents is turned into the list of defined ones in place (the
// standard library reuses a vector's allocation when the new items are no larger and equally
// aligned), so that a coop of 10^6 agents does not hold a second list while it registers.
const _: () = assert!(
    std::mem::size_of::<DefinedEntry>() <= std::mem::size_of::<PendingAgent>()
        && std::mem::align_of::<DefinedEntry>() == std::mem::align_of::<PendingAgent>()
);

/// Phase 1 for one agent, the `index`-th of its coop: `define` runs its definition (user code,
/// no lock held) and builds its cell; an error or a panic is the registration's typed error.
fn define_agent(
    index: usize,
    agent_type: &'static str,
    define: impl FnOnce() -> Result<Defined, DefineError>,
) -> Result<DefinedEntry, RegisterError> {
    match catch_unwind(AssertUnwindSafe(define)) {
        Ok(Ok(defined)) => Ok(DefinedEntry {
            defined,
            queue: None,
        }),
        Ok(Err(source)) => Err(RegisterError::Define {
            index,
            agent_type,
            source,
        }),
        Err(payload) => Err(RegisterError::DefinePanicked {
            index,
            agent_type,
            message: crate::error::panic_message(&*payload),
        }),
    }
}

/// Phase 2 for one agent: its binding is prepared (fallible; dropping rolls back): the cell
/// holds its lease, the entry its queue until the commit.
fn prepare_binding(
    scope: &mut BindScope<'_>,
    index: usize,
    entry: &mut DefinedEntry,
) -> Result<(), RegisterError> {
    let cell = &mut entry.defined.cell;
    let prepared = cell
        .binder()
        .prepare(scope, entry.defined.declared.priority)
        .map_err(|source| RegisterError::Bind {
            index,
            agent_type: cell.shared().agent_type(),
            source,
        })?;
    cell.hold_lease(prepared.lease);
    entry.queue = Some(prepared.queue);
    Ok(())
}

/// Phase 4 for one agent: its start demand.
fn push_start(shared: &AgentShared) {
    let binding = shared
        .binding()
        .expect("invariant: committed agents are bound");
    let start = Demand::start(binding.incarnation(), shared.mbox_id);
    if binding.queue.push(start).is_err() {
        unreachable!("invariant: a prepared binding's dispatcher stays open while leased");
    }
}

impl EnvInner {
    pub(super) fn register(self: &Arc<Self>, coop: Coop) -> Result<CoopId, RegisterError> {
        if !std::ptr::addr_eq(Arc::as_ptr(&coop.env), Arc::as_ptr(self)) {
            return Err(RegisterError::WrongEnv);
        }
        if self.phase() >= SHUTTING_DOWN {
            return Err(RegisterError::EnvStopped);
        }
        let Coop {
            parent,
            binder,
            panic_reaction,
            mut agents,
            own_binders,
            listeners,
            supervision,
            children,
            env,
            last_class: _,
        } = coop;
        let supervision =
            crate::supervision::supervisor::prepare(&mut agents, supervision, children, &env)?;

        // Phase 1: every agent defines itself and its cell is built, in the allocation that
        // holds it from then on. The coop's list of pending agents becomes the list of defined
        // ones in place (no per-agent temporary survives the definition).
        let default = self.env_default_binder();
        let mut own_binders = own_binders.into_iter().peekable();
        let mut defined = agents
            .into_iter()
            .enumerate()
            .map(|(index, pending)| {
                let PendingAgent { shared, agent } = pending;
                let own = own_binders
                    .next_if(|(at, _)| *at == index)
                    .map(|(_, own)| own);
                let at = Placement {
                    binder: own
                        .or_else(|| binder.clone())
                        .unwrap_or_else(|| default.clone()),
                };
                define_agent(index, shared.agent_type(), || {
                    agent.define(Mbox::from_shared(shared), at)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;

        // Phase 2: every agent's binding is prepared.
        let mut scope = BindScope::new(&**self);
        for (index, entry) in defined.iter_mut().enumerate() {
            prepare_binding(&mut scope, index, entry)?;
        }

        // Phase 3: commit (infallible past the parent check), under the registry lock so that
        // a concurrent deregistration or shutdown sees the coop whole or not at all.
        // Phase 4, the start, is waited for unless waiting could deadlock (`agent/start.rs`).
        let wait = !on_a_dispatcher_thread();
        let start = (wait || defined.len() > 1).then(|| CoopStart::new(defined.len()));
        let mut registry = self.registry.lock();
        if self.phase() >= SHUTTING_DOWN {
            return Err(RegisterError::EnvStopped);
        }
        let coop_reaction = panic_reaction
            .or_else(|| parent.and_then(|p| registry.panic_reaction_of(p)))
            .unwrap_or(self.config.panic_reaction);
        let shared_list = defined
            .iter()
            .map(|e| Arc::clone(e.defined.cell.shared()))
            .collect();
        let (mut links, published) = match supervision {
            Some(plan) => (plan.links, Some(plan.shared)),
            None => (Vec::new(), None),
        };
        let id = registry.insert(parent, shared_list, listeners, coop_reaction, published)?;
        self.ever_registered.store(true, Ordering::Relaxed);
        // Every agent is bound and subscribed before any of them starts: an agent's on_start
        // may send to its siblings (directly or through a multi mbox).
        for (index, entry) in defined.into_iter().enumerate() {
            let link = links.get_mut(index).and_then(Option::take);
            self.commit_agent(id, entry, coop_reaction, &start, link);
        }
        registry.agents_of(id).iter().for_each(|s| push_start(s));
        drop(registry);
        self.verdict(id, start.filter(|_| wait))
    }

    /// Registers `agent` (of type `A`, its definition checked by `check`) alone in a new coop
    /// whose parent is `parent`, bound through `binder` (the env's default dispatcher if
    /// `None`): [`register`](Self::register) for a coop of one agent, without a coop builder.
    /// `near` is a class of this env the caller has at hand (the spawning agent's): used if it
    /// is `A`'s, it saves looking the class up (a lock every spawning thread takes).
    pub(crate) fn register_alone<A: Agent>(
        self: &Arc<Self>,
        parent: Option<CoopId>,
        binder: Option<Binder>,
        near: Option<&Arc<AgentClass>>,
        agent: A,
        check: DefinitionCheck<A>,
    ) -> Result<Mbox, RegisterError> {
        if self.phase() >= SHUTTING_DOWN {
            return Err(RegisterError::EnvStopped);
        }
        let agent_type = std::any::type_name::<A>();
        let class = match near {
            Some(class) if class.type_id == TypeId::of::<A>() => Arc::clone(class),
            _ => {
                let host = Arc::clone(self) as Arc<dyn crate::mbox::direct::AgentHost>;
                self.classes.of::<A>(agent_type, &host)
            }
        };
        let shared = Arc::new(AgentShared::new(class));
        let me = Mbox::from_shared(Arc::clone(&shared));
        let at = Placement {
            binder: binder.unwrap_or_else(|| self.env_default_binder()),
        };
        let mut entry = define_agent(0, agent_type, || define_cell(agent, me, at, check, None))?;
        prepare_binding(&mut BindScope::new(&**self), 0, &mut entry)?;

        let wait = !on_a_dispatcher_thread();
        let start = wait.then(|| CoopStart::new(1));
        let mut registry = self.registry.lock();
        if self.phase() >= SHUTTING_DOWN {
            return Err(RegisterError::EnvStopped);
        }
        let coop_reaction = parent
            .and_then(|p| registry.panic_reaction_of(p))
            .unwrap_or(self.config.panic_reaction);
        let agents = Agents::One(Arc::clone(&shared));
        let id = registry.insert(parent, agents, Vec::new(), coop_reaction, None)?;
        self.ever_registered.store(true, Ordering::Relaxed);
        self.commit_agent(id, entry, coop_reaction, &start, None);
        push_start(&shared);
        drop(registry);
        self.verdict(id, start)?;
        Ok(Mbox::from_shared(shared))
    }

    /// Phase 3 for one agent of the coop `id`, under the registry lock: its slot,
    /// its cell completed, its binding published, its multi-mbox subscriptions made.
    fn commit_agent(
        &self,
        id: CoopId,
        entry: DefinedEntry,
        coop_reaction: PanicReaction,
        start: &Option<Arc<CoopStart>>,
        supervisor: Option<SupervisorLink>,
    ) {
        let DefinedEntry { defined, queue } = entry;
        let queue = queue.expect("invariant: every binding was prepared in phase 2");
        // Most agents declare none of the parts that senders use: nothing to unpack for them.
        let declared = defined.declared;
        let parts = defined.sender.map(|parts| *parts);
        let reaction = parts
            .as_ref()
            .and_then(|parts| parts.panic_reaction)
            .unwrap_or(coop_reaction);
        let multi_keys = parts.as_ref().map_or_else(Vec::new, |parts| {
            parts
                .multi
                .iter()
                .map(|m| (m.mbox.clone(), m.type_id))
                .collect()
        });
        let cell = defined.cell;
        let shared = Arc::clone(cell.shared());
        // Timed by the env's setting or its definition: its cell's `TIMED` bit and its
        // binding say the same.
        let timed = self.config.observe.time_handlers || declared.time_handlers;
        let handler_timing = timed.then_some(self.config.handler_sampling);
        let body = attached(
            cell,
            Attach {
                panic_reaction: reaction,
                multi: multi_keys,
                observe: Observe {
                    time_handlers: timed,
                    ..self.config.observe.clone()
                },
                start: StartTicket::Registration {
                    coop: start.clone(),
                },
            },
        );
        let target = self.slab.insert(&shared, body);
        let propagation = self.counters.propagation.as_ref();
        let queue_depth = self.config.queue_depth;
        let (type_rules, limits, multi) = match parts {
            Some(parts) => (
                TypeRules::new(parts.insend, parts.event_priorities, propagation),
                LimitTable::new(parts.limits, parts.track_depth || queue_depth),
                Some(parts.multi),
            ),
            None => (
                TypeRules::new(Default::default(), Default::default(), propagation),
                LimitTable::new(Vec::new(), queue_depth),
                None,
            ),
        };
        shared.bind(Binding::new(
            id,
            target,
            queue,
            type_rules,
            supervisor,
            limits,
            handler_timing,
            reaction,
        ));
        if let Some(multi) = multi {
            for m in multi {
                m.mbox
                    .add_subscriber(m.type_id, Arc::clone(&shared), m.options);
            }
        }
    }

    /// The registration's outcome once the coop `id` is committed: with a `start` to wait for,
    /// its verdict (phase 4), else `Ok`.
    fn verdict(&self, id: CoopId, start: Option<Arc<CoopStart>>) -> Result<CoopId, RegisterError> {
        match start.map(|start| self.wait_for_start(id, &start)) {
            Some(Err(Failed {
                index,
                agent_type,
                failure,
            })) => Err(RegisterError::Start {
                index,
                agent_type,
                failure,
            }),
            _ => Ok(id),
        }
    }

    /// Waits for the start of the coop `id` (phase 4): for its verdict, and after a failure
    /// for the coop to be gone. Only a failed start's coop is told to report its end here
    /// (`agent/start.rs` ground rules: nothing keeps the start of a coop that started).
    fn wait_for_start(&self, id: CoopId, start: &Arc<CoopStart>) -> Result<(), Failed> {
        if !start.wait_verdict() {
            let listener = CoopStart::gone_listener(start);
            if self.registry.lock().add_listener(id, listener).is_err() {
                start.coop_gone();
            }
        }
        start.wait()
    }
}
