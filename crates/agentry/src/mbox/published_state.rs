//! The state an agent is in, published by its worker for readers on other threads
//! ([`EnvHandle::snapshot`](crate::EnvHandle::snapshot)). It lives in the agent's direct
//! mbox (its shared part); the names of the states come from the agent layer through
//! [`StateNames`], so this layer names no agent type.
//!
//! # Ground rules
//!
//! - Only the agent's worker writes it: when the agent has entered its initial states
//!   ([`started`](PublishedState::started), once per incarnation, with the incarnation's
//!   layout), after a handler's state change has been applied and after a state time limit
//!   switched the state ([`set`](PublishedState::set)). Nothing is written per message: an
//!   agent that never changes state writes it once per incarnation.
//! - A state change is one relaxed store of the state's index: no lock, no fence. The layout
//!   changes only with the incarnation (`started`), and `started` writes the layout and the
//!   index together under the lock that readers take: a reader never pairs an index with
//!   another incarnation's layout (`set` only ever writes an index of the layout `started`
//!   published before it, on the same thread).
//! - It is a report, not a synchronisation point: a reader sees the state as of the last
//!   publication, which may be one transition behind the worker.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

/// The names of an agent's states by index (its layout, in the agent layer).
pub(crate) trait StateNames: Send + Sync {
    fn state_name(&self, index: u16) -> &str;
}

/// An agent's current state as its worker last published it (module docs).
#[derive(Default)]
pub(crate) struct PublishedState {
    /// The current incarnation's state names (`None` before the agent started).
    layout: Mutex<Option<Arc<dyn StateNames>>>,
    /// The index of the current state in `layout`.
    index: AtomicU16,
}

impl PublishedState {
    /// The incarnation whose layout is `layout` has entered its initial state `state`.
    pub(crate) fn started(&self, layout: Arc<dyn StateNames>, state: u16) {
        let mut published = self.layout.lock();
        *published = Some(layout);
        self.index.store(state, Ordering::Relaxed);
    }

    /// The agent is now in `state` (of the layout published by `started`).
    #[inline]
    pub(crate) fn set(&self, state: u16) {
        self.index.store(state, Ordering::Relaxed);
    }

    /// Calls `f` with the name of the published state (`None` before the agent started).
    pub(crate) fn with_name<R>(&self, f: impl FnOnce(Option<&str>) -> R) -> R {
        let layout = self.layout.lock();
        let state = self.index.load(Ordering::Relaxed);
        f(layout.as_ref().map(|layout| layout.state_name(state)))
    }
}
