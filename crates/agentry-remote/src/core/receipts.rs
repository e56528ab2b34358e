//! Delivery receipts: how a sender learns that a plain message reached a receiving gateway,
//! so that a connection lost mid-stream loses nothing without the sender knowing.
//!
//! Core NATS has no acknowledgements: what the client or the server held when a connection
//! died is gone, and neither end can tell which messages those were. With receipts on (the
//! default over NATS), the gateways acknowledge end to end:
//!
//! - **Sender** ([`Window`]): every plain message gets the next number of the gateway's
//!   sequence and a [`Receipt`] header, and stays in the window until a receiving gateway
//!   confirms it. Unconfirmed messages are sent again after every reconnection (first, in
//!   their order, before anything newer) and, while connected, when a message has waited
//!   longer than the resend timeout: TCP's rule — the smoothed confirmation delay plus four
//!   times its variation, never below `resend_after`, measured only on messages sent once
//!   (Karn), and doubled for each further resend of the same message. Copies are also
//!   clocked by confirmations (Jacobson's conservation of packets): one round of resends
//!   sends at most as many copies as messages were confirmed since the previous round (at
//!   least one, a probe), so a receiver that is slow rather than gone is not buried under
//!   copies. (After a reconnection the whole window goes out at once: the old connection's
//!   pipe is empty.) A message is given up and
//!   reported ([`LossReason::Unconfirmed`](crate::LossReason::Unconfirmed)) only when it
//!   has waited `timeout` of connected time (or four resend timeouts, if longer) *and* no
//!   message to its subject was confirmed for `timeout`: a receiver that confirms, however
//!   late, is waited for; one that is gone, or a subject nobody subscribes, is not. The window
//!   holds at most `limit` messages; while it is full, new messages wait in the outbound
//!   buffer (whose overflow policy then applies) — flow control, not loss.
//! - **Receiver** ([`Inbox`], one per subscription): a message with a receipt header is
//!   delivered only the first time its `(sender, seq)` arrives on that subscription — a
//!   copy sent again is counted (`duplicates_dropped`) and dropped — and its number is
//!   confirmed to the sender in batches ([`encode_confirmations`]) when the subscription has
//!   nothing more to read. Each receipt also carries the sender's `low`: every number below
//!   it is confirmed, so the receiver forgets them and its memory stays bounded by the
//!   sender's window.
//!
//! # What a receipt means
//!
//! The receiving gateway took the message off the wire and handed it to agentry (delivered
//! to the subscribed mbox, whose own limits then govern it, or rejected and counted there).
//! With several subscribers of one subject (fan-out), the first confirmation settles the
//! message: "delivered to at least one". A receiving process that dies between handing the
//! message over and confirming it leaves the sender reporting `Unconfirmed` for a message
//! that was delivered: the one case where the report is pessimistic.

use super::outbound::OutMsg;
use crate::envelope::Receipt;
use crate::error::DecodeError;
use bytes::Bytes;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Receipt settings of a gateway (see [`GatewayBuilder::receipts`](crate::GatewayBuilder::receipts)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReceiptConfig {
    /// Connected time after which an unconfirmed message is given up.
    pub(crate) timeout: Duration,
    /// The least connected time after which an unconfirmed message is sent again (the
    /// resend timeout adapts upwards to the confirmation delay).
    pub(crate) resend_after: Duration,
    /// Most messages awaiting confirmation.
    pub(crate) limit: usize,
}

struct Unconfirmed {
    msg: OutMsg,
    /// When the current connection first carried it (reset by a reconnection).
    first_sent: Instant,
    last_sent: Instant,
    /// Times sent again (each doubles its resend timeout; a confirmation of a message sent
    /// more than once does not measure the delay).
    resends: u32,
}

/// The confirmation delay, smoothed as TCP smooths round trips (RFC 6298).
#[derive(Default)]
struct Delay {
    smoothed: Option<Duration>,
    variation: Duration,
}

impl Delay {
    fn sample(&mut self, d: Duration) {
        match self.smoothed {
            None => {
                self.smoothed = Some(d);
                self.variation = d / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(d);
                self.variation = self.variation * 3 / 4 + diff / 4;
                self.smoothed = Some(s * 7 / 8 + d / 8);
            }
        }
    }
}

/// The sender's messages awaiting confirmation, by sequence number.
pub(crate) struct Window {
    config: ReceiptConfig,
    /// The number of `entries[0]`; every number below is settled.
    base: u64,
    entries: VecDeque<Option<Unconfirmed>>,
    live: usize,
    /// Set by a disconnection: everything unconfirmed goes out again first.
    resend_all: bool,
    /// The writer holds copies it has not yet handed to the transport (see
    /// [`resends_published`](Self::resends_published)).
    resends_in_hand: bool,
    /// No entry is due for a resend or a give-up before this.
    next_due: Option<Instant>,
    delay: Delay,
    /// When a message to each subject was last confirmed (forgotten after `timeout`).
    progress: HashMap<Box<str>, Instant>,
    /// Copies the next round of resends may send: messages confirmed since the last round.
    resend_credit: usize,
    /// The last round left due messages unsent for lack of credit; a confirmation brings
    /// the next round forward.
    deferred: bool,
}

/// What [`Window::due`] found.
#[derive(Default)]
pub(crate) struct Due {
    pub(crate) resend: Vec<OutMsg>,
    pub(crate) expired: Vec<OutMsg>,
}

impl Window {
    pub(crate) fn new(config: ReceiptConfig) -> Window {
        Window {
            config,
            base: 0,
            entries: VecDeque::new(),
            live: 0,
            resend_all: false,
            resends_in_hand: false,
            next_due: None,
            delay: Delay::default(),
            progress: HashMap::new(),
            resend_credit: 0,
            deferred: false,
        }
    }

    /// How long a message sent once waits for its confirmation before it is sent again.
    fn resend_timeout(&self) -> Duration {
        let measured = self
            .delay
            .smoothed
            .map_or(Duration::ZERO, |s| s + 4 * self.delay.variation);
        measured
            .max(self.config.resend_after)
            .min(self.config.timeout)
    }

    /// When `entry` is next sent again, and when it is given up (see the module docs).
    fn deadlines(&self, entry: &Unconfirmed) -> (Instant, Instant) {
        let rto = self.resend_timeout();
        let timeout = self.config.timeout;
        let resend = entry.last_sent + rto.saturating_mul(1 << entry.resends.min(16));
        let waited = entry.first_sent + timeout.max(4 * rto);
        let give_up = match self.progress.get(entry.msg.subject.as_str()) {
            Some(&confirmed) => waited.max(confirmed + timeout),
            None => waited,
        };
        (resend, give_up)
    }

    /// Messages awaiting confirmation.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// How many more messages the window takes.
    pub(crate) fn room(&self) -> usize {
        self.config.limit.saturating_sub(self.live)
    }

    /// A sender may publish a new message on its own thread: nothing waits to be sent again
    /// or is being sent again (that goes first) and the window has room.
    pub(crate) fn takes_direct(&self) -> bool {
        !self.resend_all && !self.resends_in_hand && self.room() > 0
    }

    /// The copies the last [`due`](Self::due) returned are with the transport.
    pub(crate) fn resends_published(&mut self) {
        self.resends_in_hand = false;
    }

    /// Numbers `msg` as the next of the sequence, stamps its receipt header and keeps a copy
    /// until it is confirmed. The caller publishes `msg` next (or calls
    /// [`forget_last`](Self::forget_last) if it could not).
    pub(crate) fn track(&mut self, from: &Arc<str>, msg: &mut OutMsg, now: Instant) {
        let seq = self.base + self.entries.len() as u64;
        msg.envelope.receipt = Some(Receipt {
            from: Arc::clone(from),
            seq,
            low: self.base,
        });
        self.entries.push_back(Some(Unconfirmed {
            msg: msg.clone(),
            first_sent: now,
            last_sent: now,
            resends: 0,
        }));
        self.live += 1;
        let due = now + self.resend_timeout();
        self.next_due = Some(self.next_due.map_or(due, |d| d.min(due)));
    }

    /// Takes back the message [`track`](Self::track) just numbered (it was not published).
    pub(crate) fn forget_last(&mut self) -> Option<OutMsg> {
        let entry = self.entries.pop_back()??;
        self.live -= 1;
        let mut msg = entry.msg;
        msg.envelope.receipt = None;
        Some(msg)
    }

    /// A receiver confirmed `count` numbers from `first`; returns how many were newly
    /// confirmed.
    pub(crate) fn confirm(&mut self, first: u64, count: u64, now: Instant) -> usize {
        let end = first.saturating_add(count);
        let from = first.max(self.base);
        let to = end.min(self.base + self.entries.len() as u64);
        let mut confirmed = 0;
        // Neighbours mostly share a subject: its progress is stamped once per run.
        let mut last_subject: Option<async_nats::Subject> = None;
        for seq in from..to {
            let slot = &mut self.entries[(seq - self.base) as usize];
            if let Some(entry) = slot.take() {
                confirmed += 1;
                if entry.resends == 0 {
                    self.delay
                        .sample(now.saturating_duration_since(entry.last_sent));
                }
                if last_subject.as_ref() != Some(&entry.msg.subject) {
                    let subject = entry.msg.subject.as_str();
                    match self.progress.get_mut(subject) {
                        Some(confirmed_at) => *confirmed_at = now,
                        None => {
                            self.progress.insert(subject.into(), now);
                        }
                    }
                    last_subject = Some(entry.msg.subject);
                }
            }
        }
        self.live -= confirmed;
        self.resend_credit = (self.resend_credit + confirmed).min(self.config.limit);
        if confirmed > 0 && std::mem::take(&mut self.deferred) {
            self.next_due = Some(now);
        }
        while matches!(self.entries.front(), Some(None)) {
            self.entries.pop_front();
            self.base += 1;
        }
        confirmed
    }

    /// The connection dropped: everything unconfirmed goes out again on the next one.
    pub(crate) fn disconnected(&mut self) {
        self.resend_all = self.live > 0;
    }

    /// When [`due`](Self::due) next has something to do; with nothing awaiting, one
    /// resend timeout from `now` (a message a sender publishes on its own thread meanwhile
    /// is due no earlier).
    pub(crate) fn next_due(&self, now: Instant) -> Instant {
        if self.resend_all {
            return now;
        }
        match self.next_due {
            Some(due) if self.live > 0 => due,
            _ => now + self.resend_timeout(),
        }
    }

    /// While connected: the messages to send again now (in sequence order) and those given
    /// up (removed from the window).
    pub(crate) fn due(&mut self, now: Instant) -> Due {
        let mut due = Due::default();
        let reconnected = std::mem::take(&mut self.resend_all);
        if !reconnected && self.next_due.is_none_or(|d| now < d) {
            return due;
        }
        let mut next: Option<Instant> = None;
        // Copies this round may send (all of them after a reconnection).
        let mut credit = if reconnected {
            usize::MAX
        } else {
            std::mem::take(&mut self.resend_credit).max(1)
        };
        for i in 0..self.entries.len() {
            let Some(entry) = &self.entries[i] else {
                continue;
            };
            let (resend_at, give_up_at) = self.deadlines(entry);
            if !reconnected && now >= give_up_at {
                due.expired.extend(self.entries[i].take().map(|e| e.msg));
                continue;
            }
            let at = if reconnected || now >= resend_at {
                if credit == 0 {
                    // Due, but the receivers have not drained what was sent: next round.
                    self.deferred = true;
                    now + self.resend_timeout()
                } else {
                    credit -= 1;
                    let Some(entry) = self.entries[i].as_mut() else {
                        continue;
                    };
                    if reconnected {
                        entry.first_sent = now;
                    }
                    entry.last_sent = now;
                    entry.resends += 1;
                    due.resend.push(entry.msg.clone());
                    let Some(entry) = &self.entries[i] else {
                        continue;
                    };
                    let (resend_at, give_up_at) = self.deadlines(entry);
                    resend_at.min(give_up_at)
                }
            } else {
                resend_at.min(give_up_at)
            };
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        self.live -= due.expired.len();
        while matches!(self.entries.front(), Some(None)) {
            self.entries.pop_front();
            self.base += 1;
        }
        self.next_due = next;
        self.resends_in_hand = !due.resend.is_empty();
        let timeout = self.config.timeout;
        self.progress
            .retain(|_, confirmed| now.saturating_duration_since(*confirmed) < timeout);
        due
    }

    /// Everything still unconfirmed (the gateway is closing).
    pub(crate) fn take_all(&mut self) -> Vec<OutMsg> {
        self.live = 0;
        self.next_due = None;
        self.resend_all = false;
        self.resends_in_hand = false;
        let taken: Vec<OutMsg> = self.entries.drain(..).flatten().map(|e| e.msg).collect();
        self.base += taken.len() as u64;
        taken
    }
}

/// Bytes per confirmed range on the wire: first number (u64), count (u32), big endian like
/// every integer of the wire format.
const RANGE_LEN: usize = 12;

/// Encodes confirmed numbers (sorted and deduplicated here) as ranges.
pub(crate) fn encode_confirmations(mut seqs: Vec<u64>) -> Bytes {
    seqs.sort_unstable();
    seqs.dedup();
    let mut out = Vec::with_capacity(RANGE_LEN * 4);
    let mut iter = seqs.into_iter();
    let Some(mut first) = iter.next() else {
        return Bytes::new();
    };
    let mut count: u32 = 1;
    let mut push = |first: u64, count: u32| {
        out.extend_from_slice(&first.to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
    };
    for seq in iter {
        if seq == first + u64::from(count) && count < u32::MAX {
            count += 1;
        } else {
            push(first, count);
            (first, count) = (seq, 1);
        }
    }
    push(first, count);
    Bytes::from(out)
}

/// Decodes what [`encode_confirmations`] wrote: `(first, count)` ranges.
pub(crate) fn decode_confirmations(bytes: &[u8]) -> Result<Vec<(u64, u64)>, DecodeError> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(RANGE_LEN) {
        return Err(DecodeError::malformed(
            "receipt confirmations",
            format!("{} bytes", bytes.len()),
        ));
    }
    bytes
        .chunks_exact(RANGE_LEN)
        .map(|c| {
            let first = u64::from_be_bytes(c[..8].try_into().unwrap_or_default());
            let count = u32::from_be_bytes(c[8..].try_into().unwrap_or_default());
            if count == 0 || first.checked_add(u64::from(count)).is_none() {
                return Err(DecodeError::malformed(
                    "receipt confirmations",
                    format!("range {first}+{count}"),
                ));
            }
            Ok((first, u64::from(count)))
        })
        .collect()
}

/// How long a receiver remembers a sender it has not heard from.
const FORGET_SENDER_AFTER: Duration = Duration::from_secs(600);

/// What one subscription remembers of one sender.
struct Sender {
    /// Every number below is confirmed at the sender (it said so).
    low: u64,
    seen: HashSet<u64>,
    /// Prune `seen` below `low` when it grows past this.
    prune_at: usize,
    /// Numbers received (copies included) and not yet confirmed.
    to_confirm: Vec<u64>,
    /// Heard from since the last sweep.
    heard: bool,
}

/// The receiving side of one subscription: which numbers it delivered, per sender, and
/// which it still has to confirm.
#[derive(Default)]
pub(crate) struct Inbox {
    senders: HashMap<Arc<str>, Sender>,
    /// When silent senders were last forgotten.
    swept: Option<Instant>,
}

impl Inbox {
    /// Records `receipt` (its number is confirmed either way); true if this is the first
    /// time the subscription sees the message, false for a copy sent again.
    pub(crate) fn first_time(&mut self, receipt: &Receipt) -> bool {
        if !self.senders.contains_key(&*receipt.from) {
            self.senders.insert(
                Arc::clone(&receipt.from),
                Sender {
                    low: 0,
                    seen: HashSet::new(),
                    prune_at: 1024,
                    to_confirm: Vec::new(),
                    heard: true,
                },
            );
        }
        let Some(sender) = self.senders.get_mut(&*receipt.from) else {
            return true;
        };
        sender.heard = true;
        sender.to_confirm.push(receipt.seq);
        if receipt.low > sender.low {
            sender.low = receipt.low;
            if sender.seen.len() >= sender.prune_at {
                let low = sender.low;
                sender.seen.retain(|&s| s >= low);
                sender.prune_at = (2 * sender.seen.len()).max(1024);
            }
        }
        receipt.seq >= sender.low && sender.seen.insert(receipt.seq)
    }

    /// The confirmations to send, per sender; forgets senders silent for ten minutes (a
    /// sweep every ten minutes drops those not heard from since the previous one).
    pub(crate) fn take_confirmations(&mut self, now: Instant) -> Vec<(Arc<str>, Vec<u64>)> {
        match self.swept {
            None => self.swept = Some(now),
            Some(t) if now.duration_since(t) >= FORGET_SENDER_AFTER => {
                self.swept = Some(now);
                self.senders.retain(|_, s| std::mem::take(&mut s.heard));
            }
            Some(_) => {}
        }
        self.senders
            .iter_mut()
            .filter(|(_, s)| !s.to_confirm.is_empty())
            .map(|(from, s)| (Arc::clone(from), std::mem::take(&mut s.to_confirm)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
