//! An agent's class: what every agent of one type in one environment shares, kept once per
//! type instead of once per agent — its type's name, the environment's counters, the
//! environment itself (as an [`AgentHost`]), the final counts of its agents that are gone,
//! its agents' layout, their shared handler closures and where their state names are.
//!
//! # Ground rules
//!
//! - A class is made the first time an agent of its type is added to a coop of the
//!   environment ([`AgentClasses::of`]) and lives as long as the environment or an agent of it
//!   (each agent's shared part holds it): it is never changed after it is made, except for its
//!   retired totals, which an agent's counts join as its shared part drops, and its layout,
//!   shared handlers and state names, set once by the first agent that needs them.
//! - It holds the environment weakly, as the binding did before it: a direct mbox kept past
//!   its environment keeps the counters alive, not the environment.
//! - The environment's map is read once per coop builder and agent type (the builder keeps the
//!   class of the type it added last), so adding N agents of one type to a coop takes its lock
//!   once, not N times.

use super::direct::AgentHost;
use super::published_state::StateNamesOf;
use crate::ids::IdHash;
use crate::stats::{AgentStats, EnvCounters};
use parking_lot::Mutex;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

/// What the agents of one type in one environment share (module docs).
pub(crate) struct AgentClass {
    pub(crate) type_id: TypeId,
    pub(crate) agent_type: &'static str,
    pub(crate) counters: Arc<EnvCounters>,
    /// The environment (`env.rs` implements [`AgentHost`]).
    pub(crate) env: Weak<dyn AgentHost>,
    /// The final counters of its agents that are gone for good (their shared part was
    /// dropped), so that per-type totals never go down
    /// ([`EnvHandle::agent_type_stats`](crate::EnvHandle::agent_type_stats)). Written once per
    /// agent, as its shared part drops; never on a message path.
    pub(crate) retired: Mutex<AgentStats>,
    /// Where its agents' state names are (`mbox/published_state.rs`).
    pub(crate) state_names: StateNamesOf,
    /// The first layout of its type's agents (`agent/layout.rs`' `AgentLayout`, which the
    /// agents' layer downcasts this to: the mboxes do not name it), shared by every agent of
    /// the type whose definition declares the same.
    pub(crate) layout: OnceLock<Arc<dyn Any + Send + Sync>>,
    /// Whether its agents share their handler closures, and the set they share if they do
    /// (`agent/handlers/shared.rs`, which the agents' layer downcasts this to): decided once,
    /// by the first agent whose definition declares the cached layout.
    pub(crate) handlers: OnceLock<Option<Box<dyn Any + Send + Sync>>>,
    /// The definition its type gave, recorded for its later agents (`agent/define_once.rs`'s
    /// `DefinedOnce`, which the agents' layer downcasts this to).
    pub(crate) defined_once: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl AgentClass {
    /// A class of the agent type `T` named `agent_type`, counted in `counters`, of the
    /// environment `env`.
    pub(crate) fn new<T: 'static + ?Sized>(
        agent_type: &'static str,
        counters: Arc<EnvCounters>,
        env: Weak<dyn AgentHost>,
    ) -> Arc<Self> {
        Arc::new(AgentClass {
            type_id: TypeId::of::<T>(),
            agent_type,
            counters,
            env,
            retired: Mutex::default(),
            state_names: StateNamesOf::default(),
            layout: OnceLock::new(),
            handlers: OnceLock::new(),
            defined_once: OnceLock::new(),
        })
    }

    /// Adds the final counters of one of its agents that is gone for good to its retired
    /// totals.
    pub(crate) fn retire(&self, stats: &AgentStats) {
        self.retired.lock().accumulate(stats);
    }
}

/// One environment's classes, by agent type.
#[derive(Default)]
pub(crate) struct AgentClasses {
    by_type: Mutex<HashMap<TypeId, Arc<AgentClass>, IdHash>>,
}

impl AgentClasses {
    /// The class of the agent type `T` (named `agent_type`) in the environment `env`, made on
    /// first use.
    pub(crate) fn of<T: 'static + ?Sized>(
        &self,
        agent_type: &'static str,
        env: &Arc<dyn AgentHost>,
    ) -> Arc<AgentClass> {
        Arc::clone(
            self.by_type
                .lock()
                .entry(TypeId::of::<T>())
                .or_insert_with(|| {
                    AgentClass::new::<T>(
                        agent_type,
                        Arc::clone(env.counters()),
                        Arc::downgrade(env),
                    )
                }),
        )
    }

    /// Every class of the environment.
    pub(crate) fn all(&self) -> Vec<Arc<AgentClass>> {
        self.by_type.lock().values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Agent, Env};
    use std::sync::Arc;

    struct A;
    impl Agent for A {}
    struct B;
    impl Agent for B {}

    #[test]
    fn agents_of_one_type_share_one_class_and_each_type_has_its_own() {
        let env = Env::new().expect("env");
        let mut coop = env.handle().new_coop();
        let a1 = coop.add(A);
        let b = coop.add(B);
        let a2 = coop.add(A);
        // Another builder: the class comes from the env's map, not from the builder's cache.
        let mut other = env.handle().new_coop();
        let a3 = other.add(A);
        let [a1, a2, a3, b] = [&a1, &a2, &a3, &b].map(|m| Arc::clone(&m.shared().class));
        assert!(Arc::ptr_eq(&a1, &a2) && Arc::ptr_eq(&a1, &a3));
        assert!(!Arc::ptr_eq(&a1, &b));
        assert_eq!(a1.agent_type, std::any::type_name::<A>());
        assert_eq!(b.agent_type, std::any::type_name::<B>());
        // The map, the two builders' caches, and the four agents' shared parts (plus `a1`..`a3`).
        assert_eq!(Arc::strong_count(&a1), 1 + 2 + 3 + 3);
    }

    #[test]
    fn a_class_reaches_its_env_weakly() {
        let env = Env::new().expect("env");
        let mut coop = env.handle().new_coop();
        let mbox = coop.add(A);
        let shared = Arc::clone(mbox.shared());
        assert!(shared.env().is_some());
        assert!(shared.is_of(Arc::as_ptr(env.handle().inner())));
        drop(coop);
        drop(env);
        // A mbox kept past its env keeps the counters, not the env.
        assert!(shared.env().is_none());
        assert_eq!(shared.agent_type(), std::any::type_name::<A>());
    }
}
