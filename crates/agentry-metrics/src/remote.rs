//! The remote families (`agentry-remote`): a gateway's counters ([`RemoteStats`]), read when
//! scraped.

use crate::family::{Families, Kind, Spec};
use agentry_remote::{Gateway, RemoteStats};

const GATEWAY: &[&str] = &["gateway"];

const fn counter(name: &'static str, help: &'static str) -> Spec {
    Spec {
        name,
        help,
        kind: Kind::Counter,
        labels: GATEWAY,
    }
}

const fn gauge(name: &'static str, help: &'static str) -> Spec {
    Spec {
        name,
        help,
        kind: Kind::Gauge,
        labels: GATEWAY,
    }
}

type RemoteField = fn(&RemoteStats) -> u64;

/// A gateway's gauges.
pub(crate) const GAUGES: &[(Spec, RemoteField)] = &[
    (
        gauge(
            "agentry_remote_connected",
            "1 while the transport is connected (NATS server, or the link's peer), else 0.",
        ),
        |s| u64::from(s.connected),
    ),
    (
        gauge(
            "agentry_remote_buffered",
            "Messages, requests and replies waiting in the outbound buffer.",
        ),
        |s| s.buffered as u64,
    ),
    (
        gauge(
            "agentry_remote_awaiting_receipt",
            "Plain messages sent and awaiting a receiving gateway's receipt.",
        ),
        |s| s.awaiting_receipt as u64,
    ),
    (
        gauge(
            "agentry_remote_pending_requests",
            "Requests waiting for their reply.",
        ),
        |s| s.pending_requests as u64,
    ),
];

/// A gateway's counters (the rejections are one family, [`REJECTED`]).
pub(crate) const COUNTERS: &[(Spec, RemoteField)] = &[
    (
        counter(
            "agentry_remote_sent",
            "Envelopes handed to the transport (messages, requests, replies).",
        ),
        |s| s.sent,
    ),
    (
        counter(
            "agentry_remote_requests_sent",
            "Requests sent (part of sent).",
        ),
        |s| s.requests_sent,
    ),
    (
        counter(
            "agentry_remote_replies_sent",
            "Replies sent (part of sent).",
        ),
        |s| s.replies_sent,
    ),
    (
        counter(
            "agentry_remote_received",
            "Envelopes received on subscriptions (messages and requests).",
        ),
        |s| s.received,
    ),
    (
        counter(
            "agentry_remote_delivered",
            "Messages delivered to local mboxes (one per route).",
        ),
        |s| s.delivered,
    ),
    (
        counter(
            "agentry_remote_requests_served",
            "Requests handed to a serving agent.",
        ),
        |s| s.requests_served,
    ),
    (
        counter(
            "agentry_remote_replies_received",
            "Replies matched to a waiting request.",
        ),
        |s| s.replies_received,
    ),
    (
        counter(
            "agentry_remote_unrouted",
            "Inbound messages of a registered type with no local route.",
        ),
        |s| s.unrouted,
    ),
    (
        counter(
            "agentry_remote_overflow_rejected",
            "Sends refused because the outbound buffer was full (the sender got the message back).",
        ),
        |s| s.overflow_rejected,
    ),
    (
        counter(
            "agentry_remote_overflow_dropped",
            "Buffered envelopes evicted by newer ones (lost).",
        ),
        |s| s.overflow_dropped,
    ),
    (
        counter(
            "agentry_remote_lost_in_flight",
            "Envelopes whose hand-over to the transport failed (lost).",
        ),
        |s| s.lost_in_flight,
    ),
    (
        counter(
            "agentry_remote_dropped_on_close",
            "Envelopes still buffered when the gateway closed (lost).",
        ),
        |s| s.dropped_on_close,
    ),
    (
        counter(
            "agentry_remote_requests_timed_out",
            "Requests that timed out.",
        ),
        |s| s.timed_out,
    ),
    (
        counter(
            "agentry_remote_requests_no_responders",
            "Requests answered \"no responders\".",
        ),
        |s| s.no_responders,
    ),
    (
        counter(
            "agentry_remote_requests_failed",
            "Requests answered with a remote failure.",
        ),
        |s| s.remote_failures,
    ),
    (
        counter(
            "agentry_remote_requests_disconnected",
            "Requests failed because the connection dropped while they were in flight.",
        ),
        |s| s.disconnected_requests,
    ),
    (
        counter(
            "agentry_remote_requests_expired_unsent",
            "Requests never sent: their caller timed out while they waited in the buffer.",
        ),
        |s| s.expired_unsent,
    ),
    (
        counter(
            "agentry_remote_late_replies",
            "Replies that arrived for no waiting request.",
        ),
        |s| s.late_replies,
    ),
    (
        counter("agentry_remote_connects", "Successful (re)connections."),
        |s| s.connects,
    ),
    (
        counter("agentry_remote_disconnects", "Connections lost."),
        |s| s.disconnects,
    ),
    (
        counter(
            "agentry_remote_slow_consumer_events",
            "NATS slow-consumer events (a lower bound of inbound messages the client dropped).",
        ),
        |s| s.slow_consumer_events,
    ),
    (
        counter(
            "agentry_remote_handshake_failures",
            "Link handshakes refused.",
        ),
        |s| s.handshake_failures,
    ),
    (
        counter(
            "agentry_remote_heartbeat_timeouts",
            "Link connections closed because the peer went silent.",
        ),
        |s| s.heartbeat_timeouts,
    ),
    (
        counter(
            "agentry_remote_confirmed",
            "Plain messages a receiving gateway confirmed (receipts on).",
        ),
        |s| s.confirmed,
    ),
    (
        counter(
            "agentry_remote_unconfirmed",
            "Plain messages given up unconfirmed (receipts on; lost).",
        ),
        |s| s.unconfirmed,
    ),
    (
        counter(
            "agentry_remote_resent",
            "Unconfirmed plain messages sent again.",
        ),
        |s| s.resent,
    ),
    (
        counter(
            "agentry_remote_duplicates_dropped",
            "Inbound copies of a message already delivered (dropped, confirmed again).",
        ),
        |s| s.duplicates_dropped,
    ),
    (
        counter(
            "agentry_remote_confirmations_sent",
            "Confirmation messages sent to senders.",
        ),
        |s| s.confirmations_sent,
    ),
    (
        counter(
            "agentry_remote_durable_sent",
            "Durable mbox: messages handed to JetStream for the first time.",
        ),
        |s| s.durable_sent,
    ),
    (
        counter(
            "agentry_remote_durable_stored",
            "Durable mbox: messages JetStream confirmed stored.",
        ),
        |s| s.durable_stored,
    ),
    (
        counter(
            "agentry_remote_durable_deduplicated",
            "Durable mbox: stored confirmations for copies JetStream dropped as duplicates.",
        ),
        |s| s.durable_deduplicated,
    ),
    (
        counter(
            "agentry_remote_durable_retried",
            "Durable mbox: publications sent again after a failed or late confirmation.",
        ),
        |s| s.durable_retried,
    ),
    (
        counter(
            "agentry_remote_durable_not_stored",
            "Durable mbox: messages given up without a confirmation (lost or unknown).",
        ),
        |s| s.durable_not_stored,
    ),
    (
        counter(
            "agentry_remote_durable_received",
            "Durable subscriptions: stream deliveries received (redeliveries included).",
        ),
        |s| s.durable_received,
    ),
    (
        counter(
            "agentry_remote_durable_handled",
            "Durable subscriptions: messages handled and acknowledged.",
        ),
        |s| s.durable_handled,
    ),
    (
        counter(
            "agentry_remote_durable_redelivered",
            "Durable subscriptions: deliveries JetStream marked as redeliveries.",
        ),
        |s| s.durable_redelivered,
    ),
    (
        counter(
            "agentry_remote_durable_duplicates",
            "Durable subscriptions: deliveries not given to the agent (already handled or being handled).",
        ),
        |s| s.durable_duplicates,
    ),
    (
        counter(
            "agentry_remote_durable_refused",
            "Durable subscriptions: messages the agent did not handle (negatively acknowledged).",
        ),
        |s| s.durable_refused,
    ),
    (
        counter(
            "agentry_remote_durable_terminated",
            "Durable subscriptions: stream messages that did not decode (terminated).",
        ),
        |s| s.durable_terminated,
    ),
];

pub(crate) const REJECTED: Spec = Spec {
    name: "agentry_remote_rejected",
    help: "Inbound envelopes rejected, by reason.",
    kind: Kind::Counter,
    labels: &["gateway", "reason"],
};

/// The reasons of [`REJECTED`].
pub(crate) const REJECT_REASONS: &[(&str, RemoteField)] = &[
    ("unknown_type", |s| s.rejected_unknown_type),
    ("wrong_version", |s| s.rejected_wrong_version),
    ("malformed", |s| s.rejected_malformed),
    ("oversized", |s| s.rejected_oversized),
];

/// Every family this module may report (for the documented list's test).
#[cfg(all(test, feature = "net", feature = "remote"))]
pub(crate) fn specs() -> Vec<Spec> {
    let mut all: Vec<Spec> = GAUGES.iter().chain(COUNTERS).map(|(s, _)| *s).collect();
    all.push(REJECTED);
    all
}

/// Adds a gateway's samples.
pub(crate) fn collect(name: &str, gateway: &Gateway, out: &mut Families) {
    let stats = gateway.stats();
    for (spec, field) in GAUGES.iter().chain(COUNTERS) {
        out.int(spec, &[name], field(&stats));
    }
    for (reason, field) in REJECT_REASONS {
        out.int(&REJECTED, &[name, reason], field(&stats));
    }
}
