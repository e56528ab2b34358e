//! The dispatchers' side of their environment: what a dispatcher needs of the env it is built
//! on and binds agents for, as a trait of this layer that the env implements (`env.rs`), so
//! that no dispatcher names the env.
//!
//! Ground rules:
//!
//! - [`DispatcherHost`] is everything a dispatcher asks of its env: its address (the identity
//!   its agents and worker threads are checked against), its counters and agent slab, starting
//!   a worker thread (joined at shutdown) or registering a closer, recording the dispatcher for
//!   the env's statistics, and the env's default dispatcher (made on first use);
//! - the builders take a [`DispatcherEnv`] — `&EnvHandle` or `&Env` —, a sealed public trait
//!   whose only use is to reach the host: users see one shape,
//!   `X::builder(name).build(&env)`, and cannot implement it.

use super::{Binder, Closable, DispatcherCore};
use crate::error::{BindError, BuildError};
use crate::slab::AgentSlab;
use crate::stats::EnvCounters;
use std::sync::{Arc, Weak};

/// What a dispatcher needs of its environment (implemented by the env's inner state).
pub(crate) trait DispatcherHost: Send + Sync {
    /// The environment's address: the identity a binding and a worker thread are checked
    /// against.
    fn address(&self) -> usize;
    /// The environment's counters.
    fn counters(&self) -> &Arc<EnvCounters>;
    /// The environment's agent slab.
    fn slab(&self) -> &Arc<AgentSlab>;
    /// Spawns a dispatcher thread named `name`; at shutdown `closer` is closed and the thread
    /// joined. Fails once the environment is stopped, or if the thread cannot start.
    fn spawn_worker(
        &self,
        name: &str,
        closer: Arc<dyn Closable>,
        body: Box<dyn FnOnce() + Send>,
    ) -> Result<(), BuildError>;
    /// Closes `closer` at shutdown (a dispatcher whose thread the environment did not start).
    fn register_closer(&self, closer: Arc<dyn Closable>);
    /// Records a dispatcher for the environment's dispatcher statistics.
    fn register_dispatcher(&self, core: Weak<dyn DispatcherCore>);
    /// The binder of the environment's default dispatcher, made (and its threads started) on
    /// first use; borrowed, so that binding an agent to it takes no reference of its own.
    fn default_dispatcher(&self) -> Result<&Binder, BindError>;
}

/// An environment a dispatcher can be built on: [`EnvHandle`](crate::EnvHandle) or
/// [`Env`](crate::Env) (or a reference to one). Sealed: every dispatcher's builder takes
/// `&impl DispatcherEnv`, so `X::builder(name).build(env.handle())` and `.build(&env)` both
/// work.
pub trait DispatcherEnv: sealed::HostOf {}

impl<T: sealed::HostOf + ?Sized> DispatcherEnv for T {}

impl<T: sealed::HostOf + ?Sized> sealed::HostOf for &T {
    fn host(&self) -> sealed::Host<'_> {
        (**self).host()
    }
}

pub(crate) mod sealed {
    use super::DispatcherHost;

    /// The dispatchers' view of an environment (not reachable outside the crate).
    pub struct Host<'a>(pub(crate) &'a dyn DispatcherHost);

    impl std::fmt::Debug for Host<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Host")
                .field("address", &self.0.address())
                .finish()
        }
    }

    /// How a builder reaches the environment's [`DispatcherHost`] (implemented in the env's
    /// layer).
    pub trait HostOf {
        /// The environment as its dispatchers see it.
        fn host(&self) -> Host<'_>;
    }
}
