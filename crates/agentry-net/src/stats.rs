//! Counters: connections accepted, refused, closed (by reason), bytes and frames.
//!
//! Each io thread has its own [`Counters`] (aligned to a cache line, written only by agents
//! running on that thread, relaxed atomics); [`IoDispatcher::stats`](crate::IoDispatcher::stats)
//! sums them into a [`NetStats`] snapshot. A listener's own counts are in [`ListenerStats`].

use crate::messages::CloseReason;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counters of one io thread.
#[derive(Default, Debug)]
#[repr(align(64))]
pub(crate) struct Counters {
    pub(crate) accepted: AtomicU64,
    pub(crate) refused_over_limit: AtomicU64,
    pub(crate) accept_errors: AtomicU64,
    pub(crate) connected: AtomicU64,
    pub(crate) connect_failed: AtomicU64,
    pub(crate) opened: AtomicU64,
    pub(crate) closed: [AtomicU64; CloseReason::KINDS],
    pub(crate) bytes_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) write_calls: AtomicU64,
    pub(crate) frames_in: AtomicU64,
    pub(crate) frames_out: AtomicU64,
    pub(crate) frames_rejected: AtomicU64,
    pub(crate) write_high: AtomicU64,
    pub(crate) bytes_unsent: AtomicU64,
    pub(crate) sends_after_close: AtomicU64,
    pub(crate) read_pauses: AtomicU64,
    pub(crate) loop_blocks: AtomicU64,
    pub(crate) loop_wakeups: AtomicU64,
}

impl Counters {
    #[inline]
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes back what [`add`](Self::add) counted ahead of an outcome that did not happen.
    pub(crate) fn sub(counter: &AtomicU64, n: u64) {
        counter.fetch_sub(n, Ordering::Relaxed);
    }

    pub(crate) fn closed(&self, reason: &CloseReason) {
        Self::add(&self.closed[reason.kind_index()], 1);
    }

    pub(crate) fn add_to(&self, total: &mut NetStats) {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        total.accepted += r(&self.accepted);
        total.refused_over_limit += r(&self.refused_over_limit);
        total.accept_errors += r(&self.accept_errors);
        total.connected += r(&self.connected);
        total.connect_failed += r(&self.connect_failed);
        total.opened += r(&self.opened);
        total.closed_peer += r(&self.closed[0]);
        total.closed_mid_frame += r(&self.closed[1]);
        total.closed_error += r(&self.closed[2]);
        total.closed_idle += r(&self.closed[3]);
        total.closed_frame_too_big += r(&self.closed[4]);
        total.closed_write_overflow += r(&self.closed[5]);
        total.closed_by_owner += r(&self.closed[6]);
        total.closed_shutdown += r(&self.closed[7]);
        total.closed_frame_timeout += r(&self.closed[8]);
        total.closed_below_min_rate += r(&self.closed[9]);
        total.closed_lifetime += r(&self.closed[10]);
        total.bytes_in += r(&self.bytes_in);
        total.bytes_out += r(&self.bytes_out);
        total.write_calls += r(&self.write_calls);
        total.frames_in += r(&self.frames_in);
        total.frames_out += r(&self.frames_out);
        total.frames_rejected += r(&self.frames_rejected);
        total.write_high += r(&self.write_high);
        total.bytes_unsent += r(&self.bytes_unsent);
        total.sends_after_close += r(&self.sends_after_close);
        total.read_pauses += r(&self.read_pauses);
        total.loop_blocks += r(&self.loop_blocks);
        total.loop_wakeups += r(&self.loop_wakeups);
    }
}

/// A snapshot of an io dispatcher's counters, summed over its threads.
///
/// Every connection that was opened is either still open or counted in exactly one
/// `closed_*` field: `opened == open() + closed()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetStats {
    /// Connections accepted by listeners (and given a channel).
    pub accepted: u64,
    /// Connections a listener closed at once because it was at its connection limit.
    pub refused_over_limit: u64,
    /// `accept` calls that failed (e.g. out of file descriptors).
    pub accept_errors: u64,
    /// Outgoing connections established.
    pub connected: u64,
    /// Outgoing connections that failed or timed out.
    pub connect_failed: u64,
    /// Channels opened (accepted + connected).
    pub opened: u64,
    /// Closed: the peer closed the connection between frames.
    pub closed_peer: u64,
    /// Closed: the peer closed the connection in the middle of a frame.
    pub closed_mid_frame: u64,
    /// Closed: a read or write failed (reset, broken pipe, …).
    pub closed_error: u64,
    /// Closed: nothing was received or sent for the idle timeout.
    pub closed_idle: u64,
    /// Closed: the peer announced or sent a frame over the maximum frame size.
    pub closed_frame_too_big: u64,
    /// Closed: the peer did not read and the write buffer reached its maximum.
    pub closed_write_overflow: u64,
    /// Closed: the owner sent `Close`.
    pub closed_by_owner: u64,
    /// Closed: the listener, the io dispatcher or the environment shut down.
    pub closed_shutdown: u64,
    /// Closed: a frame was started and not finished within the frame timeout.
    pub closed_frame_timeout: u64,
    /// Closed: fewer bytes than the minimum receive rate arrived in a window.
    pub closed_below_min_rate: u64,
    /// Closed: the connection reached its maximum lifetime.
    pub closed_lifetime: u64,
    /// Bytes read from sockets.
    pub bytes_in: u64,
    /// Bytes written to sockets.
    pub bytes_out: u64,
    /// `write` / `writev` calls that wrote bytes: `bytes_out / write_calls` is the mean write.
    /// A channel writes what its owner sent in one turn of the io loop with at most two calls
    /// (see the channel's ground rules), so a reply sent in ten pieces costs two.
    pub write_calls: u64,
    /// Frames decoded and delivered to owners.
    pub frames_in: u64,
    /// Frames encoded and queued for writing.
    pub frames_out: u64,
    /// Frames refused because they exceeded the maximum frame size (the connection is closed).
    pub frames_rejected: u64,
    /// Times a connection's unwritten bytes reached the high watermark (`WriteHigh` sent).
    pub write_high: u64,
    /// Bytes still buffered for writing when their connection closed (never sent).
    pub bytes_unsent: u64,
    /// `SendBytes` / `SendFrame` messages that reached a channel after it closed (dropped).
    pub sends_after_close: u64,
    /// Times a channel stopped reading because its owner had not handled enough of what it
    /// received (inbound credit exhausted) or its unwritten bytes reached the high watermark.
    pub read_pauses: u64,
    /// Times an io loop blocked in `epoll_wait` (nothing to run).
    pub loop_blocks: u64,
    /// Eventfd wake-ups seen by the io loops (a message from another thread arrived while the
    /// loop was blocked or about to block): about one per blocking period, never one per
    /// message.
    pub loop_wakeups: u64,
}

impl NetStats {
    /// Connections closed, whatever the reason.
    pub fn closed(&self) -> u64 {
        self.closed_peer
            + self.closed_mid_frame
            + self.closed_error
            + self.closed_idle
            + self.closed_frame_too_big
            + self.closed_write_overflow
            + self.closed_by_owner
            + self.closed_shutdown
            + self.closed_frame_timeout
            + self.closed_below_min_rate
            + self.closed_lifetime
    }

    /// Connections closed for a reason of the kind of `reason` (its fields are ignored:
    /// `closed_for(&CloseReason::FrameTimeout { partial: 0 })` is `closed_frame_timeout`).
    ///
    /// ```
    /// use agentry_net::{CloseReason, NetStats};
    ///
    /// let stats = NetStats::default();
    /// assert_eq!(stats.closed_for(&CloseReason::LifetimeExceeded), stats.closed_lifetime);
    /// ```
    pub fn closed_for(&self, reason: &CloseReason) -> u64 {
        match reason {
            CloseReason::PeerClosed => self.closed_peer,
            CloseReason::PeerClosedMidFrame { .. } => self.closed_mid_frame,
            CloseReason::Error(_) => self.closed_error,
            CloseReason::IdleTimeout => self.closed_idle,
            CloseReason::FrameTooBig { .. } => self.closed_frame_too_big,
            CloseReason::WriteOverflow { .. } => self.closed_write_overflow,
            CloseReason::ByOwner => self.closed_by_owner,
            CloseReason::Shutdown => self.closed_shutdown,
            CloseReason::FrameTimeout { .. } => self.closed_frame_timeout,
            CloseReason::BelowMinRate { .. } => self.closed_below_min_rate,
            CloseReason::LifetimeExceeded => self.closed_lifetime,
        }
    }

    /// Connections open now (opened and not yet closed).
    pub fn open(&self) -> u64 {
        self.opened.saturating_sub(self.closed())
    }
}

/// A snapshot of one listener's counters ([`Listener::stats`](crate::Listener::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenerStats {
    /// Connections accepted and given a channel.
    pub accepted: u64,
    /// Connections closed at once because the listener was at its limit.
    pub refused_over_limit: u64,
    /// `accept` calls that failed.
    pub accept_errors: u64,
    /// Channels of this listener currently open.
    pub open: usize,
}

#[cfg(test)]
mod tests;
