//! The `active_group` dispatcher: a thread per named group of agents.
//!
//! Agents bound with the same group name share one one-thread dispatcher (`one_thread.rs`, on the engine of `engine.rs`).
//! The group keeps only a weak reference to it: the leases of its agents keep the thread, so
//! it ends when the group's last agent is gone, and a later binding to the same name starts a
//! new one.

use super::engine::Policy;
use super::one_thread::{OneThreadDispatcher, WeakOneThread};
use super::{BindScope, Binder, BinderKind, DispatcherEnv, PreparedBinding, check_name};
use crate::error::{BindError, BuildError};
use crate::priority::Priority;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

struct Inner {
    env: usize,
    name: String,
    groups: Mutex<HashMap<Arc<str>, WeakOneThread>>,
}

/// Settings of an `active_group` dispatcher ([`ActiveGroupDispatcher::builder`]): only its
/// name.
///
/// Its threads start as groups get their first agent, so [`build`](Self::build) starts
/// nothing and fails only on an invalid name; it returns a `Result` like every dispatcher's
/// builder.
///
/// ```
/// use agentry::{Env, disp::ActiveGroupDispatcher};
///
/// let env = Env::new().expect("env");
/// let groups = ActiveGroupDispatcher::builder("shards").build(env.handle()).expect("built");
/// assert_eq!(groups.live_groups(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct ActiveGroupBuilder {
    name: String,
}

impl ActiveGroupBuilder {
    /// Makes the dispatcher (its threads will be named `agentry-<name>-<group>`).
    pub fn build(&self, env: &impl DispatcherEnv) -> Result<ActiveGroupDispatcher, BuildError> {
        check_name(&self.name)?;
        Ok(ActiveGroupDispatcher(Arc::new(Inner {
            env: env.host().0.address(),
            name: self.name.clone(),
            groups: Mutex::new(HashMap::new()),
        })))
    }
}

/// Handle of an `active_group` dispatcher: one thread per named group.
///
/// ```
/// use agentry::{UserError, Agent, Ctx, Env, disp::ActiveGroupDispatcher};
///
/// struct Worker;
/// impl Agent for Worker {
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> { ctx.stop_env(); Ok(()) }
/// }
///
/// let env = Env::new().expect("env");
/// let groups = ActiveGroupDispatcher::new(env.handle(), "shards").expect("dispatcher");
/// let mut coop = env.handle().new_coop();
/// coop.add_with(Worker, &groups.binder("shard-1"));
/// env.handle().register_coop(coop).expect("registered");
/// env.run();
/// ```
#[derive(Clone)]
pub struct ActiveGroupDispatcher(Arc<Inner>);

impl ActiveGroupDispatcher {
    /// Settings for a new dispatcher named `name` (it has none but its name).
    pub fn builder(name: impl Into<String>) -> ActiveGroupBuilder {
        ActiveGroupBuilder { name: name.into() }
    }

    /// `builder(name).build(env)`: a dispatcher whose threads are named
    /// `agentry-<name>-<group>`.
    pub fn new(env: &impl DispatcherEnv, name: impl Into<String>) -> Result<Self, BuildError> {
        Self::builder(name).build(env)
    }

    /// A binder for the agents of group `group`.
    pub fn binder(&self, group: &str) -> Binder {
        Binder::of(BinderKind::ActiveGroup(self.clone(), Arc::from(group)))
    }

    /// Groups that currently have a thread.
    pub fn live_groups(&self) -> usize {
        self.0
            .groups
            .lock()
            .values()
            .filter(|g| g.is_live())
            .count()
    }

    pub(crate) fn prepare(
        &self,
        scope: &mut BindScope<'_>,
        group: &Arc<str>,
    ) -> Result<PreparedBinding, BindError> {
        if self.0.env != scope.env.address() {
            return Err(BindError::OtherEnv(self.0.name.clone()));
        }
        let mut groups = self.0.groups.lock();
        groups.retain(|_, g| g.is_live());
        let thread = match groups.get(group).and_then(WeakOneThread::upgrade) {
            Some(thread) => thread,
            None => {
                let thread = OneThreadDispatcher::spawn(
                    scope.env,
                    format!("{}-{group}", self.0.name),
                    "active_group",
                    Policy::Fifo,
                )
                .map_err(|e| BindError::Spawn(e.to_string()))?;
                groups.insert(Arc::clone(group), thread.downgrade());
                thread
            }
        };
        thread.prepare(scope, Priority::P0)
    }
}

impl fmt::Debug for ActiveGroupDispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActiveGroupDispatcher")
            .field("name", &self.0.name)
            .finish()
    }
}
