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
//! - One timer thread per environment owns the delivery of due timers. The engine sits behind
//!   a mutex shared with the threads that schedule and cancel; messages are delivered after
//!   the mutex is released.
//! - Every timer has a token (`timer/token.rs`). Each delivery of its message checks the token
//!   at the point it decides to run the handler — the dispatcher worker when it takes a queued
//!   message, the sending thread before an insend handler; [`TimerHandle::cancel`] sets the
//!   token's cancelled flag. So once `cancel` returns, no delivery of the timer's message
//!   runs any more: a message already queued is discarded when its turn comes and counted in
//!   `EnvStats::timers_revoked`. A delivery that had already passed its check (for example
//!   the handler that is calling `cancel`) completes.
//! - Periodic timers are fixed-rate: the next deadline is the previous deadline plus the
//!   period. After a stall the missed periods are delivered in a burst.

mod clock;
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
/// Dropping the handle cancels the timer (like calling [`cancel`](Self::cancel)); call
/// [`detach`](Self::detach) to let it run without a handle.
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

    /// Cancels the timer: once this returns, no delivery of its message begins (a message
    /// already queued is discarded when its turn comes).
    pub fn cancel(mut self) {
        self.cancel_now();
    }

    /// Lets the timer run without a handle (it can no longer be cancelled).
    pub fn detach(mut self) {
        self.timer = None;
    }

    /// True until the timer is cancelled or, for a one-shot timer, sent.
    pub fn is_active(&self) -> bool {
        self.timer.as_ref().is_some_and(|t| t.token.is_pending())
    }

    fn cancel_now(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.token.cancel();
            if let Some(service) = self.service.upgrade() {
                service.unschedule(&timer);
            }
        }
    }
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        self.cancel_now();
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("active", &self.is_active())
            .finish()
    }
}
