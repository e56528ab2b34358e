//! The state of one timer (see the ground rules in `timer.rs`).

use std::sync::atomic::{AtomicU8, Ordering};

const CANCELLED: u8 = 1;
const FIRED: u8 = 2;

/// Whether a timer's message may still be delivered.
#[derive(Debug, Default)]
pub(crate) struct TimerToken {
    flags: AtomicU8,
}

impl TimerToken {
    /// The check every delivery makes at the point it decides to run the handler (for a
    /// queued message: when the dispatcher takes it; for an insend handler: before calling
    /// it). A delivery whose check comes after [`cancel`](Self::cancel) never runs.
    #[inline]
    pub(crate) fn may_deliver(&self) -> bool {
        self.flags.load(Ordering::Acquire) & CANCELLED == 0
    }

    /// Cancels: no delivery decides to run after this returns.
    pub(crate) fn cancel(&self) {
        self.flags.fetch_or(CANCELLED, Ordering::AcqRel);
    }

    /// Marks a one-shot timer as sent by the timer thread.
    pub(crate) fn mark_fired(&self) {
        self.flags.fetch_or(FIRED, Ordering::AcqRel);
    }

    /// True until cancelled or (one-shot) sent.
    pub(crate) fn is_pending(&self) -> bool {
        self.flags.load(Ordering::Acquire) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::TimerToken;

    #[test]
    fn cancel_stops_later_deliveries_and_pending_tracks_both_flags() {
        let t = TimerToken::default();
        assert!(t.is_pending() && t.may_deliver());
        t.mark_fired();
        assert!(
            !t.is_pending() && t.may_deliver(),
            "a sent one-shot message still runs"
        );
        t.cancel();
        assert!(!t.may_deliver());
        let c = TimerToken::default();
        c.cancel();
        assert!(!c.is_pending() && !c.may_deliver());
    }
}
