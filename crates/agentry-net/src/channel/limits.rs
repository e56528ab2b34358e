//! The time limits of one channel — idle timeout, frame deadline, minimum receive rate —
//! as a sans-IO state machine: the channel passes the time in and arms the timers; nothing
//! here reads the clock or sends a message, so `limits/tests.rs` drives it with virtual time.
//! (The maximum lifetime needs no state: one timer from the opening.)
//!
//! # Ground rules
//!
//! - Per read, the channel reports the bytes and the frames it decoded
//!   ([`Limits::after_read`]): at most one clock read and a few stores, never a timer. A
//!   timer is armed only when a limit starts to run that has none pending (a frame left
//!   unfinished by a read), so a frame that arrives in one read costs nothing.
//! - One agentry timer per limit and period, not per message (the idle timeout's
//!   mechanism): at expiry the channel asks [`Limits::idle_check`], [`Limits::frame_check`]
//!   or [`Limits::rate_check`], which decide from the state alone — close, re-arm for the
//!   remainder, or stop — so a stale expiry (its timer replaced meanwhile) does no harm.
//! - A frame's clock starts with its first byte: after a read, an unfinished frame that
//!   the read began (or one left by a read that completed none) keeps or sets the start.
//! - Holds: while the channel itself does not read (the owner's `PauseReading`, the write
//!   buffer over the high watermark, inbound credit used up) the bytes wait in the kernel,
//!   which is not the peer's fault. A frame check during a hold re-arms for the whole
//!   timeout, the frame's clock restarts when the hold ends, and a rate window that saw a
//!   hold is not judged.

use crate::config::{ChannelConfig, MinRate};
use crate::framing::Framing;
use std::time::{Duration, Instant};

/// What to do after a limit's timer expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The limit is exceeded: close the connection.
    Expired,
    /// Not yet: arm the timer again for this long.
    RearmIn(Duration),
    /// Nothing runs against this limit now: leave the timer disarmed.
    Disarm,
}

/// The state of a channel's time limits.
#[derive(Debug)]
pub(crate) struct Limits {
    idle: Option<Duration>,
    /// `None` on raw channels (no frames).
    frame: Option<Duration>,
    rate: Option<MinRate>,
    /// Last byte received or sent (kept only with an idle timeout).
    last_activity: Instant,
    /// When the frame being received began (its first byte), if one is unfinished.
    frame_started: Option<Instant>,
    /// `bytes_in` when the current rate window began.
    window_start_bytes: u64,
    /// The channel holds reading now.
    held: bool,
    /// The channel held reading at some time in the current rate window.
    held_in_window: bool,
}

impl Limits {
    pub(crate) fn new(config: &ChannelConfig, now: Instant) -> Self {
        Limits {
            idle: config.idle_timeout,
            frame: config
                .frame_timeout
                .filter(|_| config.framing != Framing::Raw),
            rate: config.min_receive_rate,
            last_activity: now,
            frame_started: None,
            window_start_bytes: 0,
            held: false,
            held_in_window: false,
        }
    }

    /// The connection opened at `now` with `bytes_in` read so far: the idle period and the
    /// first rate window begin.
    pub(crate) fn opened(&mut self, now: Instant, bytes_in: u64) {
        self.last_activity = now;
        self.window_start_bytes = bytes_in;
        self.held_in_window = self.held;
    }

    pub(crate) fn idle_timeout(&self) -> Option<Duration> {
        self.idle
    }

    pub(crate) fn frame_timeout(&self) -> Option<Duration> {
        self.frame
    }

    pub(crate) fn rate_window(&self) -> Option<Duration> {
        self.rate.map(|r| r.window)
    }

    /// Bytes were sent at `now` (the channel calls it only with an idle timeout).
    pub(crate) fn sent(&mut self, now: Instant) {
        self.last_activity = now;
    }

    /// After a read that completed `frames` frames and left `partial` bytes of an unfinished
    /// one; `now` is called at most once.
    pub(crate) fn after_read(
        &mut self,
        frames: u64,
        partial: usize,
        mut now: impl FnMut() -> Instant,
    ) {
        let mut clock = None;
        let mut now = || *clock.get_or_insert_with(&mut now);
        if self.idle.is_some() {
            self.last_activity = now();
        }
        if self.frame.is_none() {
            return;
        }
        if partial == 0 {
            self.frame_started = None;
        } else if frames > 0 || self.frame_started.is_none() {
            // The read began a new frame (the one before it, if any, is complete).
            self.frame_started = Some(now());
        }
    }

    /// A frame's clock is running: the channel arms the frame timer if none is pending.
    pub(crate) fn frame_running(&self) -> bool {
        self.frame_started.is_some()
    }

    /// Whether the channel holds reading (`held`) as of `now`. Ending a hold restarts an
    /// unfinished frame's clock.
    pub(crate) fn set_held(&mut self, held: bool, now: impl FnOnce() -> Instant) {
        if held {
            self.held = true;
            self.held_in_window = true;
        } else if self.held {
            self.held = false;
            if self.frame_started.is_some() {
                self.frame_started = Some(now());
            }
        }
    }

    /// The idle timer expired.
    pub(crate) fn idle_check(&self, now: Instant) -> Verdict {
        let Some(timeout) = self.idle else {
            return Verdict::Disarm;
        };
        let idle = now.saturating_duration_since(self.last_activity);
        if idle >= timeout {
            Verdict::Expired
        } else {
            Verdict::RearmIn(timeout - idle)
        }
    }

    /// The frame timer expired.
    pub(crate) fn frame_check(&self, now: Instant) -> Verdict {
        let (Some(timeout), Some(started)) = (self.frame, self.frame_started) else {
            return Verdict::Disarm;
        };
        if self.held {
            return Verdict::RearmIn(timeout);
        }
        let elapsed = now.saturating_duration_since(started);
        if elapsed >= timeout {
            Verdict::Expired
        } else {
            Verdict::RearmIn(timeout - elapsed)
        }
    }

    /// The rate window ended with `bytes_in` read so far: `Expired` if too few bytes arrived
    /// in it (and it saw no hold). A new window begins either way.
    pub(crate) fn rate_check(&mut self, bytes_in: u64) -> (Verdict, u64) {
        let Some(rate) = self.rate else {
            return (Verdict::Disarm, 0);
        };
        let received = bytes_in.saturating_sub(self.window_start_bytes);
        let judged = !self.held_in_window;
        self.window_start_bytes = bytes_in;
        self.held_in_window = self.held;
        if judged && received < rate.bytes {
            (Verdict::Expired, received)
        } else {
            (Verdict::RearmIn(rate.window), received)
        }
    }
}

#[cfg(test)]
mod tests;
