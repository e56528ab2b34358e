//! The `active_obj` dispatcher: a thread of its own for every agent bound to it.
//!
//! Each binding starts a one-thread dispatcher (`one_thread.rs`) for its agent; the agent's
//! lease is the only thing that keeps it, so the thread ends when the agent is gone (or when
//! its coop's registration is rolled back).

use super::engine::Policy;
use super::one_thread::OneThreadDispatcher;
use super::{BindScope, Binder, BinderKind, DispatcherEnv, PreparedBinding, check_name};
use crate::error::{BindError, BuildError};
use crate::priority::Priority;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

struct Inner {
    env: usize,
    name: String,
    started: AtomicU64,
}

/// Settings of an `active_obj` dispatcher ([`ActiveObjDispatcher::builder`]): only its name.
///
/// Its threads start as agents are bound, so [`build`](Self::build) starts nothing and fails
/// only on an invalid name; it returns a `Result` like every dispatcher's builder.
///
/// ```
/// use agentry::{BuildError, Env, disp::ActiveObjDispatcher};
///
/// let env = Env::new().expect("env");
/// let per_agent = ActiveObjDispatcher::builder("blocking").build(env.handle()).expect("built");
/// assert_eq!(per_agent.threads_started(), 0);
/// assert!(matches!(
///     ActiveObjDispatcher::builder("").build(env.handle()),
///     Err(BuildError::InvalidName(_))
/// ));
/// ```
#[derive(Clone, Debug)]
pub struct ActiveObjBuilder {
    name: String,
}

impl ActiveObjBuilder {
    /// Makes the dispatcher (its threads will be named `agentry-<name>-<n>`).
    pub fn build(&self, env: &impl DispatcherEnv) -> Result<ActiveObjDispatcher, BuildError> {
        check_name(&self.name)?;
        Ok(ActiveObjDispatcher(Arc::new(Inner {
            env: env.host().0.address(),
            name: self.name.clone(),
            started: AtomicU64::new(0),
        })))
    }
}

/// Handle of an `active_obj` dispatcher: one thread per agent.
///
/// ```
/// use agentry::{UserError, Agent, Ctx, Env, disp::ActiveObjDispatcher};
///
/// struct Worker;
/// impl Agent for Worker {
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> { ctx.stop_env(); Ok(()) }
/// }
///
/// let env = Env::new().expect("env");
/// let per_agent = ActiveObjDispatcher::new(env.handle(), "workers").expect("dispatcher");
/// let mut coop = env.handle().new_coop();
/// coop.add_with(Worker, &per_agent.binder());
/// env.handle().register_coop(coop).expect("registered");
/// env.run();
/// ```
#[derive(Clone)]
pub struct ActiveObjDispatcher(Arc<Inner>);

impl ActiveObjDispatcher {
    /// Settings for a new dispatcher named `name` (it has none but its name).
    pub fn builder(name: impl Into<String>) -> ActiveObjBuilder {
        ActiveObjBuilder { name: name.into() }
    }

    /// `builder(name).build(env)`: a dispatcher whose threads are named `agentry-<name>-<n>`.
    pub fn new(env: &impl DispatcherEnv, name: impl Into<String>) -> Result<Self, BuildError> {
        Self::builder(name).build(env)
    }

    /// A binder that gives each agent bound with it a thread of its own.
    pub fn binder(&self) -> Binder {
        Binder::of(BinderKind::ActiveObj(self.clone()))
    }

    /// Threads started so far (one per agent bound).
    pub fn threads_started(&self) -> u64 {
        self.0.started.load(Ordering::Relaxed)
    }

    pub(crate) fn prepare(&self, scope: &mut BindScope<'_>) -> Result<PreparedBinding, BindError> {
        if self.0.env != scope.env.address() {
            return Err(BindError::OtherEnv(self.0.name.clone()));
        }
        let n = self.0.started.fetch_add(1, Ordering::Relaxed);
        let thread = OneThreadDispatcher::spawn(
            scope.env,
            format!("{}-{n}", self.0.name),
            "active_obj",
            Policy::Fifo,
        )
        .map_err(|e| BindError::Spawn(e.to_string()))?;
        // The handle goes away here: the agent's lease is what keeps the thread.
        thread.prepare(scope, Priority::P0)
    }
}

impl fmt::Debug for ActiveObjDispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActiveObjDispatcher")
            .field("name", &self.0.name)
            .finish()
    }
}
