//! Dispatchers: which threads run which agents.
//!
//! # The seam
//!
//! An agent meets its dispatcher in exactly two places:
//!
//! - its [`EventQueue`]: where senders push its demands. A dispatcher that runs the queue's
//!   demands on its thread(s) is the only code that touches the agent (see `slab.rs`);
//! - its [`Binder`]: chosen per agent or per coop, it binds in two phases so that coop
//!   registration stays transactional — `prepare` may fail and reserves what the binding
//!   needs, the bind itself (publishing the queue) cannot fail, and dropping a prepared
//!   binding rolls it back.
//!
//! Adding a dispatcher means adding one `EventQueue` variant (static dispatch on the send
//! path) and one `Binder` flavour.

mod local_queue;
pub mod one_thread;
pub(crate) mod worker;

use crate::demand::Demand;
use crate::error::BindError;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Where an agent's demands go.
#[derive(Clone)]
pub(crate) enum EventQueue {
    OneThread(Arc<one_thread::Queue>),
}

impl EventQueue {
    /// Queues a demand; gives it back if the dispatcher is shut down.
    #[inline(always)]
    pub(crate) fn push(&self, demand: Demand) -> Result<(), Demand> {
        match self {
            EventQueue::OneThread(q) => q.push(demand),
        }
    }

    /// True if the calling thread is the one that runs this queue's demands (a blocking wait
    /// for one of its agents would never end).
    pub(crate) fn is_served_by_current_thread(&self) -> bool {
        match self {
            EventQueue::OneThread(q) => q.is_served_by_current_thread(),
        }
    }
}

/// Keeps a dispatcher alive while an agent is bound to it.
pub(crate) struct Lease(#[allow(dead_code)] Arc<dyn Any + Send + Sync>);

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Lease")
    }
}

/// The first phase of a binding; dropping it rolls the binding back.
pub(crate) struct PreparedBinding {
    pub(crate) queue: EventQueue,
    pub(crate) lease: Lease,
}

/// Binds agents to a dispatcher. Obtained from a dispatcher handle, e.g.
/// [`OneThreadDispatcher::binder`](one_thread::OneThreadDispatcher::binder); pass it to
/// [`Coop::add_with`](crate::Coop::add_with) or [`Coop::set_binder`](crate::Coop::set_binder).
#[derive(Clone, Debug)]
pub struct Binder(BinderKind);

#[derive(Clone, Debug)]
enum BinderKind {
    OneThread(one_thread::OneThreadDispatcher),
}

impl Binder {
    /// `env` is the address of the registering environment (`EnvInner::address`).
    pub(crate) fn prepare(&self, env: usize) -> Result<PreparedBinding, BindError> {
        match &self.0 {
            BinderKind::OneThread(d) => d.prepare(env),
        }
    }
}
