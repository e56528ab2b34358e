//! Mboxes: where messages are sent.
//!
//! - [`Mbox`]: an agent's *direct* mbox (MPSC). The message is moved to the agent: no `Arc`,
//!   no clone, and for small messages no allocation. Only its owner subscribes to it.
//! - [`MultiMbox`]: a *multi* mbox (MPMC publish/subscribe). Every agent subscribed to the
//!   message's type gets it (subject to its delivery filter), shared through one `Arc`; the
//!   message type must therefore be `Send + Sync`.
//! - [`Addr<A>`]: a direct mbox typed by its agent, whose sends compile only for the message
//!   types of the agent's [`Protocol`](crate::protocol::Protocol); [`Recipient<M>`]: one that sends
//!   only `M`. Both wrap an `Mbox` and add nothing to its send.
//!
//! All are cheap to clone handles. A send never blocks and never panics: a message that
//! cannot be delivered is counted in [`EnvStats`](crate::EnvStats) (and given back by the
//! `try_` variants).

pub(crate) mod class;
pub(crate) mod current_agent;
pub(crate) mod direct;
pub(crate) mod event_priority;
pub(crate) mod insend;
pub mod limit;
pub(crate) mod multi;
pub(crate) mod named;
pub(crate) mod published_state;
mod recipient;
pub(crate) mod supervisor_link;

pub use insend::InsendCtx;
pub use multi::MultiMbox;
pub(crate) use multi::{FilterFn, SubscriberOptions};
pub use recipient::Recipient;

use crate::error::{RequestError, SendError};
use crate::ids::{AgentId, MboxId};
use crate::mbox::direct::{AgentShared, Refused};
use crate::message::payload::Payload;
use crate::request::{PendingReply, ReplySlot, Request};
use crate::stats::{AgentStats, Tracked};
use crate::timer::token::TimerToken;
use current_agent::current_agent;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// An agent's direct mbox.
///
/// Obtained from [`Coop::add`](crate::Coop::add), [`Ctx::mbox`](crate::Ctx::mbox) or a name
/// lookup. It stays valid after the agent is gone; sends to it are then refused and counted.
#[derive(Clone)]
pub struct Mbox(Arc<AgentShared>);

impl Mbox {
    pub(crate) fn from_shared(shared: Arc<AgentShared>) -> Self {
        Mbox(shared)
    }

    pub(crate) fn shared(&self) -> &Arc<AgentShared> {
        &self.0
    }

    /// The mbox's id.
    pub fn id(&self) -> MboxId {
        self.0.mbox_id
    }

    /// The owning agent's id: `None` until its coop is registered (an mbox from
    /// [`Coop::add`](crate::Coop::add) exists before its agent does), and for good if the
    /// registration failed before the commit (a `define` or binding error). After the agent is
    /// gone, the id it had.
    pub fn agent_id(&self) -> Option<AgentId> {
        self.0.binding().map(|b| b.id())
    }

    /// True while the owning agent accepts messages.
    pub fn is_alive(&self) -> bool {
        self.0.live().is_some()
    }

    /// Sends `message` to the owning agent. If the agent is not running, or its message limit
    /// drops the message, the message is dropped and counted.
    #[inline]
    pub fn send<M: Send + 'static>(&self, message: M) {
        if let Err(refused) = self.0.deliver(self.0.mbox_id, message, Payload::new, None) {
            self.0.count_refused(refused, Payload::new);
        }
    }

    /// Sends `message`, giving it back if the agent is not running or its limit (reaction
    /// `Drop`) refuses it.
    pub fn try_send<M: Send + 'static>(&self, message: M) -> Result<(), SendError<M>> {
        match self.0.deliver(self.0.mbox_id, message, Payload::new, None) {
            Ok(()) => Ok(()),
            Err(Refused::Gone(m)) => {
                self.0.count_gone::<M>();
                Err(SendError::AgentGone(m))
            }
            Err(Refused::Overloaded(m)) => Err(SendError::Overloaded(m)),
        }
    }

    /// Sends the request `query` and blocks the calling thread until the agent replies with
    /// an `R` (its handler was subscribed with `on_request`, or takes [`Request<Q, R>`]), or
    /// until `timeout`.
    ///
    /// Usable from plain threads and from agents. An agent that requests from itself gets
    /// [`RequestError::SelfRequest`], and a request to an agent run by the requesting thread
    /// gets [`RequestError::SameThread`], instead of a deadlock.
    pub fn request<Q: Send + 'static, R: Send + 'static>(
        &self,
        query: Q,
        timeout: Duration,
    ) -> Result<R, RequestError> {
        if let Some(b) = self.0.live() {
            let insend = b.has_insend::<Request<Q, R>>();
            if !insend && current_agent() == Some(self.0.mbox_id) {
                return Err(RequestError::SelfRequest);
            }
            if !insend && b.queue.is_served_by_current_thread() {
                return Err(RequestError::SameThread);
            }
        }
        self.send_request(query)?.wait(timeout)
    }

    /// Sends the request `query` and returns its reply as a future, blocking no thread: the
    /// outcomes of [`request`](Self::request) except `Timeout` (the caller sets its own),
    /// `SelfRequest` and `SameThread` (nothing waits on a thread). See [`PendingReply`].
    pub fn request_future<Q: Send + 'static, R: Send + 'static>(
        &self,
        query: Q,
    ) -> PendingReply<R> {
        match self.send_request(query) {
            Ok(slot) => PendingReply::sent(slot),
            Err(why) => PendingReply::refused(why),
        }
    }

    /// Sends the request `query` without waiting: the reply lands in the returned slot (the
    /// testing kit runs the agent, then looks). Refusals are counted as by `request`.
    pub(crate) fn send_request<Q: Send + 'static, R: Send + 'static>(
        &self,
        query: Q,
    ) -> Result<Arc<ReplySlot<R>>, RequestError> {
        let slot = Arc::new(ReplySlot::new(Arc::clone(self.0.counters())));
        let request = Request::new(query, Arc::clone(&slot));
        match self
            .0
            .deliver(self.0.mbox_id, request, Payload::rejectable, None)
        {
            Ok(()) => Ok(slot),
            Err(Refused::Gone(_)) => {
                self.0.count_gone::<Request<Q, R>>();
                Err(RequestError::AgentGone)
            }
            Err(Refused::Overloaded(_)) => Err(RequestError::Overloaded),
        }
    }

    /// Sends a timer's message (see `timer.rs`).
    pub(crate) fn send_timed<M: Send + 'static>(&self, message: M, token: &Arc<TimerToken>) {
        if let Err(refused) = self
            .0
            .deliver(self.0.mbox_id, message, Payload::new, Some(token))
        {
            self.0.count_refused(refused, Payload::new);
        }
    }

    /// The owning agent's counters.
    pub fn stats(&self) -> AgentStats {
        let live = self.0.binding().and_then(|b| {
            let env = self.0.env()?;
            env.agent_slab().live_handled(b.incarnation())
        });
        // Read the published totals only after the live check failed: they are written before
        // the slot changes generation.
        let mut stats = AgentStats::read(&self.0.stats);
        if let Some(handled) = live {
            stats.handled = handled;
        }
        stats.queue_depth = self.0.binding().and_then(|b| b.limits().depth()).into();
        // Timed from its binding on; the counters exist from its first timed run.
        if self
            .0
            .binding()
            .is_some_and(|b| b.handler_timing().is_some())
        {
            stats.handler_time = Tracked::Value(stats.handler_time.value().unwrap_or_default());
        }
        stats
    }
}

impl PartialEq for Mbox {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Mbox {}

impl fmt::Debug for Mbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mbox")
            .field("id", &self.0.mbox_id)
            .field("agent", &self.agent_id())
            .field("agent_type", &self.0.agent_type())
            .finish()
    }
}
