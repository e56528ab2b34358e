//! Reconnection backoff, the one rule both transports follow (NATS through async-nats'
//! reconnect callback, the link's connecting side between dials): `min`, doubled per failed
//! attempt, at most `max`.

use std::time::Duration;

/// The wait before reconnection attempt `attempt` (0 = the first retry).
pub(crate) fn backoff(attempt: usize, (min, max): (Duration, Duration)) -> Duration {
    let shift = u32::try_from(attempt.min(20)).unwrap_or(20);
    min.saturating_mul(1u32 << shift).min(max)
}

#[cfg(test)]
mod tests;
