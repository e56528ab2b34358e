//! Delayed and periodic messages.
//!
//! [`EnvHandle::send_delayed`](crate::EnvHandle::send_delayed) and
//! [`EnvHandle::send_periodic`](crate::EnvHandle::send_periodic) (also on [`Ctx`](crate::Ctx))
//! return a [`TimerHandle`]; the environment's timer thread delivers the message when it is
//! due. The timer engine (indexed heap by default, or the wheel or the sorted list) is chosen
//! with [`EnvBuilder::timer_engine`](crate::EnvBuilder::timer_engine); the clock is the
//! system's monotonic clock or a [`ManualClock`] for deterministic tests.
//!
//! # Ground rules
//!
//! - One timer thread per environment owns the delivery of due timers; it is started by the
//!   first timer scheduled (an environment whose agents use none runs none). The engine sits behind
//!   a mutex shared with the threads that schedule and cancel; messages are delivered after
//!   the mutex is released.
//! - Every timer has a token (`timer/token.rs`). Each delivery of its message — the
//!   dispatcher worker taking the queued message, the timer thread calling an insend handler,
//!   a restarted agent taking a deferred message — *begins* on the token at the point it
//!   decides to run the handler, and *ends* when the handler returns (`timer/delivery.rs`).
//!   A revoked token refuses to begin: the message is discarded and counted in
//!   `EnvStats::timers_revoked`.
//! - [`TimerHandle::cancel`] revokes the token, removes the timer from the engine, then waits
//!   until no delivery is in flight except those the calling thread is itself inside (a
//!   handler cancelling its own timer completes). So once it returns no handler for the
//!   timer's message runs or starts, whichever thread called it. Dropping the handle revokes
//!   and removes, but does not wait (a drop must never block: in a handler, at an agent's
//!   finish, while unwinding).
//! - `cancel` waits only for handlers of its own timer's message that have begun on other
//!   threads — never for a queued message, never for the caller's own delivery (each thread
//!   records the deliveries it is inside). An agent's handlers never overlap, so a handler
//!   cancelling a timer to its own agent waits at most for that agent's insend handlers on
//!   the timer thread. It can block forever only if such a handler waits for the canceller
//!   (a lock, or two handlers cancelling each other's timers); `cancel`'s docs say so.
//! - A timer's message sent to a message chain is checked when a receiver takes it; `cancel`
//!   does not wait for a receiver that took it already (chains have no delivery bracket).
//! - Periodic timers are fixed-rate: the next deadline is the previous deadline plus the
//!   period. After a stall the missed periods are delivered in a burst.

mod clock;
pub(crate) mod delivery;
mod service;
pub(crate) mod token;

pub use agentry_timer::EngineKind;
pub use clock::{Clock, ManualClock};
pub(crate) use service::TimerService;

use service::TimerShared;
use std::fmt;
use std::sync::{Arc, Weak};

/// A scheduled delayed or periodic message.
///
/// [`cancel`](Self::cancel) stops the timer and waits until no handler for its message runs;
/// dropping the handle stops it without waiting; [`detach`](Self::detach) lets it run without
/// a handle.
#[must_use = "dropping a TimerHandle cancels the timer; call .detach() to keep it running"]
pub struct TimerHandle {
    timer: Option<Arc<TimerShared>>,
    service: Weak<TimerService>,
}

impl TimerHandle {
    pub(crate) fn new(timer: Arc<TimerShared>, service: Weak<TimerService>) -> Self {
        TimerHandle {
            timer: Some(timer),
            service,
        }
    }

    /// Cancels the timer. Once this returns, no handler for the timer's message is running
    /// and none will start, whichever thread called it: a message already queued is
    /// discarded when its turn comes (counted in
    /// [`EnvStats::timers_revoked`](crate::EnvStats::timers_revoked)), an insend handler is
    /// not called, and if a handler for the message is running on another thread, `cancel`
    /// waits until it returns.
    ///
    /// The exception is the delivery the calling thread is inside: a handler (or insend
    /// handler) of this timer's message may cancel the timer — that handler runs to its end;
    /// `cancel` does not wait for it, only for deliveries of the message on other threads
    /// (other subscribers of a multi mbox, for instance).
    ///
    /// So `cancel` may block for as long as a handler of the message runs on another thread
    /// (an agent's handlers never overlap: from a handler of the agent the timer sends to,
    /// only that agent's insend handlers, on the timer thread, can be running). Do not call it
    /// where that handler may be waiting for the caller — holding a lock the handler takes, or
    /// in two handlers of two timers' messages that cancel each other's timers at the same
    /// moment (each would wait for the other forever).
    ///
    /// To a [message chain](crate::mchain::Mchain), the promise is narrower: no receive that starts
    /// after `cancel` returns gets the message; a receiver that took it before is not waited
    /// for.
    ///
    /// ```
    /// use agentry::{Agent, Ctx, Define, DefineError, Env};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// #[derive(Clone)]
    /// struct Tick;
    /// struct Ticker(Arc<AtomicU32>);
    /// impl Agent for Ticker {
    ///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
    ///         def.on(|t: &mut Ticker, _: &mut Ctx<Ticker>, _: Tick| {
    ///             t.0.fetch_add(1, Ordering::SeqCst);
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = Env::new().expect("env");
    /// let ticks = Arc::new(AtomicU32::new(0));
    /// let ticker = env.handle().register_agent(Ticker(Arc::clone(&ticks))).expect("registered");
    /// let ms = Duration::from_millis(1);
    /// let timer = env.handle().send_periodic(&ticker, ms, ms, Tick);
    /// std::thread::sleep(10 * ms);
    /// timer.cancel(); // from the main thread, while the agent may be handling a tick
    /// let seen = ticks.load(Ordering::SeqCst);
    /// std::thread::sleep(10 * ms);
    /// assert_eq!(ticks.load(Ordering::SeqCst), seen, "no tick handled after cancel returned");
    /// env.handle().stop();
    /// env.run();
    /// ```
    pub fn cancel(mut self) {
        if let Some(timer) = self.timer.take() {
            timer.token.revoke();
            if let Some(service) = self.service.upgrade() {
                service.unschedule(&timer);
            }
            timer.token.wait_for_deliveries(delivery::own(&timer.token));
        }
    }

    /// Lets the timer run without a handle: it can no longer be cancelled (a periodic timer
    /// runs until the environment stops).
    pub fn detach(mut self) {
        self.timer = None;
    }

    /// True until the timer is cancelled or, for a one-shot timer, sent.
    pub fn is_active(&self) -> bool {
        self.timer.as_ref().is_some_and(|t| t.token.is_pending())
    }
}

/// Dropping the handle cancels the timer **without waiting**: every delivery of its message
/// that has not begun is discarded (as by [`cancel`](TimerHandle::cancel)), but a handler
/// already running on another thread — or one its dispatcher had already decided to run —
/// may run after the drop returns. From a handler of the agent the timer sends to, that leaves
/// only its insend handlers; elsewhere, call `cancel` when it matters. A drop never blocks, so
/// it is safe anywhere (in a handler, as an agent finishes, while unwinding).
impl Drop for TimerHandle {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.token.revoke();
            if let Some(service) = self.service.upgrade() {
                service.unschedule(&timer);
            }
        }
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("active", &self.is_active())
            .finish()
    }
}
