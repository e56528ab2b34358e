//! The time limits on virtual time: no socket, no clock, no timer.

use super::{Limits, Verdict};
use crate::config::{ChannelConfig, MinRate};
use crate::framing::Framing;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

fn lines(frame_timeout: Option<Duration>) -> ChannelConfig {
    ChannelConfig::default()
        .framing(Framing::Lines)
        .frame_timeout(frame_timeout)
}

#[test]
fn a_frame_trickled_byte_by_byte_expires_at_its_deadline_from_its_first_byte() {
    let t0 = Instant::now();
    let mut limits = Limits::new(&lines(Some(300 * MS)), t0);
    // One byte every 50 ms, never a line end: each read is activity, the frame never ends.
    limits.after_read(0, 1, || t0);
    assert!(limits.frame_running());
    for i in 1..6u32 {
        limits.after_read(0, 1 + i as usize, || t0 + 50 * MS * i);
        assert!(limits.frame_running());
    }
    assert_eq!(limits.frame_check(t0 + 299 * MS), Verdict::RearmIn(MS));
    assert_eq!(limits.frame_check(t0 + 300 * MS), Verdict::Expired);
}

#[test]
fn each_frame_gets_its_own_deadline() {
    let t0 = Instant::now();
    let mut limits = Limits::new(&lines(Some(300 * MS)), t0);
    limits.after_read(0, 3, || t0);
    assert!(limits.frame_running());
    // At 250 ms a read completes that frame and begins the next one.
    limits.after_read(1, 2, || t0 + 250 * MS);
    assert!(limits.frame_running());
    assert_eq!(
        limits.frame_check(t0 + 300 * MS),
        Verdict::RearmIn(250 * MS)
    );
    assert_eq!(limits.frame_check(t0 + 550 * MS), Verdict::Expired);
}

#[test]
fn whole_frames_run_no_clock() {
    let t0 = Instant::now();
    let mut limits = Limits::new(&lines(Some(300 * MS)), t0);
    let mut clock_reads = 0;
    for _ in 0..100 {
        limits.after_read(5, 0, || {
            clock_reads += 1;
            t0
        });
        assert!(!limits.frame_running());
    }
    assert_eq!(
        clock_reads, 0,
        "no frame left unfinished, no idle timeout: no clock"
    );
    assert_eq!(
        limits.frame_check(t0 + Duration::from_secs(60)),
        Verdict::Disarm
    );
    // A frame finished after it was left unfinished stops the clock too.
    limits.after_read(0, 1, || t0);
    assert!(limits.frame_running());
    limits.after_read(1, 0, || t0 + 100 * MS);
    assert!(!limits.frame_running());
    assert_eq!(
        limits.frame_check(t0 + Duration::from_secs(60)),
        Verdict::Disarm
    );
}

#[test]
fn a_raw_channel_has_no_frame_deadline() {
    let t0 = Instant::now();
    let config = ChannelConfig::default().frame_timeout(Some(300 * MS));
    let mut limits = Limits::new(&config, t0);
    assert_eq!(limits.frame_timeout(), None);
    limits.after_read(0, 0, || t0);
    assert!(!limits.frame_running());
    assert_eq!(
        limits.frame_check(t0 + Duration::from_secs(60)),
        Verdict::Disarm
    );
}

#[test]
fn the_frame_clock_is_not_charged_to_the_peer_while_the_channel_holds_reading() {
    let t0 = Instant::now();
    let mut limits = Limits::new(&lines(Some(300 * MS)), t0);
    limits.after_read(0, 1, || t0);
    assert!(limits.frame_running());
    limits.set_held(true, || t0 + 100 * MS);
    assert_eq!(
        limits.frame_check(t0 + 400 * MS),
        Verdict::RearmIn(300 * MS)
    );
    // Reading resumes at 1 s: the frame has the whole timeout again.
    limits.set_held(false, || t0 + Duration::from_secs(1));
    assert_eq!(
        limits.frame_check(t0 + Duration::from_millis(1200)),
        Verdict::RearmIn(100 * MS)
    );
    assert_eq!(
        limits.frame_check(t0 + Duration::from_millis(1300)),
        Verdict::Expired
    );
}

#[test]
fn the_idle_timeout_rearms_for_the_remainder_after_activity() {
    let t0 = Instant::now();
    let config = ChannelConfig::default().idle_timeout(Some(200 * MS));
    let mut limits = Limits::new(&config, t0);
    limits.opened(t0, 0);
    limits.after_read(0, 0, || t0 + 150 * MS);
    assert_eq!(limits.idle_check(t0 + 200 * MS), Verdict::RearmIn(150 * MS));
    limits.sent(t0 + 300 * MS);
    assert_eq!(limits.idle_check(t0 + 350 * MS), Verdict::RearmIn(150 * MS));
    assert_eq!(limits.idle_check(t0 + 500 * MS), Verdict::Expired);
}

#[test]
fn a_window_below_the_minimum_rate_expires_and_one_at_it_does_not() {
    let t0 = Instant::now();
    let rate = MinRate::new(100, 200 * MS);
    let mut limits = Limits::new(&ChannelConfig::default().min_receive_rate(Some(rate)), t0);
    limits.opened(t0, 0);
    assert_eq!(limits.rate_check(100), (Verdict::RearmIn(200 * MS), 100));
    assert_eq!(limits.rate_check(199), (Verdict::Expired, 99));
}

#[test]
fn a_window_that_saw_a_hold_is_not_judged() {
    let t0 = Instant::now();
    let rate = MinRate::new(100, 200 * MS);
    let mut limits = Limits::new(&ChannelConfig::default().min_receive_rate(Some(rate)), t0);
    limits.opened(t0, 0);
    limits.set_held(true, || t0);
    limits.set_held(false, || t0 + 10 * MS);
    assert_eq!(limits.rate_check(0), (Verdict::RearmIn(200 * MS), 0));
    // Held through the next window too.
    limits.set_held(true, || t0 + 250 * MS);
    assert_eq!(limits.rate_check(0), (Verdict::RearmIn(200 * MS), 0));
    // Still held when that window began: not judged either; then a plain window is.
    limits.set_held(false, || t0 + 450 * MS);
    assert_eq!(limits.rate_check(0), (Verdict::RearmIn(200 * MS), 0));
    assert_eq!(limits.rate_check(5), (Verdict::Expired, 5));
}

#[test]
fn limits_not_configured_never_expire() {
    let t0 = Instant::now();
    let config = ChannelConfig::default()
        .framing(Framing::LengthPrefixed)
        .frame_timeout(None);
    let mut limits = Limits::new(&config, t0);
    limits.after_read(0, 3, || t0);
    assert!(!limits.frame_running());
    let later = t0 + Duration::from_secs(3600);
    assert_eq!(limits.idle_check(later), Verdict::Disarm);
    assert_eq!(limits.frame_check(later), Verdict::Disarm);
    assert_eq!(limits.rate_check(0), (Verdict::Disarm, 0));
}
