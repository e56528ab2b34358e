//! Panics the soak provokes on purpose: counted where they happen, silenced in the panic
//! hook (any other panic is still printed).

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// The payload of every provoked panic.
pub const PROVOKED: &str = "soak: provoked panic";

/// Counts the provoked panics of one environment.
#[derive(Debug, Default)]
pub struct Provoker {
    count: AtomicU64,
}

impl Provoker {
    /// Counts a panic and raises it.
    pub fn panic(&self) -> ! {
        self.count.fetch_add(1, Ordering::SeqCst);
        std::panic::panic_any(PROVOKED)
    }

    /// Panics provoked so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }
}

/// Installs (once) a panic hook that stays silent for provoked panics.
pub fn quiet_provoked_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&PROVOKED) {
                default(info);
            }
        }));
    });
}
