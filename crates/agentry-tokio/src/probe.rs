//! The counters of one [`Tasks`](crate::Tasks) scope, shared with its futures, and the probe
//! that reads them from outside.
//!
//! # Ground rules
//!
//! One mutex over the counters and a condition variable signalled on every change; only
//! [`TaskProbe::settle`] waits on it. A future moves its counters at three points: when
//! spawned, when it ends (delivered, undelivered, panicked or cancelled — exactly one), and
//! around each [`sleep`](crate::sleep) on agentry's clock (waiting until the timer fires).

use crate::error::SettleError;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What became of the futures of one [`Tasks`](crate::Tasks) scope.
///
/// `spawned = running + delivered + undelivered + panicked + cancelled` at every instant.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskStats {
    /// Futures started.
    pub spawned: u64,
    /// Futures not ended yet.
    pub running: u64,
    /// Of the running futures, those waiting on agentry's clock ([`sleep`](crate::sleep))
    /// for a timer that has not fired.
    pub waiting_on_clock: u64,
    /// Outputs delivered to the agent's mbox.
    pub delivered: u64,
    /// Outputs the agent's mbox refused (the agent had finished, or a message limit
    /// refused it); counted by the core too, as for any refused send.
    pub undelivered: u64,
    /// Futures that panicked (each reported to the agent as a
    /// [`TaskPanicked`](crate::TaskPanicked) message).
    pub panicked: u64,
    /// Futures aborted before they ended (the agent finished, or
    /// [`abort_all`](crate::Tasks::abort_all)).
    pub cancelled: u64,
}

/// The counters behind a scope and its probes.
#[derive(Default)]
pub(crate) struct Shared {
    counts: Mutex<TaskStats>,
    changed: Condvar,
}

impl Shared {
    pub(crate) fn update(&self, change: impl FnOnce(&mut TaskStats)) {
        change(&mut self.counts.lock());
        self.changed.notify_all();
    }

    pub(crate) fn stats(&self) -> TaskStats {
        *self.counts.lock()
    }
}

/// A read-only view of one [`Tasks`](crate::Tasks) scope's counters, usable from any thread
/// (and after the agent is gone).
#[derive(Clone)]
pub struct TaskProbe(pub(crate) Arc<Shared>);

impl TaskProbe {
    /// The counters now.
    pub fn stats(&self) -> TaskStats {
        self.0.stats()
    }

    /// Blocks the calling thread (real time, at most `timeout`) until every running future of
    /// the scope is waiting on agentry's clock or has ended — the quiet point where a test on
    /// virtual time may move the clock, or look at what reached the agent.
    ///
    /// For tests and other synchronous code; never call it from a future (it blocks its
    /// thread). A future waiting on anything else — a real tokio sleep, a socket — counts as
    /// running: `settle` waits for it in real time.
    pub fn settle(&self, timeout: Duration) -> Result<TaskStats, SettleError> {
        let deadline = Instant::now() + timeout;
        let mut counts = self.0.counts.lock();
        while counts.running > counts.waiting_on_clock {
            if self.0.changed.wait_until(&mut counts, deadline).timed_out()
                && counts.running > counts.waiting_on_clock
            {
                return Err(SettleError(*counts));
            }
        }
        Ok(*counts)
    }
}

impl std::fmt::Debug for TaskProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TaskProbe").field(&self.stats()).finish()
    }
}
