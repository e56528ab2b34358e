//! The allocator settings of the benchmark process.
//!
//! glibc malloc gives freed memory back to the kernel eagerly: blocks above the mmap
//! threshold are unmapped on free, and the top of a heap is trimmed. A benchmark repetition
//! that queues a million messages would then pay the kernel's first-touch page zeroing on
//! every repetition — tens of milliseconds that measure the kernel, not the runtime. The
//! harness therefore raises both thresholds once at start, so memory freed by one repetition
//! is reused by the next: the warm-up repetition pays first-touch costs once, as a
//! long-running server does. The header of every report says so.

use std::sync::OnceLock;

static NOTE: OnceLock<&'static str> = OnceLock::new();

/// Raises glibc's trim and mmap thresholds to 1 GiB (no-op elsewhere). Call once, first
/// thing in `main`, before any other thread exists.
#[allow(unsafe_code)]
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const ONE_GIB: libc::c_int = 1 << 30;
        // SAFETY: `mallopt` only changes malloc's tuning parameters; called at start-up, before
        // other threads allocate, with valid parameter codes for glibc.
        let ok = unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, ONE_GIB) == 1
                && libc::mallopt(libc::M_MMAP_THRESHOLD, ONE_GIB) == 1
        };
        let _ = NOTE.set(if ok {
            "glibc malloc, trim/mmap thresholds 1 GiB (freed memory is reused across repetitions)"
        } else {
            "glibc malloc, defaults (mallopt refused)"
        });
    }
}

/// What [`keep_freed_memory`] did, for the report header.
pub fn note() -> Option<&'static str> {
    NOTE.get().copied()
}

/// Returns the memory the allocator keeps to the kernel (before a case that measures peak
/// RSS, so that memory kept for earlier benchmarks does not count as its own).
#[allow(unsafe_code)]
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory back to the kernel; always safe to call.
    unsafe {
        libc::malloc_trim(0);
    }
}
