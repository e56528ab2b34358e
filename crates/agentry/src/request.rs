//! Synchronous request/reply.
//!
//! [`Mbox::request`](crate::Mbox::request) sends a [`Request<Q, R>`] and blocks until the
//! handler replies, the request is rejected (no handler, agent gone, overload, shutdown), the
//! handler panics or drops the request, or the timeout passes. Every outcome is a typed
//! result; a reply that arrives after the requester gave up is counted
//! (`EnvStats::replies_discarded`).
//!
//! [`Mbox::request_future`](crate::Mbox::request_future) sends the same request without
//! blocking: the reply is a [`PendingReply`], a `std` future woken by the [`ReplyTo`] (no
//! runtime needed; the caller chooses the timeout, e.g. with its runtime's timer).

use crate::error::RequestError;
use crate::message::Undelivered;
use crate::message::payload::Reject;
use crate::stats::EnvCounters;
use parking_lot::{Condvar, Mutex};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
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
    /// No outcome yet; the waker of the task awaiting it, if a future polled.
    Waiting(Option<Waker>),
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
            state: Mutex::new(SlotState::Waiting(None)),
            ready: Condvar::new(),
            counters,
        }
    }

    /// Stores the outcome, or gives it back if the requester stopped waiting.
    fn complete(&self, outcome: Result<R, RequestError>) -> Result<(), Result<R, RequestError>> {
        let mut state = self.state.lock();
        match &mut *state {
            SlotState::Waiting(waker) => {
                let waker = waker.take();
                *state = SlotState::Done(outcome);
                drop(state);
                self.ready.notify_one();
                if let Some(waker) = waker {
                    waker.wake();
                }
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
        crate::disp::before_blocking();
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
            if timed_out && matches!(*state, SlotState::Waiting(_)) {
                *state = SlotState::Abandoned;
                return Err(RequestError::Timeout);
            }
        }
    }

    /// The outcome if stored; otherwise registers the task's waker (woken by `complete`).
    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<R, RequestError>> {
        let mut state = self.state.lock();
        match &mut *state {
            SlotState::Waiting(waker) => {
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            SlotState::Done(_) => {
                let SlotState::Done(outcome) = std::mem::replace(&mut *state, SlotState::Abandoned)
                else {
                    unreachable!("invariant: checked above");
                };
                Poll::Ready(outcome)
            }
            SlotState::Abandoned => {
                unreachable!("invariant: a PendingReply polls until Ready, once")
            }
        }
    }

    /// The requester stopped waiting: a later reply is discarded and counted.
    fn abandon(&self) {
        let mut state = self.state.lock();
        if matches!(*state, SlotState::Waiting(_)) {
            *state = SlotState::Abandoned;
        }
    }
}

/// The reply to a request sent with [`Mbox::request_future`](crate::Mbox::request_future):
/// a future of the same outcome as [`Mbox::request`](crate::Mbox::request), without the
/// timeout — the caller sets one (a runtime's timer, a `select`).
///
/// It blocks no thread: the [`ReplyTo`] wakes the awaiting task. Dropping it before the
/// reply gives the request up (a later reply is discarded and counted in
/// `EnvStats::replies_discarded`). Polled again after it returned `Ready`, it returns
/// `Ready(Err(RequestError::NoReply))`.
///
/// ```
/// use agentry::{Agent, Ctx, Define, DefineError, Env};
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
///
/// struct Double;
/// impl Agent for Double {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on_request(|_: &mut Double, _: &mut Ctx<Double>, n: u32| n * 2)?;
///         Ok(())
///     }
/// }
///
/// let env = Env::new().unwrap();
/// let agent = env.handle().register_agent(Double).unwrap();
/// let mut reply = pin!(agent.request_future::<u32, u32>(21));
/// let mut cx = Context::from_waker(Waker::noop());
/// let answer = loop {
///     if let Poll::Ready(answer) = reply.as_mut().poll(&mut cx) {
///         break answer; // a runtime would sleep until woken; this doctest spins
///     }
///     std::thread::yield_now();
/// };
/// assert_eq!(answer, Ok(42));
/// env.handle().stop();
/// env.run();
/// ```
#[must_use = "a PendingReply does nothing unless awaited; dropping it gives the request up"]
pub struct PendingReply<R> {
    outcome: Pending<R>,
}

enum Pending<R> {
    Sent(Arc<ReplySlot<R>>),
    Refused(RequestError),
    Over,
}

impl<R> PendingReply<R> {
    pub(crate) fn sent(slot: Arc<ReplySlot<R>>) -> Self {
        PendingReply {
            outcome: Pending::Sent(slot),
        }
    }

    pub(crate) fn refused(why: RequestError) -> Self {
        PendingReply {
            outcome: Pending::Refused(why),
        }
    }
}

impl<R> Future for PendingReply<R> {
    type Output = Result<R, RequestError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let ready = match &this.outcome {
            Pending::Sent(slot) => match slot.poll(cx) {
                Poll::Ready(outcome) => outcome,
                Poll::Pending => return Poll::Pending,
            },
            Pending::Refused(why) => Err(*why),
            Pending::Over => Err(RequestError::NoReply),
        };
        this.outcome = Pending::Over;
        Poll::Ready(ready)
    }
}

impl<R> Drop for PendingReply<R> {
    fn drop(&mut self) {
        if let Pending::Sent(slot) = &self.outcome {
            slot.abandon();
        }
    }
}

impl<R> fmt::Debug for PendingReply<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.outcome {
            Pending::Sent(_) => "sent",
            Pending::Refused(_) => "refused",
            Pending::Over => "over",
        };
        f.debug_struct("PendingReply")
            .field("reply", &std::any::type_name::<R>())
            .field("state", &state)
            .finish()
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
