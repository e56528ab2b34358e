//! Requests waiting for their reply.
//!
//! A blocking requester waits on its own [`Slot`] with its own timeout; a non-blocking one
//! (`send_request`) names the mbox its reply goes to and has a deadline in a heap that the
//! sweeper thread watches. Completion (reply, failure, timeout, disconnect, close) removes the
//! entry under the lock and completes it outside it, so each request completes exactly once.

use crate::core::Core;
use crate::envelope::Envelope;
use crate::error::RequestError;
use agentry::Mbox;
use bytes::Bytes;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A reply's envelope and (still encoded) payload.
#[derive(Debug)]
pub(crate) struct ReplyData {
    pub(crate) envelope: Envelope,
    pub(crate) payload: Bytes,
}

pub(crate) type Outcome = Result<ReplyData, RequestError>;

/// Turns a request's outcome into the requester's reply message and sends it: one plain
/// function per reply type (`RemoteMbox::send_request` picks it), so a waiting request holds
/// no allocation of its own.
pub(crate) type Deliver = fn(&Core, &Mbox, u64, Outcome);

pub(crate) enum Waiter {
    /// A thread blocked in `RemoteMbox::request`.
    Blocking(Arc<Slot>),
    /// `send_request`: `deliver` sends the outcome of request `corr` to `to`.
    Mbox {
        to: Mbox,
        corr: u64,
        deliver: Deliver,
    },
}

impl Waiter {
    pub(crate) fn complete(self, core: &Core, outcome: Outcome) {
        match self {
            Waiter::Blocking(slot) => slot.fill(outcome),
            Waiter::Mbox { to, corr, deliver } => deliver(core, &to, corr, outcome),
        }
    }
}

/// Where a blocking requester's outcome lands.
pub(crate) struct Slot {
    outcome: Mutex<Option<Outcome>>,
    ready: Condvar,
}

impl Slot {
    pub(crate) fn new() -> Slot {
        Slot {
            outcome: Mutex::new(None),
            ready: Condvar::new(),
        }
    }

    fn fill(&self, outcome: Outcome) {
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.ready.notify_one();
    }

    /// Waits until filled or `deadline`; `None` on timeout.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Outcome> {
        let mut g = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(o) = g.take() {
                return Some(o);
            }
            match deadline {
                None => g = self.ready.wait(g).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return None;
                    }
                    g = self
                        .ready
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }
}

#[derive(Default)]
struct Table {
    map: HashMap<u64, Waiter>,
    deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
    closed: bool,
}

/// The pending-request table.
#[derive(Default)]
pub(crate) struct Pending {
    table: Mutex<Table>,
    /// Wakes the sweeper when an earlier deadline arrives or at close.
    sweep: Condvar,
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Inserts a waiter; gives it back if the table is closed.
    pub(crate) fn insert(
        &self,
        corr: u64,
        waiter: Waiter,
        deadline: Option<Instant>,
    ) -> Result<(), Waiter> {
        let mut t = self.lock();
        if t.closed {
            return Err(waiter);
        }
        t.map.insert(corr, waiter);
        if let Some(d) = deadline {
            let earliest = t.deadlines.peek().map(|Reverse((e, _))| *e);
            t.deadlines.push(Reverse((d, corr)));
            // Entries of completed requests stay in the heap until they expire; compact when
            // they dominate, so the heap stays proportional to what is pending.
            if t.deadlines.len() > 2 * t.map.len() + 1024 {
                let Table { map, deadlines, .. } = &mut *t;
                deadlines.retain(|Reverse((_, c))| map.contains_key(c));
            }
            if earliest.is_none_or(|e| d < e) {
                self.sweep.notify_one();
            }
        }
        Ok(())
    }

    /// Removes a waiter (its request completed some other way, or its requester gave up).
    pub(crate) fn remove(&self, corr: u64) -> Option<Waiter> {
        self.lock().map.remove(&corr)
    }

    /// A caller still waits for request `corr`.
    pub(crate) fn contains(&self, corr: u64) -> bool {
        self.lock().map.contains_key(&corr)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Removes every waiter not in `keep` (requests still buffered, not yet sent).
    pub(crate) fn take_all_except(&self, keep: &HashSet<u64>) -> Vec<Waiter> {
        let mut t = self.lock();
        let gone: Vec<u64> = t
            .map
            .keys()
            .filter(|c| !keep.contains(c))
            .copied()
            .collect();
        gone.iter().filter_map(|c| t.map.remove(c)).collect()
    }

    /// Closes the table: every waiter is returned, later inserts are refused, the sweeper
    /// exits.
    pub(crate) fn close(&self) -> Vec<Waiter> {
        let mut t = self.lock();
        t.closed = true;
        t.deadlines.clear();
        let all = t.map.drain().map(|(_, w)| w).collect();
        self.sweep.notify_all();
        all
    }

    /// The sweeper's loop: completes expired waiters with `on_expire` until closed.
    pub(crate) fn run_sweeper(&self, on_expire: impl Fn(Waiter)) {
        let mut t = self.lock();
        loop {
            if t.closed {
                return;
            }
            let now = Instant::now();
            let mut expired = Vec::new();
            while let Some(Reverse((d, corr))) = t.deadlines.peek().copied() {
                if d > now {
                    break;
                }
                t.deadlines.pop();
                if let Some(w) = t.map.remove(&corr) {
                    expired.push(w);
                }
            }
            if !expired.is_empty() {
                drop(t);
                for w in expired {
                    on_expire(w);
                }
                t = self.lock();
                continue;
            }
            let wait = t
                .deadlines
                .peek()
                .map_or(Duration::from_secs(3600), |Reverse((d, _))| {
                    d.saturating_duration_since(now)
                });
            t = self
                .sweep
                .wait_timeout(t, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
