//! Requests waiting for their reply.
//!
//! A blocking requester waits on its own [`Slot`] with its own timeout; a non-blocking one
//! (`send_request`) names the mbox its reply goes to and has a deadline in a heap that the
//! sweeper thread watches. Completion (reply, failure, timeout, disconnect, close) removes the
//! entry under the lock and completes it outside it, so each request completes exactly once.
//!
//! An entry also records whether its request was handed to the transport: a dropped
//! connection fails only those (`Disconnected`); a request still on its way to the outbound
//! buffer, or in it, waits for the next connection like any buffered send.

use crate::core::Core;
use crate::envelope::Envelope;
use crate::error::RequestError;
use agentry::Mbox;
use bytes::Bytes;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A reply's envelope and (still encoded) payload.
#[derive(Debug)]
pub(crate) struct ReplyData<'a> {
    pub(crate) envelope: Envelope,
    pub(crate) payload: ReplyBytes<'a>,
}

/// A reply's payload as its transport read it: shared bytes (NATS), or borrowed from the
/// transport's read buffer (the link). A `send_request` waiter decodes it in place; only a
/// blocked requester, which decodes on its own thread, takes a copy of borrowed bytes.
#[derive(Debug)]
pub(crate) enum ReplyBytes<'a> {
    Borrowed(&'a [u8]),
    Shared(Bytes),
}

impl ReplyBytes<'_> {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            ReplyBytes::Borrowed(b) => b,
            ReplyBytes::Shared(b) => b,
        }
    }
}

impl ReplyData<'_> {
    fn into_owned(self) -> ReplyData<'static> {
        let payload = match self.payload {
            ReplyBytes::Borrowed(b) => Bytes::copy_from_slice(b),
            ReplyBytes::Shared(b) => b,
        };
        ReplyData {
            envelope: self.envelope,
            payload: ReplyBytes::Shared(payload),
        }
    }
}

pub(crate) type Outcome<'a> = Result<ReplyData<'a>, RequestError>;

/// Turns a request's outcome into the requester's reply message and sends it: one plain
/// function per reply type (`RemoteMbox::send_request` picks it), so a waiting request holds
/// no allocation of its own.
pub(crate) type Deliver = for<'a> fn(&Core, &Mbox, u64, Outcome<'a>);

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
    pub(crate) fn complete(self, core: &Core, outcome: Outcome<'_>) {
        match self {
            Waiter::Blocking(slot) => slot.fill(outcome.map(ReplyData::into_owned)),
            Waiter::Mbox { to, corr, deliver } => deliver(core, &to, corr, outcome),
        }
    }
}

/// Where a blocking requester's outcome lands.
pub(crate) struct Slot {
    outcome: Mutex<Option<Outcome<'static>>>,
    ready: Condvar,
}

impl Slot {
    pub(crate) fn new() -> Slot {
        Slot {
            outcome: Mutex::new(None),
            ready: Condvar::new(),
        }
    }

    fn fill(&self, outcome: Outcome<'static>) {
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.ready.notify_one();
    }

    /// Waits until filled or `deadline`; `None` on timeout.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Outcome<'static>> {
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

/// Hashes the pending table's keys — correlation ids, sequential numbers of this gateway's
/// own making — with one multiplication instead of SipHash (three lookups per request). A
/// peer only names ids to look up, never to insert, so it cannot crowd the table.
#[derive(Default)]
struct CorrHasher(u64);

/// An odd constant with well-spread bits (2^64 / φ): the table's bucket index (low bits)
/// stays a permutation of a run of sequential ids, its control byte (top bits) is mixed.
const CORR_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for CorrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(CORR_MIX);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(CORR_MIX);
    }
}

/// A waiting request.
struct Entry {
    waiter: Waiter,
    /// Handed to the transport (published, or written to the link).
    sent: bool,
}

#[derive(Default)]
struct Table {
    map: HashMap<u64, Entry, BuildHasherDefault<CorrHasher>>,
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
        t.map.insert(
            corr,
            Entry {
                waiter,
                sent: false,
            },
        );
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
        self.lock().map.remove(&corr).map(|e| e.waiter)
    }

    /// Records that the requests `corrs` were handed to the transport (those still waited
    /// for); takes the lock only if there is one.
    pub(crate) fn mark_sent(&self, corrs: impl Iterator<Item = u64>) {
        let mut corrs = corrs.peekable();
        if corrs.peek().is_none() {
            return;
        }
        let mut t = self.lock();
        for corr in corrs {
            if let Some(e) = t.map.get_mut(&corr) {
                e.sent = true;
            }
        }
    }

    /// Keeps the items of `items` whose request (`corr_of`) a caller still waits for, and
    /// those that are no request; returns how many went. One lock for a whole batch.
    pub(crate) fn retain_waited<T>(
        &self,
        items: &mut Vec<T>,
        corr_of: impl Fn(&T) -> Option<u64>,
    ) -> usize {
        let before = items.len();
        if items.iter().any(|m| corr_of(m).is_some()) {
            let t = self.lock();
            items.retain(|m| corr_of(m).is_none_or(|c| t.map.contains_key(&c)));
        }
        before - items.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Removes the waiters whose request was handed to the transport (the connection they
    /// went out on dropped); those not yet sent stay.
    pub(crate) fn take_sent(&self) -> Vec<Waiter> {
        self.lock()
            .map
            .extract_if(|_, e| e.sent)
            .map(|(_, e)| e.waiter)
            .collect()
    }

    /// Closes the table: every waiter is returned, later inserts are refused, the sweeper
    /// exits.
    pub(crate) fn close(&self) -> Vec<Waiter> {
        let mut t = self.lock();
        t.closed = true;
        t.deadlines.clear();
        let all = t.map.drain().map(|(_, e)| e.waiter).collect();
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
                if let Some(e) = t.map.remove(&corr) {
                    expired.push(e.waiter);
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

#[cfg(test)]
mod tests {
    use super::{Pending, Slot, Waiter};
    use std::sync::Arc;

    fn blocking() -> Waiter {
        Waiter::Blocking(Arc::new(Slot::new()))
    }

    #[test]
    fn retain_waited_drops_only_requests_nobody_waits_for() {
        let p = Pending::default();
        for corr in [1, 3, 1_000_003] {
            assert!(p.insert(corr, blocking(), None).is_ok());
        }
        // Requests 2 and 4 timed out (their waiters are gone); None is not a request.
        let mut items = vec![Some(1), Some(2), None, Some(3), Some(4), Some(1_000_003)];
        assert_eq!(p.retain_waited(&mut items, |c| *c), 2);
        assert_eq!(items, vec![Some(1), None, Some(3), Some(1_000_003)]);
        assert_eq!(p.len(), 3, "retaining takes no waiter out");
        assert!(p.remove(3).is_some());
        assert_eq!(p.retain_waited(&mut items, |c| *c), 1);
        assert_eq!(items, vec![Some(1), None, Some(1_000_003)]);
    }

    #[test]
    fn a_dropped_connection_takes_only_the_requests_handed_to_it() {
        let p = Pending::default();
        for corr in 1..=4 {
            assert!(p.insert(corr, blocking(), None).is_ok());
        }
        p.mark_sent([2, 9].into_iter()); // 9 completed already: nothing to mark
        p.mark_sent(std::iter::once(4));
        assert_eq!(p.take_sent().len(), 2);
        assert_eq!(p.len(), 2, "the unsent ones still wait");
        assert!(p.remove(1).is_some() && p.remove(3).is_some());
        assert!(p.take_sent().is_empty());
    }
}
