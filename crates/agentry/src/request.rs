//! Synchronous request/reply.
//!
//! [`Mbox::request`](crate::Mbox::request) sends a [`Request<Q, R>`] and blocks until the
//! handler replies, the request is rejected (no handler, agent gone, overload, shutdown), the
//! handler panics or drops the request, or the timeout passes. Every outcome is a typed
//! result; a reply that arrives after the requester gave up is counted
//! (`EnvStats::replies_discarded`).

use crate::error::RequestError;
use crate::message::Undelivered;
use crate::message::payload::Reject;
use crate::stats::EnvCounters;
use parking_lot::{Condvar, Mutex};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl From<Undelivered> for RequestError {
    fn from(why: Undelivered) -> Self {
        match why {
            Undelivered::NoHandler => RequestError::NoHandler,
            Undelivered::AgentGone => RequestError::AgentGone,
            Undelivered::Overloaded => RequestError::Overloaded,
            Undelivered::HandlerPanicked => RequestError::HandlerPanicked,
            Undelivered::Shutdown => RequestError::Shutdown,
        }
    }
}

enum SlotState<R> {
    Waiting,
    Done(Result<R, RequestError>),
    Abandoned,
}

/// Where the reply lands; shared by the requester and the [`ReplyTo`].
pub(crate) struct ReplySlot<R> {
    state: Mutex<SlotState<R>>,
    ready: Condvar,
    counters: Arc<EnvCounters>,
}

impl<R> ReplySlot<R> {
    pub(crate) fn new(counters: Arc<EnvCounters>) -> Self {
        ReplySlot {
            state: Mutex::new(SlotState::Waiting),
            ready: Condvar::new(),
            counters,
        }
    }

    /// Stores the outcome, or gives it back if the requester stopped waiting.
    fn complete(&self, outcome: Result<R, RequestError>) -> Result<(), Result<R, RequestError>> {
        let mut state = self.state.lock();
        match *state {
            SlotState::Waiting => {
                *state = SlotState::Done(outcome);
                self.ready.notify_one();
                Ok(())
            }
            SlotState::Abandoned => {
                if outcome.is_ok() {
                    self.counters
                        .replies_discarded
                        .fetch_add(1, Ordering::Relaxed);
                }
                Err(outcome)
            }
            SlotState::Done(_) => unreachable!("invariant: one ReplyTo completes a slot once"),
        }
    }

    /// True once the outcome is stored (a reply, or why there is none).
    pub(crate) fn is_done(&self) -> bool {
        matches!(*self.state.lock(), SlotState::Done(_))
    }

    /// Blocks until the outcome is stored or `timeout` passes.
    pub(crate) fn wait(&self, timeout: Duration) -> Result<R, RequestError> {
        let deadline = Instant::now().checked_add(timeout);
        crate::disp::thread_pool::before_blocking();
        let mut state = self.state.lock();
        loop {
            if let SlotState::Done(_) = *state {
                let SlotState::Done(outcome) = std::mem::replace(&mut *state, SlotState::Abandoned)
                else {
                    unreachable!("invariant: checked above");
                };
                return outcome;
            }
            let timed_out = match deadline {
                Some(d) => self.ready.wait_until(&mut state, d).timed_out(),
                None => {
                    self.ready.wait(&mut state);
                    false
                }
            };
            if timed_out && matches!(*state, SlotState::Waiting) {
                *state = SlotState::Abandoned;
                return Err(RequestError::Timeout);
            }
        }
    }
}

/// The right (and duty) to answer one request. Dropping it unanswered tells the requester
/// [`RequestError::NoReply`] (or [`RequestError::HandlerPanicked`] while panicking).
#[must_use = "dropping a ReplyTo answers the request with RequestError::NoReply"]
pub struct ReplyTo<R> {
    slot: Option<Arc<ReplySlot<R>>>,
}

impl<R> ReplyTo<R> {
    /// Answers the request. Gives the reply back if the requester stopped waiting
    /// (timed out); such replies are counted in `EnvStats::replies_discarded`.
    pub fn reply(mut self, reply: R) -> Result<(), R> {
        let slot = self
            .slot
            .take()
            .expect("invariant: the slot is taken only here or in drop");
        slot.complete(Ok(reply)).map_err(|outcome| match outcome {
            Ok(reply) => reply,
            Err(_) => unreachable!("invariant: we stored Ok"),
        })
    }

    fn fail(mut self, error: RequestError) {
        if let Some(slot) = self.slot.take() {
            let _ = slot.complete(Err(error));
        }
    }
}

impl<R> Drop for ReplyTo<R> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let error = if std::thread::panicking() {
                RequestError::HandlerPanicked
            } else {
                RequestError::NoReply
            };
            let _ = slot.complete(Err(error));
        }
    }
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReplyTo(..)")
    }
}

/// A request carrying a query `Q` that expects an `R`.
///
/// Most agents subscribe with [`Define::on_request`](crate::Define::on_request) and just
/// return the reply. An agent that needs to answer later subscribes to `Request<Q, R>`
/// itself and keeps the [`ReplyTo`].
pub struct Request<Q, R> {
    query: Q,
    reply: ReplyTo<R>,
}

impl<Q, R> Request<Q, R> {
    pub(crate) fn new(query: Q, slot: Arc<ReplySlot<R>>) -> Self {
        Request {
            query,
            reply: ReplyTo { slot: Some(slot) },
        }
    }

    /// The query.
    pub fn query(&self) -> &Q {
        &self.query
    }

    /// Splits into the query and the reply handle.
    pub fn into_parts(self) -> (Q, ReplyTo<R>) {
        (self.query, self.reply)
    }

    /// Answers the request (see [`ReplyTo::reply`]).
    pub fn reply(self, reply: R) -> Result<(), R> {
        self.reply.reply(reply)
    }
}

impl<Q, R> fmt::Debug for Request<Q, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("query", &std::any::type_name::<Q>())
            .field("reply", &std::any::type_name::<R>())
            .finish()
    }
}

impl<Q: Send + 'static, R: Send + 'static> Reject for Request<Q, R> {
    fn reject(self, why: Undelivered) {
        self.reply.fail(why.into());
    }
}
