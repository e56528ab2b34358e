//! Inbound credit: how far a channel may read ahead of its owner.
//!
//! # Ground rules
//!
//! - Every `Received` / `Frame` carries a [`Credit`] for the wire bytes it stands for; the
//!   bytes count as *in flight* until the message is dropped (normally when the owner's
//!   handler returns, or when an undeliverable message is discarded).
//! - The channel stops reading once `in_flight >= max` and *parks*; the `Credit` drop that
//!   brings `in_flight` to `low` or below unparks it by sending `CreditReturned`.
//! - Lost wake-ups are excluded the usual way: the channel raises `parked` and then re-reads
//!   `in_flight`; a dropper lowers `in_flight` and then reads `parked`. All four accesses are
//!   `SeqCst`, so one of the two sides sees the other's write. Whoever swaps `parked` from
//!   true to false resumes the reading (the channel itself, or the dropper through a message):
//!   at most one `CreditReturned` per park.
//! - Draining (after the peer's end of stream) uses the same protocol with the threshold 0
//!   (`zero_wanted`): the channel closes only once the owner has handled everything it was
//!   given, so replies sent from those handlers are queued at the channel before it learns
//!   that nothing is in flight (one sender's messages arrive in order).

use agentry::Mbox;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Tells a parked channel that its owner caught up.
#[derive(Debug)]
pub(crate) struct CreditReturned;

pub(crate) struct CreditPool {
    in_flight: AtomicUsize,
    parked: AtomicBool,
    /// The channel waits for `in_flight == 0` (draining after the peer's end of stream).
    zero_wanted: AtomicBool,
    max: usize,
    low: usize,
    channel: Mbox,
}

impl CreditPool {
    pub(crate) fn new(max: usize, channel: Mbox) -> Arc<Self> {
        Arc::new(CreditPool {
            in_flight: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            zero_wanted: AtomicBool::new(false),
            max,
            low: max / 2,
            channel,
        })
    }

    /// Accounts `bytes` as in flight until the returned credit is dropped.
    pub(crate) fn take(self: &Arc<Self>, bytes: usize) -> Credit {
        self.in_flight.fetch_add(bytes, Ordering::SeqCst);
        Credit {
            pool: Some(Arc::clone(self)),
            bytes,
        }
    }

    /// Called by the channel before reading: true if it must stop (it is parked and will get
    /// `CreditReturned`).
    pub(crate) fn exhausted(&self) -> bool {
        if self.in_flight.load(Ordering::SeqCst) < self.max {
            return false;
        }
        self.parked.store(true, Ordering::SeqCst);
        if self.in_flight.load(Ordering::SeqCst) <= self.low {
            // The owner caught up meanwhile. If a dropper swapped the flag first, its
            // `CreditReturned` resumes us; otherwise we resume now.
            return !self.parked.swap(false, Ordering::SeqCst);
        }
        true
    }

    /// Called by a draining channel: true if nothing is in flight; otherwise the release
    /// that brings `in_flight` to zero sends `CreditReturned` (same protocol as parking).
    pub(crate) fn drained(&self) -> bool {
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            return true;
        }
        self.zero_wanted.store(true, Ordering::SeqCst);
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            return self.zero_wanted.swap(false, Ordering::SeqCst);
        }
        false
    }

    /// The channel is closing: no `CreditReturned` is wanted any more.
    pub(crate) fn close(&self) {
        self.parked.store(false, Ordering::SeqCst);
        self.zero_wanted.store(false, Ordering::SeqCst);
    }

    fn release(&self, bytes: usize) {
        let now = self
            .in_flight
            .fetch_sub(bytes, Ordering::SeqCst)
            .saturating_sub(bytes);
        let resume = now <= self.low
            && self.parked.load(Ordering::SeqCst)
            && self.parked.swap(false, Ordering::SeqCst);
        let drained = now == 0
            && self.zero_wanted.load(Ordering::SeqCst)
            && self.zero_wanted.swap(false, Ordering::SeqCst);
        // A channel torn down by a shutdown racing with this release needs no message.
        if (resume || drained) && self.channel.is_alive() {
            self.channel.send(CreditReturned);
        }
    }
}

/// The inbound credit a received message holds (released when the message is dropped).
pub struct Credit {
    pool: Option<Arc<CreditPool>>,
    bytes: usize,
}

impl Credit {
    /// Releases the credit now instead of when the message is dropped.
    pub fn release(mut self) {
        self.release_now();
    }

    fn release_now(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.release(self.bytes);
        }
    }

    /// The wire bytes this credit stands for.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Credit {
    fn drop(&mut self) {
        self.release_now();
    }
}

impl fmt::Debug for Credit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credit")
            .field("bytes", &self.bytes)
            .field("held", &self.pool.is_some())
            .finish()
    }
}
