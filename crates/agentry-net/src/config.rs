//! Configuration of channels, listeners and outgoing connections.

use crate::error::NetError;
use crate::framing::Framing;
use std::time::Duration;

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
///     .write_watermarks(64 * 1024, 256 * 1024)
///     .write_max(1024 * 1024);
/// assert_eq!(config.framing, Framing::Lines);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelConfig {
    /// How the byte stream is cut into messages (default [`Framing::Raw`]).
    pub framing: Framing,
    /// Largest frame accepted from the peer, payload only (default 64 KiB). A larger one
    /// closes the connection with [`CloseReason::FrameTooBig`](crate::CloseReason::FrameTooBig).
    pub max_frame: usize,
    /// The owner gets [`WriteLow`](crate::WriteLow) when the write buffer drains to this
    /// (default 64 KiB).
    pub write_low: usize,
    /// The owner gets [`WriteHigh`](crate::WriteHigh) when the write buffer reaches this
    /// (default 256 KiB).
    pub write_high: usize,
    /// A send that would grow the write buffer past this closes the connection with
    /// [`CloseReason::WriteOverflow`](crate::CloseReason::WriteOverflow) (default 4 MiB).
    pub write_max: usize,
    /// Stop reading while the write buffer is over the high watermark, until it is back at
    /// the low one (default true: a peer that sends requests but does not read the replies
    /// is slowed down by TCP itself instead of filling the server's memory).
    pub pause_reading_on_write_high: bool,
    /// Bytes the channel may read ahead of its owner: received messages not yet handled
    /// (dropped) by the owner (default 1 MiB). Reading resumes at half of it.
    pub inbound_max: usize,
    /// Close after this long without a byte received or sent (default: none).
    pub idle_timeout: Option<Duration>,
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
