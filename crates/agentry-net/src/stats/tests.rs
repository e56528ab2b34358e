//! Every close reason has its own counter, and a close is counted once.

use super::{Counters, NetStats};
use crate::config::MinRate;
use crate::messages::CloseReason;
use std::io;
use std::time::Duration;

/// One reason of each kind.
fn one_of_each() -> Vec<CloseReason> {
    vec![
        CloseReason::PeerClosed,
        CloseReason::PeerClosedMidFrame { partial: 3 },
        CloseReason::Error(io::ErrorKind::ConnectionReset),
        CloseReason::IdleTimeout,
        CloseReason::FrameTooBig { size: 9, max: 8 },
        CloseReason::WriteOverflow {
            buffered: 9,
            max: 8,
        },
        CloseReason::ByOwner,
        CloseReason::Shutdown,
        CloseReason::FrameTimeout { partial: 1 },
        CloseReason::BelowMinRate {
            received: 1,
            min: MinRate::new(2, Duration::from_secs(1)),
        },
        CloseReason::LifetimeExceeded,
    ]
}

#[test]
fn every_close_reason_is_counted_once_under_its_own_counter() {
    let reasons = one_of_each();
    assert_eq!(reasons.len(), CloseReason::KINDS);
    for (i, reason) in reasons.iter().enumerate() {
        assert_eq!(reason.kind_index(), i);
        let counters = Counters::default();
        counters.closed(reason);
        let mut stats = NetStats::default();
        counters.add_to(&mut stats);
        assert_eq!(stats.closed(), 1, "{reason:?}");
        for other in &reasons {
            let expected = u64::from(other.kind_index() == i);
            assert_eq!(
                stats.closed_for(other),
                expected,
                "{reason:?} seen as {other:?}"
            );
        }
    }
}
