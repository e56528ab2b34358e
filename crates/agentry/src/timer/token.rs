//! The state of one timer, and the protocol that makes [`TimerHandle::cancel`] a barrier.
//!
//! [`TimerHandle::cancel`]: crate::timer::TimerHandle::cancel
//!
//! # Ground rules
//!
//! - One atomic word holds it all: `CANCELLED`, `FIRED` (a one-shot timer was sent),
//!   `WAITING` (a canceller sleeps until the deliveries in flight end) and, above them, the
//!   number of *deliveries in flight*. A delivery is the span from the decision to run a
//!   handler for the timer's message to that handler's return: a dispatcher taking the queued
//!   message, the timer thread calling an insend handler, a restarted agent taking a deferred
//!   message. It starts with [`begin`](TimerToken::begin) and ends with
//!   [`end`](TimerToken::end) (`timer/delivery.rs` pairs them).
//! - `begin` adds one delivery unless `CANCELLED` is set, in one compare-and-swap;
//!   [`revoke`](TimerToken::revoke) sets `CANCELLED` in one read-modify-write. Both act on
//!   the same word, so the word's modification order puts every `begin` either before the
//!   revoke (the delivery is counted, and a cancel waits for it) or after it (the `begin`
//!   sees `CANCELLED` and refuses): no delivery slips between the check and the count.
//! - [`wait_for_deliveries`](TimerToken::wait_for_deliveries)`(own)` returns once at most
//!   `own` deliveries are in flight — `own` being those the calling thread is itself inside
//!   (a handler cancelling its own timer must not wait for itself). After a revoke the count
//!   only falls, so from then on no handler runs except the caller's own. `end` releases and
//!   the waiter acquires: what the handlers did is visible to the canceller.
//! - The waiter yields a few times (a handler usually ends within microseconds), then
//!   parks: it publishes its thread in `waiter`, then sets `WAITING`; an `end` that finds
//!   `WAITING` in its read-modify-write unparks it. Both are read-modify-writes of the one
//!   word, so either the waiter's sees the count already down, or the `end`'s sees `WAITING`
//!   (and, acquiring, the thread published before it): a wake-up is never lost. `park` may
//!   also return spuriously (or for a stale unpark): the waiter re-checks. On its way out it
//!   clears `WAITING`; an `end` that read it just before may still unpark the thread once —
//!   a spurious wake-up, which `park`'s contract allows and every parking loop (the
//!   dispatchers', std's channels) re-checks for.
//! - `waiter` is written once (a `OnceLock`): only the timer's one handle cancels and waits.
//!   Should a second waiter ever come, it finds the lock taken and polls with `yield_now`.
//! - Nothing here allocates or locks on the path of a delivery: `begin` is a load and a
//!   compare-and-swap, `end` one read-modify-write; only a canceller that has to wait pays
//!   more. Plain messages never come here.
//!
//! The model checks are in `sync/loom_tests.rs` (this file is compiled into them).

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::thread::{self, Thread};
use std::fmt;
use std::sync::OnceLock;

const CANCELLED: u64 = 1;
const FIRED: u64 = 2;
const WAITING: u64 = 4;
/// One delivery in flight (the count sits above the flags).
const DELIVERY: u64 = 8;

/// How many times a canceller yields before it parks (none in the model: loom runs the other
/// threads on a yield, which would hide the parking path).
const YIELDS: u32 = if cfg!(loom) { 0 } else { 16 };

fn in_flight(state: u64) -> u64 {
    state / DELIVERY
}

/// Whether a timer's message may still be delivered, and how many deliveries are in flight.
#[derive(Default)]
pub(crate) struct TimerToken {
    state: AtomicU64,
    /// The thread waiting in [`wait_for_deliveries`](Self::wait_for_deliveries).
    waiter: OnceLock<Thread>,
}

impl TimerToken {
    /// True unless revoked. A cheap early check (the timer thread, a chain's receiver); the
    /// decision to run a handler is [`begin`](Self::begin).
    #[inline]
    pub(crate) fn may_deliver(&self) -> bool {
        self.state.load(Ordering::Acquire) & CANCELLED == 0
    }

    /// Starts a delivery: false if the timer was revoked (then no handler may run). A true
    /// must be followed by exactly one [`end`](Self::end).
    #[inline]
    pub(crate) fn begin(&self) -> bool {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if state & CANCELLED != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                state,
                state + DELIVERY,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => state = now,
            }
        }
    }

    /// Ends a delivery (its handler returned); wakes a waiting canceller.
    #[inline]
    pub(crate) fn end(&self) {
        // Release: the handler's effects reach the canceller. Acquire: seeing `WAITING`, this
        // thread also sees the waiter's thread, published before it.
        let before = self.state.fetch_sub(DELIVERY, Ordering::AcqRel);
        debug_assert!(in_flight(before) > 0, "end without begin");
        if before & WAITING != 0 {
            self.waiter
                .get()
                .expect("invariant: WAITING is set after the waiter is published")
                .unpark();
        }
    }

    /// Revokes: every later [`begin`](Self::begin) refuses. Never waits.
    pub(crate) fn revoke(&self) {
        self.state.fetch_or(CANCELLED, Ordering::AcqRel);
    }

    /// Waits until at most `own` deliveries are in flight: `own` are the calling thread's own
    /// (it is inside them), the rest run on other threads. Called after
    /// [`revoke`](Self::revoke), it returns once no handler but the caller's own runs.
    pub(crate) fn wait_for_deliveries(&self, own: u64) {
        let done = |state: u64| in_flight(state) <= own;
        if done(self.state.load(Ordering::Acquire)) {
            return;
        }
        for _ in 0..YIELDS {
            thread::yield_now();
            if done(self.state.load(Ordering::Acquire)) {
                return;
            }
        }
        if self.waiter.set(thread::current()).is_err() {
            // Another thread sleeps here already (only the timer's one handle waits, so this
            // does not happen); it owns the wake-ups.
            while !done(self.state.load(Ordering::Acquire)) {
                thread::yield_now();
            }
            return;
        }
        // Release: an `end` that sees `WAITING` sees the thread set above.
        let mut state = self.state.fetch_or(WAITING, Ordering::AcqRel);
        while !done(state) {
            thread::park();
            state = self.state.load(Ordering::Acquire);
        }
        self.state.fetch_and(!WAITING, Ordering::Relaxed);
    }

    /// Marks a one-shot timer as sent by the timer thread.
    pub(crate) fn mark_fired(&self) {
        self.state.fetch_or(FIRED, Ordering::AcqRel);
    }

    /// True until revoked or (one-shot) sent.
    pub(crate) fn is_pending(&self) -> bool {
        self.state.load(Ordering::Acquire) & (CANCELLED | FIRED) == 0
    }
}

impl fmt::Debug for TimerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.load(Ordering::Relaxed);
        f.debug_struct("TimerToken")
            .field("cancelled", &(state & CANCELLED != 0))
            .field("fired", &(state & FIRED != 0))
            .field("in_flight", &in_flight(state))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::TimerToken;

    #[test]
    fn revoke_refuses_later_deliveries_and_pending_tracks_both_flags() {
        let t = TimerToken::default();
        assert!(t.is_pending() && t.may_deliver());
        t.mark_fired();
        assert!(
            !t.is_pending() && t.may_deliver(),
            "a sent one-shot message still runs"
        );
        t.revoke();
        assert!(!t.may_deliver() && !t.begin());
        let c = TimerToken::default();
        c.revoke();
        assert!(!c.is_pending() && !c.may_deliver());
    }

    #[test]
    fn a_waiter_returns_at_once_for_its_own_deliveries_and_after_the_others_end() {
        let t = std::sync::Arc::new(TimerToken::default());
        assert!(t.begin() && t.begin(), "two deliveries in flight");
        t.revoke();
        let other = {
            let t = std::sync::Arc::clone(&t);
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                t.end();
            })
        };
        // One delivery is this thread's own; it waits for the other only.
        t.wait_for_deliveries(1);
        assert_eq!(super::in_flight(t.state.load(super::Ordering::Acquire)), 1);
        other.join().expect("other");
        t.end();
        t.wait_for_deliveries(0);
    }
}
