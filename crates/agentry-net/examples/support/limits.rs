//! The limits of an example server, from its command line (shared by `echo_server` and
//! `chat_server`):
//!
//! ```text
//! [ADDR] [--threads N] [--max-connections N] [--max-frame BYTES] [--write-max BYTES]
//!        [--idle-timeout DUR|off] [--frame-timeout DUR|off] [--min-rate BYTES/DUR|off]
//!        [--max-lifetime DUR|off]
//! ```
//!
//! `DUR` is a whole number with `ms`, `s`, `m` or `h` (`300ms`, `30s`, `10m`); `off` turns a
//! limit off. The write watermarks are 1/16 and 1/4 of `--write-max`. A raw server (the echo
//! server) has no frames: `--max-frame` and `--frame-timeout` are refused there.

use agentry_net::{ChannelConfig, ListenerConfig, MinRate};
use std::net::SocketAddr;
use std::time::Duration;

/// What the flags set; each example has its own defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Io threads (`--threads`).
    pub threads: usize,
    /// Connections open at once (`--max-connections`).
    pub max_connections: usize,
    /// Largest frame (line) a client may send (`--max-frame`; framed servers only).
    pub max_frame: usize,
    /// Bytes waiting for a client that does not read before it is disconnected
    /// (`--write-max`).
    pub write_max: usize,
    /// Close after this long without a byte in or out (`--idle-timeout`).
    pub idle_timeout: Option<Duration>,
    /// A frame (line) must be finished this long after its first byte (`--frame-timeout`;
    /// framed servers only).
    pub frame_timeout: Option<Duration>,
    /// At least this many bytes received per window (`--min-rate 64/10s`).
    pub min_rate: Option<MinRate>,
    /// Close any connection this long after it opened (`--max-lifetime`).
    pub max_lifetime: Option<Duration>,
}

/// The usage line of the flags.
pub const USAGE: &str = "[ADDR] [--threads N] [--max-connections N] [--max-frame BYTES] \
     [--write-max BYTES] [--idle-timeout DUR|off] [--frame-timeout DUR|off] \
     [--min-rate BYTES/DUR|off] [--max-lifetime DUR|off]   (DUR: 300ms, 30s, 10m, 1h)";

impl Limits {
    /// Reads the flags (and an optional address first) over `self`, the defaults; `raw`
    /// refuses the flags about frames.
    pub fn parse(
        mut self,
        args: impl IntoIterator<Item = String>,
        raw: bool,
    ) -> Result<(Option<SocketAddr>, Limits), String> {
        let mut args = args.into_iter().peekable();
        let addr = match args.peek() {
            Some(first) if !first.starts_with("--") => {
                let a = args.next().unwrap_or_default();
                Some(a.parse().map_err(|e| format!("address {a:?}: {e}"))?)
            }
            _ => None,
        };
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(format!("usage: {USAGE}"));
            }
            let value = args
                .next()
                .ok_or_else(|| format!("{flag} needs a value; usage: {USAGE}"))?;
            let bad = |e: String| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--threads" => self.threads = number(&value).map_err(bad)?,
                "--max-connections" => self.max_connections = number(&value).map_err(bad)?,
                "--write-max" => self.write_max = number(&value).map_err(bad)?,
                "--idle-timeout" => self.idle_timeout = optional(&value, duration).map_err(bad)?,
                "--min-rate" => self.min_rate = optional(&value, rate).map_err(bad)?,
                "--max-lifetime" => self.max_lifetime = optional(&value, duration).map_err(bad)?,
                "--max-frame" | "--frame-timeout" if raw => {
                    return Err(format!("{flag}: this server has no frames (raw bytes)"));
                }
                "--max-frame" => self.max_frame = number(&value).map_err(bad)?,
                "--frame-timeout" => {
                    self.frame_timeout = optional(&value, duration).map_err(bad)?;
                }
                _ => return Err(format!("unknown flag {flag}; usage: {USAGE}")),
            }
        }
        Ok((addr, self))
    }

    /// The listener's configuration: `channel` (its framing) with these limits.
    pub fn listener(&self, channel: ChannelConfig) -> ListenerConfig {
        let channel = channel
            .max_frame(self.max_frame)
            .write_watermarks(self.write_max / 16, self.write_max / 4)
            .write_max(self.write_max)
            .idle_timeout(self.idle_timeout)
            .frame_timeout(self.frame_timeout)
            .min_receive_rate(self.min_rate)
            .max_lifetime(self.max_lifetime);
        ListenerConfig::default()
            .channel(channel)
            .max_connections(self.max_connections)
    }
}

fn number(s: &str) -> Result<usize, String> {
    s.parse().map_err(|e| format!("{e}"))
}

fn optional<T>(s: &str, parse: fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
    if s == "off" {
        Ok(None)
    } else {
        parse(s).map(Some)
    }
}

/// `300ms`, `30s`, `10m`, `1h`.
fn duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| "expected a number and a unit".to_string())?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err("the unit is ms, s, m or h".into()),
    }
}

/// `64/10s`: at least 64 bytes every 10 seconds.
fn rate(s: &str) -> Result<MinRate, String> {
    let (bytes, window) = s.split_once('/').ok_or("expected BYTES/DUR, e.g. 64/10s")?;
    Ok(MinRate::new(number(bytes)? as u64, duration(window)?))
}
