//! The TCP families (`agentry-net`): an io dispatcher's counters ([`NetStats`]) and a
//! listener's ([`ListenerStats`](agentry_net::ListenerStats)), read when scraped.

use crate::family::{Families, Kind, Spec};
use agentry_net::{IoDispatcher, Listener, NetStats};

const IO: &[&str] = &["io_dispatcher"];
const LISTENER: &[&str] = &["listener"];

const fn io_counter(name: &'static str, help: &'static str) -> Spec {
    Spec {
        name,
        help,
        kind: Kind::Counter,
        labels: IO,
    }
}

type NetField = fn(&NetStats) -> u64;

/// An io dispatcher's counters (summed over its threads).
pub(crate) const IO_COUNTERS: &[(Spec, NetField)] = &[
    (
        io_counter(
            "agentry_net_connections_accepted",
            "Connections accepted by listeners and given a channel.",
        ),
        |s| s.accepted,
    ),
    (
        io_counter(
            "agentry_net_connections_refused_over_limit",
            "Connections a listener closed at once because it was at its connection limit.",
        ),
        |s| s.refused_over_limit,
    ),
    (
        io_counter("agentry_net_accept_errors", "accept calls that failed."),
        |s| s.accept_errors,
    ),
    (
        io_counter(
            "agentry_net_connections_connected",
            "Outgoing connections established.",
        ),
        |s| s.connected,
    ),
    (
        io_counter(
            "agentry_net_connections_connect_failed",
            "Outgoing connections that failed or timed out.",
        ),
        |s| s.connect_failed,
    ),
    (
        io_counter(
            "agentry_net_connections_opened",
            "Channels opened (accepted and connected).",
        ),
        |s| s.opened,
    ),
    (
        io_counter("agentry_net_received_bytes", "Bytes read from sockets."),
        |s| s.bytes_in,
    ),
    (
        io_counter("agentry_net_sent_bytes", "Bytes written to sockets."),
        |s| s.bytes_out,
    ),
    (
        io_counter(
            "agentry_net_write_calls",
            "Write system calls that wrote bytes to sockets.",
        ),
        |s| s.write_calls,
    ),
    (
        io_counter(
            "agentry_net_frames_received",
            "Frames decoded and delivered to owners.",
        ),
        |s| s.frames_in,
    ),
    (
        io_counter(
            "agentry_net_frames_sent",
            "Frames encoded and queued for writing.",
        ),
        |s| s.frames_out,
    ),
    (
        io_counter(
            "agentry_net_frames_rejected",
            "Frames refused for exceeding the maximum frame size.",
        ),
        |s| s.frames_rejected,
    ),
    (
        io_counter(
            "agentry_net_write_high",
            "Times a connection's unwritten bytes reached the high watermark.",
        ),
        |s| s.write_high,
    ),
    (
        io_counter(
            "agentry_net_unsent_bytes",
            "Bytes still buffered for writing when their connection closed.",
        ),
        |s| s.bytes_unsent,
    ),
    (
        io_counter(
            "agentry_net_sends_after_close",
            "Sends that reached a channel after it closed (dropped).",
        ),
        |s| s.sends_after_close,
    ),
    (
        io_counter(
            "agentry_net_read_pauses",
            "Times a channel stopped reading (owner behind, or write high watermark).",
        ),
        |s| s.read_pauses,
    ),
    (
        io_counter(
            "agentry_net_loop_blocks",
            "Times an io loop blocked waiting for readiness.",
        ),
        |s| s.loop_blocks,
    ),
    (
        io_counter(
            "agentry_net_loop_wakeups",
            "Wake-ups of blocked io loops by messages from other threads.",
        ),
        |s| s.loop_wakeups,
    ),
];

pub(crate) const IO_CLOSED: Spec = Spec {
    name: "agentry_net_connections_closed",
    help: "Connections closed, by reason.",
    kind: Kind::Counter,
    labels: &["io_dispatcher", "reason"],
};

/// The reasons of [`IO_CLOSED`]: every opened connection is open or closed for one of them.
pub(crate) const CLOSE_REASONS: &[(&str, NetField)] = &[
    ("peer", |s| s.closed_peer),
    ("peer_mid_frame", |s| s.closed_mid_frame),
    ("error", |s| s.closed_error),
    ("idle", |s| s.closed_idle),
    ("frame_too_big", |s| s.closed_frame_too_big),
    ("write_overflow", |s| s.closed_write_overflow),
    ("by_owner", |s| s.closed_by_owner),
    ("shutdown", |s| s.closed_shutdown),
    ("frame_timeout", |s| s.closed_frame_timeout),
    ("below_min_rate", |s| s.closed_below_min_rate),
    ("lifetime", |s| s.closed_lifetime),
];

pub(crate) const IO_OPEN: Spec = Spec {
    name: "agentry_net_connections_open",
    help: "Connections open now.",
    kind: Kind::Gauge,
    labels: IO,
};

pub(crate) const LISTENER_ACCEPTED: Spec = Spec {
    name: "agentry_net_listener_accepted",
    help: "Connections the listener accepted and gave a channel.",
    kind: Kind::Counter,
    labels: LISTENER,
};
pub(crate) const LISTENER_REFUSED: Spec = Spec {
    name: "agentry_net_listener_refused_over_limit",
    help: "Connections the listener closed at once because it was at its limit.",
    kind: Kind::Counter,
    labels: LISTENER,
};
pub(crate) const LISTENER_ERRORS: Spec = Spec {
    name: "agentry_net_listener_accept_errors",
    help: "accept calls of the listener that failed.",
    kind: Kind::Counter,
    labels: LISTENER,
};
pub(crate) const LISTENER_OPEN: Spec = Spec {
    name: "agentry_net_listener_connections_open",
    help: "Connections of the listener open now.",
    kind: Kind::Gauge,
    labels: LISTENER,
};

/// Every family this module may report (for the documented list's test).
#[cfg(all(test, feature = "net", feature = "remote"))]
pub(crate) fn specs() -> Vec<Spec> {
    let mut all: Vec<Spec> = IO_COUNTERS.iter().map(|(s, _)| *s).collect();
    all.extend([
        IO_CLOSED,
        IO_OPEN,
        LISTENER_ACCEPTED,
        LISTENER_REFUSED,
        LISTENER_ERRORS,
        LISTENER_OPEN,
    ]);
    all
}

/// Adds an io dispatcher's samples.
pub(crate) fn collect_io(name: &str, io: &IoDispatcher, out: &mut Families) {
    let stats = io.stats();
    for (spec, field) in IO_COUNTERS {
        out.int(spec, &[name], field(&stats));
    }
    for (reason, field) in CLOSE_REASONS {
        out.int(&IO_CLOSED, &[name, reason], field(&stats));
    }
    out.int(&IO_OPEN, &[name], stats.open());
}

/// Adds a listener's samples.
pub(crate) fn collect_listener(name: &str, listener: &Listener, out: &mut Families) {
    let stats = listener.stats();
    out.int(&LISTENER_ACCEPTED, &[name], stats.accepted);
    out.int(&LISTENER_REFUSED, &[name], stats.refused_over_limit);
    out.int(&LISTENER_ERRORS, &[name], stats.accept_errors);
    out.int(&LISTENER_OPEN, &[name], stats.open as u64);
}
