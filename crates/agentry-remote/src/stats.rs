//! Counters of a gateway: what was sent, received, delivered, rejected and lost, and why.
//! Every message that does not reach its destination shows up in exactly one loss or
//! rejection counter (see `docs/SEMANTICS.md` §19).

use std::sync::atomic::{AtomicU64, Ordering};

/// The live counters (relaxed atomics).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) sent: AtomicU64,
    pub(crate) requests_sent: AtomicU64,
    pub(crate) replies_sent: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) requests_served: AtomicU64,
    pub(crate) replies_received: AtomicU64,
    pub(crate) rejected_unknown_type: AtomicU64,
    pub(crate) rejected_wrong_version: AtomicU64,
    pub(crate) rejected_malformed: AtomicU64,
    pub(crate) rejected_oversized: AtomicU64,
    pub(crate) unrouted: AtomicU64,
    pub(crate) overflow_rejected: AtomicU64,
    pub(crate) overflow_dropped: AtomicU64,
    pub(crate) lost_in_flight: AtomicU64,
    pub(crate) dropped_on_close: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) no_responders: AtomicU64,
    pub(crate) remote_failures: AtomicU64,
    pub(crate) disconnected_requests: AtomicU64,
    pub(crate) late_replies: AtomicU64,
    pub(crate) connects: AtomicU64,
    pub(crate) disconnects: AtomicU64,
    pub(crate) slow_consumer_events: AtomicU64,
    pub(crate) handshake_failures: AtomicU64,
    pub(crate) heartbeat_timeouts: AtomicU64,
    pub(crate) confirmed: AtomicU64,
    pub(crate) unconfirmed: AtomicU64,
    pub(crate) resent: AtomicU64,
    pub(crate) duplicates_dropped: AtomicU64,
    pub(crate) confirmations_sent: AtomicU64,
    pub(crate) expired_unsent: AtomicU64,
    pub(crate) durable_sent: AtomicU64,
    pub(crate) durable_stored: AtomicU64,
    pub(crate) durable_deduplicated: AtomicU64,
    pub(crate) durable_retried: AtomicU64,
    pub(crate) durable_not_stored: AtomicU64,
    pub(crate) durable_received: AtomicU64,
    pub(crate) durable_handled: AtomicU64,
    pub(crate) durable_redelivered: AtomicU64,
    pub(crate) durable_duplicates: AtomicU64,
    pub(crate) durable_refused: AtomicU64,
    pub(crate) durable_terminated: AtomicU64,
}

pub(crate) fn inc(c: &AtomicU64) -> u64 {
    c.fetch_add(1, Ordering::Relaxed) + 1
}

/// A snapshot of a gateway's counters ([`Gateway::stats`](crate::Gateway::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteStats {
    /// True while the transport is connected (NATS server, or the link's peer).
    pub connected: bool,
    /// Messages, requests and replies waiting in the outbound buffer.
    pub buffered: usize,
    /// Plain messages sent and awaiting a receiving gateway's receipt (receipts on).
    pub awaiting_receipt: usize,
    /// Requests waiting for their reply.
    pub pending_requests: usize,
    /// Envelopes handed to the transport (messages, requests, replies).
    pub sent: u64,
    /// Of `sent`: requests.
    pub requests_sent: u64,
    /// Of `sent`: replies (including failure replies).
    pub replies_sent: u64,
    /// Envelopes received on subscriptions (messages and requests, not replies).
    pub received: u64,
    /// Messages delivered to local mboxes (one per route).
    pub delivered: u64,
    /// Requests handed to a serving agent.
    pub requests_served: u64,
    /// Replies matched to a waiting request.
    pub replies_received: u64,
    /// Inbound envelopes rejected: type name not registered.
    pub rejected_unknown_type: u64,
    /// Inbound envelopes rejected: name registered, version not.
    pub rejected_wrong_version: u64,
    /// Inbound envelopes rejected: malformed envelope, frame, compression or payload.
    pub rejected_malformed: u64,
    /// Inbound envelopes (or link frames) rejected: larger than the limit.
    pub rejected_oversized: u64,
    /// Inbound messages of a registered type with no local route on that subscription.
    pub unrouted: u64,
    /// Sends refused because the outbound buffer was full (policy `RejectNew`); the sender
    /// got the message back.
    pub overflow_rejected: u64,
    /// Buffered envelopes evicted by newer ones (policy `DropOldest`).
    pub overflow_dropped: u64,
    /// Envelopes taken from the buffer whose hand-over to the transport failed (write error,
    /// connection lost mid-write, publish refused).
    pub lost_in_flight: u64,
    /// Envelopes still buffered when the gateway closed.
    pub dropped_on_close: u64,
    /// Requests that timed out.
    pub timed_out: u64,
    /// Requests answered "no responders".
    pub no_responders: u64,
    /// Requests answered with a [`RemoteFailure`](crate::RemoteFailure).
    pub remote_failures: u64,
    /// Requests failed with `Disconnected` (in flight when the connection dropped).
    pub disconnected_requests: u64,
    /// Replies that arrived for no waiting request (after its timeout or failure).
    pub late_replies: u64,
    /// Successful (re)connections.
    pub connects: u64,
    /// Connections lost.
    pub disconnects: u64,
    /// NATS slow-consumer events (the client dropped an inbound message because a
    /// subscription's channel was full; a lower bound of such drops).
    pub slow_consumer_events: u64,
    /// Link handshakes refused (wrong protocol or namespace, garbage, timeout).
    pub handshake_failures: u64,
    /// Link connections closed because the peer went silent.
    pub heartbeat_timeouts: u64,
    /// Plain messages a receiving gateway confirmed (receipts on): settled as delivered.
    pub confirmed: u64,
    /// Plain messages given up unconfirmed after the receipt timeout, or when the gateway
    /// closed (receipts on; reported as [`LossReason::Unconfirmed`](crate::LossReason::Unconfirmed)).
    pub unconfirmed: u64,
    /// Unconfirmed plain messages sent again (after a reconnection, or the resend interval).
    pub resent: u64,
    /// Inbound copies of a message already delivered on the same subscription (a sender
    /// sent it again before our confirmation reached it): dropped, confirmed again.
    pub duplicates_dropped: u64,
    /// Confirmation messages sent to senders (each confirms a batch of their messages).
    pub confirmations_sent: u64,
    /// Requests never sent: their caller had timed out while they waited in the buffer
    /// (the caller got `Timeout`; the server never sees them).
    pub expired_unsent: u64,
    /// Durable mbox: messages handed to JetStream for the first time ([`DurableMbox::send`](crate::DurableMbox::send) accepted them).
    pub durable_sent: u64,
    /// Durable mbox: messages JetStream confirmed stored (a PubAck), copies it dropped as duplicates included.
    pub durable_stored: u64,
    /// Of `durable_stored`: PubAcks saying the stream already held a message with this id (inside its duplicate window) and dropped this copy.
    pub durable_deduplicated: u64,
    /// Durable mbox: publications sent again (same message id) after a failed or late PubAck.
    pub durable_retried: u64,
    /// Durable mbox: messages given up without a PubAck (after the store timeout, or at close); reported as [`LossReason::NotStored`](crate::LossReason::NotStored). JetStream may still have stored them.
    pub durable_not_stored: u64,
    /// Durable subscriptions: stream deliveries received (redeliveries included).
    pub durable_received: u64,
    /// Durable subscriptions: messages whose handler returned; each is acknowledged to JetStream.
    pub durable_handled: u64,
    /// Of `durable_received`: deliveries JetStream marked as a redelivery (delivery count above 1).
    pub durable_redelivered: u64,
    /// Durable subscriptions: deliveries not given to the agent because the same message id is being handled or was handled here (a redelivery after a lost or late ack, or a copy stored after the duplicate window); a handled one is acknowledged again.
    pub durable_duplicates: u64,
    /// Durable subscriptions: messages the agent did not handle — agentry refused them (agent gone, message limit, no handler, shutdown) or the handler panicked; negatively acknowledged, so JetStream delivers them again.
    pub durable_refused: u64,
    /// Durable subscriptions: stream messages that did not decode (also counted in a `rejected_*` counter): terminated, never delivered again.
    pub durable_terminated: u64,
}

impl Counters {
    pub(crate) fn snapshot(
        &self,
        connected: bool,
        buffered: usize,
        awaiting_receipt: usize,
        pending_requests: usize,
    ) -> RemoteStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RemoteStats {
            connected,
            buffered,
            awaiting_receipt,
            pending_requests,
            sent: r(&self.sent),
            requests_sent: r(&self.requests_sent),
            replies_sent: r(&self.replies_sent),
            received: r(&self.received),
            delivered: r(&self.delivered),
            requests_served: r(&self.requests_served),
            replies_received: r(&self.replies_received),
            rejected_unknown_type: r(&self.rejected_unknown_type),
            rejected_wrong_version: r(&self.rejected_wrong_version),
            rejected_malformed: r(&self.rejected_malformed),
            rejected_oversized: r(&self.rejected_oversized),
            unrouted: r(&self.unrouted),
            overflow_rejected: r(&self.overflow_rejected),
            overflow_dropped: r(&self.overflow_dropped),
            lost_in_flight: r(&self.lost_in_flight),
            dropped_on_close: r(&self.dropped_on_close),
            timed_out: r(&self.timed_out),
            no_responders: r(&self.no_responders),
            remote_failures: r(&self.remote_failures),
            disconnected_requests: r(&self.disconnected_requests),
            late_replies: r(&self.late_replies),
            connects: r(&self.connects),
            disconnects: r(&self.disconnects),
            slow_consumer_events: r(&self.slow_consumer_events),
            handshake_failures: r(&self.handshake_failures),
            heartbeat_timeouts: r(&self.heartbeat_timeouts),
            confirmed: r(&self.confirmed),
            unconfirmed: r(&self.unconfirmed),
            resent: r(&self.resent),
            duplicates_dropped: r(&self.duplicates_dropped),
            confirmations_sent: r(&self.confirmations_sent),
            expired_unsent: r(&self.expired_unsent),
            durable_sent: r(&self.durable_sent),
            durable_stored: r(&self.durable_stored),
            durable_deduplicated: r(&self.durable_deduplicated),
            durable_retried: r(&self.durable_retried),
            durable_not_stored: r(&self.durable_not_stored),
            durable_received: r(&self.durable_received),
            durable_handled: r(&self.durable_handled),
            durable_redelivered: r(&self.durable_redelivered),
            durable_duplicates: r(&self.durable_duplicates),
            durable_refused: r(&self.durable_refused),
            durable_terminated: r(&self.durable_terminated),
        }
    }
}

impl RemoteStats {
    /// All inbound rejections.
    pub fn rejected(&self) -> u64 {
        self.rejected_unknown_type
            + self.rejected_wrong_version
            + self.rejected_malformed
            + self.rejected_oversized
    }

    /// All outbound losses the gateway knows of (the sender was not told synchronously).
    pub fn lost(&self) -> u64 {
        self.overflow_dropped
            + self.lost_in_flight
            + self.dropped_on_close
            + self.unconfirmed
            + self.durable_not_stored
    }
}
