//! The messages between a channel and its owner.
//!
//! To the owner, from the channel (all from one sender, so in this order): first
//! [`Accepted`] or [`Connected`] (or only [`ConnectFailed`]); then any number of
//! [`Received`] (raw channels) or [`Frame`] (framed channels) and [`WriteHigh`] /
//! [`WriteLow`]; last [`Closed`].
//!
//! To the channel, from anyone (normally the owner): [`SendBytes`], [`SendFrame`], [`Close`],
//! [`PauseReading`], [`ResumeReading`].

use crate::config::MinRate;
use crate::credit::Credit;
use crate::error::ConnectError;
use crate::ids::ConnId;
use agentry::Mbox;
use std::io;
use std::net::SocketAddr;

/// A listener accepted a connection; `channel` takes [`SendBytes`], [`Close`], ….
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The connection.
    pub conn: ConnId,
    /// The channel agent's mbox.
    pub channel: Mbox,
    /// The client's address.
    pub peer: SocketAddr,
    /// The listener's address.
    pub local: SocketAddr,
}

/// An outgoing connection is established.
#[derive(Debug, Clone)]
pub struct Connected {
    /// The connection (the id [`IoDispatcher::connect`](crate::IoDispatcher::connect) returned).
    pub conn: ConnId,
    /// The channel agent's mbox.
    pub channel: Mbox,
    /// The server's address.
    pub peer: SocketAddr,
    /// The local address.
    pub local: SocketAddr,
}

/// An outgoing connection could not be established (no [`Closed`] follows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectFailed {
    /// The connection attempt.
    pub conn: ConnId,
    /// The address it tried.
    pub addr: SocketAddr,
    /// Why it failed.
    pub error: ConnectError,
}

/// Bytes read from a raw channel (one read; no message boundaries).
///
/// Holds inbound [`Credit`] until dropped: a channel reads at most
/// [`ChannelConfig::inbound_max`](crate::ChannelConfig::inbound_max) bytes ahead of what its
/// owner has handled. Destructure with `Received { conn, data, .. }`.
#[derive(Debug)]
pub struct Received {
    /// The connection.
    pub conn: ConnId,
    /// The bytes.
    pub data: Vec<u8>,
    pub(crate) credit: Credit,
}

/// One decoded frame of a framed channel (without its length prefix or line ending).
///
/// Holds inbound [`Credit`] like [`Received`]. Destructure with `Frame { conn, data, .. }`.
#[derive(Debug)]
pub struct Frame {
    /// The connection.
    pub conn: ConnId,
    /// The frame's payload.
    pub data: Vec<u8>,
    pub(crate) credit: Credit,
}

impl Received {
    /// The inbound credit this message holds (release it early to let the channel read on
    /// while the data is kept).
    pub fn into_parts(self) -> (ConnId, Vec<u8>, Credit) {
        (self.conn, self.data, self.credit)
    }
}

impl Frame {
    /// The inbound credit this message holds (release it early to let the channel read on
    /// while the data is kept).
    pub fn into_parts(self) -> (ConnId, Vec<u8>, Credit) {
        (self.conn, self.data, self.credit)
    }
}

/// The bytes sent to the channel and not yet written to the socket reached the high
/// watermark (`ChannelConfig::write_high`): stop sending until [`WriteLow`]. They are the
/// write buffer plus, with `pause_reading_on_write_high` (the default, which also stops
/// reading until [`WriteLow`]), the `SendBytes` / `SendFrame` still queued at the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteHigh {
    /// The connection.
    pub conn: ConnId,
    /// Bytes not yet written when the watermark was found reached.
    pub unwritten: usize,
}

/// After a [`WriteHigh`], the bytes not yet written fell to the low watermark
/// (`ChannelConfig::write_low`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteLow {
    /// The connection.
    pub conn: ConnId,
    /// Bytes not yet written.
    pub unwritten: usize,
}

/// The connection is closed (or closing); the channel's last message to its owner, sent
/// exactly once.
///
/// When the peer ended the stream, or on a time limit (idle, frame deadline, minimum rate,
/// lifetime), an oversized frame or the owner's [`Close`], the socket stays open for writing until the owner has handled this message
/// (and everything received before it): bytes the owner sends while handling them — replies
/// to the last requests, a goodbye or an error line — are still written, within
/// [`ChannelConfig::linger`](crate::ChannelConfig::linger). After a read or write error, a
/// write overflow or a shutdown the socket is already closed.
///
/// Holds inbound credit like [`Received`]; the channel finishes when it is dropped.
#[derive(Debug)]
pub struct Closed {
    /// The connection.
    pub conn: ConnId,
    /// Why.
    pub reason: CloseReason,
    /// Bytes read over the connection's life.
    pub bytes_in: u64,
    /// Bytes written until this message was sent.
    pub bytes_out: u64,
    #[expect(dead_code, reason = "held for its drop: the channel drains until then")]
    pub(crate) credit: Credit,
}

/// Why a connection was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The peer closed the connection (end of stream), between frames.
    PeerClosed,
    /// The peer closed the connection with `partial` bytes of an unfinished frame received.
    PeerClosedMidFrame {
        /// Bytes of the unfinished frame (prefix included).
        partial: usize,
    },
    /// A read or write failed (e.g. `ConnectionReset`, `BrokenPipe`).
    Error(io::ErrorKind),
    /// Nothing was received or sent for the configured idle timeout.
    IdleTimeout,
    /// The peer announced or sent a frame of `size` bytes, over the maximum `max`.
    FrameTooBig {
        /// The frame's size (for a line without its end: the bytes seen so far).
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The write buffer would have grown past its maximum (the peer does not read).
    WriteOverflow {
        /// Bytes that would have been buffered.
        buffered: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The owner sent [`Close`].
    ByOwner,
    /// The listener, the io dispatcher or the environment shut down.
    Shutdown,
    /// A frame was started and not finished within
    /// [`ChannelConfig::frame_timeout`](crate::ChannelConfig::frame_timeout) (a peer
    /// trickling its bytes, or one that stopped in the middle of a frame).
    FrameTimeout {
        /// Bytes of the unfinished frame received (prefix included).
        partial: usize,
    },
    /// Fewer bytes than [`ChannelConfig::min_receive_rate`](crate::ChannelConfig::min_receive_rate)
    /// asks for arrived in one window.
    BelowMinRate {
        /// Bytes received in that window.
        received: u64,
        /// The configured minimum.
        min: MinRate,
    },
    /// The connection was open for
    /// [`ChannelConfig::max_lifetime`](crate::ChannelConfig::max_lifetime).
    LifetimeExceeded,
}

impl CloseReason {
    /// Number of kinds (one counter each in [`NetStats`](crate::NetStats)).
    pub(crate) const KINDS: usize = 11;

    pub(crate) fn kind_index(&self) -> usize {
        match self {
            CloseReason::PeerClosed => 0,
            CloseReason::PeerClosedMidFrame { .. } => 1,
            CloseReason::Error(_) => 2,
            CloseReason::IdleTimeout => 3,
            CloseReason::FrameTooBig { .. } => 4,
            CloseReason::WriteOverflow { .. } => 5,
            CloseReason::ByOwner => 6,
            CloseReason::Shutdown => 7,
            CloseReason::FrameTimeout { .. } => 8,
            CloseReason::BelowMinRate { .. } => 9,
            CloseReason::LifetimeExceeded => 10,
        }
    }
}

/// Write these bytes as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendBytes(pub Vec<u8>);

/// Write this payload as one frame of the channel's framing (a length prefix, or a line end;
/// a raw channel writes it as it is). A line payload must not contain `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendFrame(pub Vec<u8>);

/// Close gracefully: stop reading, send what is buffered (within the linger time), then
/// close. The owner gets [`Closed`] with [`CloseReason::ByOwner`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Close;

/// Stop reading from the socket (the peer is slowed down by TCP flow control).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseReading;

/// Undo [`PauseReading`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeReading;
