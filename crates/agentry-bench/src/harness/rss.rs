//! Peak resident set size of this process (Linux `/proc`), for the cases where memory is in
//! scope (`skynet`).
//!
//! The kernel keeps the high-water mark in `VmHWM` of `/proc/self/status`; writing `5` to
//! `/proc/self/clear_refs` resets it to the current RSS (Linux ≥ 4.0), so each repetition
//! measures its own peak. Elsewhere every function returns an `Unsupported` error.

use std::io;

/// The peak resident set size (`VmHWM`) in bytes.
///
/// # Errors
/// When `/proc/self/status` cannot be read or has no `VmHWM` line.
pub fn peak_rss_bytes() -> io::Result<u64> {
    status_field_bytes("VmHWM")
}

/// The current resident set size (`VmRSS`) in bytes.
///
/// # Errors
/// When `/proc/self/status` cannot be read or has no `VmRSS` line.
pub fn current_rss_bytes() -> io::Result<u64> {
    status_field_bytes("VmRSS")
}

/// Resets the peak RSS to the current RSS.
///
/// # Errors
/// When `/proc/self/clear_refs` cannot be written (not Linux, or a kernel that refuses it).
pub fn reset_peak_rss() -> io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

fn status_field_bytes(key: &str) -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_status_kib(&status, key)
        .map(|kib| kib * 1024)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!("no {key} in /proc/self/status"),
            )
        })
}

/// The value in KiB of a `Key:   1234 kB` line of `/proc/<pid>/status`.
pub(crate) fn parse_status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        let mut words = rest.split_whitespace();
        let value = words.next()?.parse().ok()?;
        (words.next() == Some("kB")).then_some(value)
    })
}

#[cfg(test)]
mod tests;
