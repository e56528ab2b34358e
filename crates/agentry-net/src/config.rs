//! Configuration of channels, listeners and outgoing connections.

use crate::error::NetError;
use crate::framing::Framing;
use std::time::Duration;

/// The default [`ChannelConfig::frame_timeout`].
const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(30);

/// A minimum receive rate ([`ChannelConfig::min_receive_rate`]): at least `bytes` in every
/// `window`.
///
/// ```
/// use agentry_net::{ChannelConfig, MinRate};
/// use std::time::Duration;
///
/// // At least 64 bytes every 10 seconds.
/// let rate = MinRate::new(64, Duration::from_secs(10));
/// let config = ChannelConfig::default().min_receive_rate(Some(rate));
/// assert_eq!(config.min_receive_rate.map(|r| r.bytes), Some(64));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MinRate {
    /// Bytes that must be received in each window (> 0).
    pub bytes: u64,
    /// The length of a window (> 0).
    pub window: Duration,
}

impl MinRate {
    /// At least `bytes` in every `window`.
    pub fn new(bytes: u64, window: Duration) -> Self {
        MinRate { bytes, window }
    }
}

/// How a channel (one TCP connection) behaves. Every limit has a default; all of them are
/// checked by [`IoDispatcher::listen`](crate::IoDispatcher::listen) and
/// [`IoDispatcher::connect`](crate::IoDispatcher::connect).
///
/// ```
/// use agentry_net::{ChannelConfig, Framing};
/// use std::time::Duration;
///
/// let config = ChannelConfig::default()
///     .framing(Framing::Lines)
///     .max_frame(4096)
///     .idle_timeout(Some(Duration::from_secs(30)))
///     .frame_timeout(Some(Duration::from_secs(10)))
///     .max_lifetime(Some(Duration::from_secs(3600)))
///     .write_watermarks(64 * 1024, 256 * 1024)
///     .write_max(1024 * 1024);
/// assert_eq!(config.framing, Framing::Lines);
/// ```
///
/// # Time limits
///
/// Four limits bound how long a peer can hold a connection (and so a slot of its listener's
/// [`max_connections`](ListenerConfig::max_connections)) without doing what it should:
///
/// | limit | closes a connection that … | reason | default |
/// |---|---|---|---|
/// | [`idle_timeout`](Self::idle_timeout) | received and sent nothing for that long | [`IdleTimeout`](crate::CloseReason::IdleTimeout) | none |
/// | [`frame_timeout`](Self::frame_timeout) | started a frame and did not finish it in time (framed channels) | [`FrameTimeout`](crate::CloseReason::FrameTimeout) | 30 s |
/// | [`min_receive_rate`](Self::min_receive_rate) | received fewer bytes than the minimum over a window | [`BelowMinRate`](crate::CloseReason::BelowMinRate) | none |
/// | [`max_lifetime`](Self::max_lifetime) | has been open that long, whatever it does | [`LifetimeExceeded`](crate::CloseReason::LifetimeExceeded) | none |
///
/// A peer that trickles a frame byte by byte is active (the idle timeout never fires) but
/// misses the frame deadline. On a raw channel there are no frames: the minimum receive
/// rate is the tool there (it also closes a peer that sends nothing for a window), and the
/// maximum lifetime bounds any connection. The frame deadline and the rate are not charged
/// to the peer while the channel itself does not read (see [`frame_timeout`](Self::frame_timeout)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelConfig {
    /// How the byte stream is cut into messages (default [`Framing::Raw`]).
    pub framing: Framing,
    /// Largest frame accepted from the peer, payload only (default 64 KiB). A larger one
    /// closes the connection with [`CloseReason::FrameTooBig`](crate::CloseReason::FrameTooBig).
    pub max_frame: usize,
    /// The owner gets [`WriteLow`](crate::WriteLow) when the bytes not yet written (the
    /// write buffer, plus the sends queued at the channel with
    /// [`pause_reading_on_write_high`](Self::pause_reading_on_write_high)) fall to this after
    /// a `WriteHigh` (default 64 KiB).
    pub write_low: usize,
    /// The owner gets [`WriteHigh`](crate::WriteHigh) when the bytes not yet written reach
    /// this (default 256 KiB).
    pub write_high: usize,
    /// A send that would grow the write buffer past this closes the connection with
    /// [`CloseReason::WriteOverflow`](crate::CloseReason::WriteOverflow) (default 4 MiB).
    pub write_max: usize,
    /// Stop reading from `WriteHigh` to `WriteLow` (default true: a peer that sends requests
    /// but does not read the replies is slowed down by TCP itself instead of filling the
    /// server's memory). With it, the replies already sent to the channel
    /// ([`SendBytes`](crate::SendBytes) / [`SendFrame`](crate::SendFrame)) but still waiting
    /// in its queue count as not yet written: they are counted on the sender's thread when
    /// sent, so an owner on another io thread cannot let the channel read ahead of its queued
    /// replies. Without it they are counted once taken into the write buffer.
    pub pause_reading_on_write_high: bool,
    /// Bytes the channel may read ahead of its owner: received messages not yet handled
    /// (dropped) by the owner (default 1 MiB). Reading resumes at half of it.
    pub inbound_max: usize,
    /// Close after this long without a byte received or sent (default: none).
    pub idle_timeout: Option<Duration>,
    /// Once the first byte of a frame (a length prefix, or a line) has arrived, the whole
    /// frame must arrive within this time; otherwise the connection is closed with
    /// [`CloseReason::FrameTimeout`](crate::CloseReason::FrameTimeout) (default 30 s: a
    /// frame of the default 64 KiB `max_frame` then needs about 2.2 KB/s; raise it with
    /// `max_frame` for slow links; `None` disables it).
    ///
    /// Applies to [`Framing::LengthPrefixed`] and [`Framing::Lines`]; ignored by
    /// [`Framing::Raw`] (use [`min_receive_rate`](Self::min_receive_rate)). The clock does
    /// not run against the peer while the channel itself holds reading (the owner's
    /// [`PauseReading`](crate::PauseReading), the write buffer over the high watermark,
    /// the owner's inbound credit used up): when reading resumes, the frame gets the whole
    /// time again. Mechanism: one timer per deadline period, armed when a frame stays
    /// unfinished after a read, not one per frame.
    pub frame_timeout: Option<Duration>,
    /// Close a connection that receives fewer than [`MinRate::bytes`] in a
    /// [`MinRate::window`], with [`CloseReason::BelowMinRate`](crate::CloseReason::BelowMinRate)
    /// (default: none). Windows are consecutive from the connection's opening; a window
    /// during which the channel held reading (see [`frame_timeout`](Self::frame_timeout)) is
    /// not judged. A peer that sends nothing for a window is below any rate: this limit is
    /// for request/response protocols whose peers keep talking, not for connections that
    /// mostly listen. One timer per window.
    pub min_receive_rate: Option<MinRate>,
    /// Close the connection this long after it opened, whatever it does, with
    /// [`CloseReason::LifetimeExceeded`](crate::CloseReason::LifetimeExceeded) (default:
    /// none). Like the idle timeout, the close is graceful: reading stops, the owner gets
    /// `Closed` and what it sends while handling it is still written, within `linger`.
    pub max_lifetime: Option<Duration>,
    /// After [`Close`](crate::Close), how long buffered bytes may take to drain before the
    /// connection is closed anyway (default 5 s).
    pub linger: Duration,
    /// Set `TCP_NODELAY` (default true: request/response traffic is not delayed by Nagle).
    pub nodelay: bool,
    /// Reads per readiness event before the channel yields to other agents of its thread
    /// (it continues after them; default 4).
    pub read_budget: usize,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig {
            framing: Framing::Raw,
            max_frame: 64 * 1024,
            write_low: 64 * 1024,
            write_high: 256 * 1024,
            write_max: 4 * 1024 * 1024,
            pause_reading_on_write_high: true,
            inbound_max: 1024 * 1024,
            idle_timeout: None,
            frame_timeout: Some(DEFAULT_FRAME_TIMEOUT),
            min_receive_rate: None,
            max_lifetime: None,
            linger: Duration::from_secs(5),
            nodelay: true,
            read_budget: 4,
        }
    }
}

impl ChannelConfig {
    /// Sets [`framing`](Self::framing).
    pub fn framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// Sets [`max_frame`](Self::max_frame).
    pub fn max_frame(mut self, max: usize) -> Self {
        self.max_frame = max;
        self
    }

    /// Sets [`write_low`](Self::write_low) and [`write_high`](Self::write_high).
    pub fn write_watermarks(mut self, low: usize, high: usize) -> Self {
        self.write_low = low;
        self.write_high = high;
        self
    }

    /// Sets [`write_max`](Self::write_max).
    pub fn write_max(mut self, max: usize) -> Self {
        self.write_max = max;
        self
    }

    /// Sets [`pause_reading_on_write_high`](Self::pause_reading_on_write_high).
    pub fn pause_reading_on_write_high(mut self, pause: bool) -> Self {
        self.pause_reading_on_write_high = pause;
        self
    }

    /// Sets [`inbound_max`](Self::inbound_max).
    pub fn inbound_max(mut self, max: usize) -> Self {
        self.inbound_max = max;
        self
    }

    /// Sets [`idle_timeout`](Self::idle_timeout).
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`frame_timeout`](Self::frame_timeout).
    pub fn frame_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.frame_timeout = timeout;
        self
    }

    /// Sets [`min_receive_rate`](Self::min_receive_rate).
    pub fn min_receive_rate(mut self, rate: Option<MinRate>) -> Self {
        self.min_receive_rate = rate;
        self
    }

    /// Sets [`max_lifetime`](Self::max_lifetime).
    pub fn max_lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.max_lifetime = lifetime;
        self
    }

    /// Sets [`linger`](Self::linger).
    pub fn linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// Sets [`nodelay`](Self::nodelay).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.nodelay = nodelay;
        self
    }

    /// Sets [`read_budget`](Self::read_budget).
    pub fn read_budget(mut self, reads: usize) -> Self {
        self.read_budget = reads;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), NetError> {
        if self.max_frame == 0 {
            return Err(NetError::InvalidConfig("max_frame must be > 0"));
        }
        if self.framing == Framing::LengthPrefixed && self.max_frame > u32::MAX as usize {
            return Err(NetError::InvalidConfig(
                "max_frame of a length-prefixed channel must fit in 32 bits",
            ));
        }
        if self.write_low > self.write_high {
            return Err(NetError::InvalidConfig("write_low must be <= write_high"));
        }
        if self.write_high == 0 || self.write_high > self.write_max {
            return Err(NetError::InvalidConfig(
                "write_high must be > 0 and <= write_max",
            ));
        }
        if self.inbound_max == 0 {
            return Err(NetError::InvalidConfig("inbound_max must be > 0"));
        }
        if self.read_budget == 0 {
            return Err(NetError::InvalidConfig("read_budget must be > 0"));
        }
        if self.idle_timeout == Some(Duration::ZERO) {
            return Err(NetError::InvalidConfig("idle_timeout must be > 0"));
        }
        if self.frame_timeout == Some(Duration::ZERO) {
            return Err(NetError::InvalidConfig("frame_timeout must be > 0"));
        }
        if self.max_lifetime == Some(Duration::ZERO) {
            return Err(NetError::InvalidConfig("max_lifetime must be > 0"));
        }
        if let Some(rate) = self.min_receive_rate
            && (rate.bytes == 0 || rate.window.is_zero())
        {
            return Err(NetError::InvalidConfig(
                "min_receive_rate needs bytes > 0 and a window > 0",
            ));
        }
        Ok(())
    }
}

/// How a listener behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenerConfig {
    /// The configuration of each accepted connection's channel.
    pub channel: ChannelConfig,
    /// Connections open at once; one more is accepted and closed at once, and counted in
    /// `refused_over_limit` (default 10,000).
    pub max_connections: usize,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        ListenerConfig {
            channel: ChannelConfig::default(),
            max_connections: 10_000,
        }
    }
}

impl ListenerConfig {
    /// Sets [`channel`](Self::channel).
    pub fn channel(mut self, channel: ChannelConfig) -> Self {
        self.channel = channel;
        self
    }

    /// Sets [`max_connections`](Self::max_connections).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), NetError> {
        if self.max_connections == 0 {
            return Err(NetError::InvalidConfig("max_connections must be > 0"));
        }
        self.channel.validate()
    }
}

/// How an outgoing connection is made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectConfig {
    /// The configuration of the connection's channel.
    pub channel: ChannelConfig,
    /// Give up (with [`ConnectError::TimedOut`](crate::ConnectError::TimedOut)) after this
    /// long (default 10 s).
    pub timeout: Duration,
}

impl Default for ConnectConfig {
    fn default() -> Self {
        ConnectConfig {
            channel: ChannelConfig::default(),
            timeout: Duration::from_secs(10),
        }
    }
}

impl ConnectConfig {
    /// Sets [`channel`](Self::channel).
    pub fn channel(mut self, channel: ChannelConfig) -> Self {
        self.channel = channel;
        self
    }

    /// Sets [`timeout`](Self::timeout).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), NetError> {
        if self.timeout.is_zero() {
            return Err(NetError::InvalidConfig("connect timeout must be > 0"));
        }
        self.channel.validate()
    }
}
