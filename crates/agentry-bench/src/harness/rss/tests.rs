use super::{current_rss_bytes, parse_status_kib, peak_rss_bytes, reset_peak_rss};

#[test]
fn parses_status_lines() {
    let status = "Name:\tbench\nVmPeak:\t  20000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t     999 kB\n";
    assert_eq!(parse_status_kib(status, "VmHWM"), Some(1234));
    assert_eq!(parse_status_kib(status, "VmRSS"), Some(999));
    assert_eq!(parse_status_kib(status, "VmSwap"), None);
    assert_eq!(parse_status_kib("VmHWM: lots kB", "VmHWM"), None);
}

#[cfg(target_os = "linux")]
#[test]
fn peak_grows_with_an_allocation_and_resets() {
    let before = peak_rss_bytes().expect("VmHWM readable on Linux");
    assert!(before > 0);
    assert!(current_rss_bytes().expect("VmRSS readable on Linux") > 0);
    // Current and peak from one reading: two readings race with the other tests' threads
    // (an allocation between them, or a reset of the peak).
    let status = std::fs::read_to_string("/proc/self/status").expect("status readable");
    let (rss, hwm) = (
        parse_status_kib(&status, "VmRSS").expect("VmRSS"),
        parse_status_kib(&status, "VmHWM").expect("VmHWM"),
    );
    assert!(
        rss <= hwm,
        "VmRSS {rss} kB above VmHWM {hwm} kB in one reading"
    );
    let touched = vec![1u8; 64 << 20];
    let peak = peak_rss_bytes().expect("VmHWM readable on Linux");
    assert!(peak >= 64 << 20, "peak {peak} after touching 64 MiB");
    drop(touched);
    if reset_peak_rss().is_ok() {
        // Other tests run in parallel threads and may allocate, so only check it went down.
        let after = peak_rss_bytes().expect("VmHWM readable on Linux");
        assert!(after < peak, "peak {after} not reset below {peak}");
    }
}
