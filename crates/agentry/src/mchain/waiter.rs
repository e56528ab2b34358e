//! A waiting receiver: registered in every chain it waits on, woken by the first push or
//! close among them.

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::time::Instant;

/// One receiver's wake-up flag (sticky: a wake before the wait is not lost).
#[derive(Default)]
pub(super) struct Waiter {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Waiter {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Waiter::default())
    }

    /// Wakes the receiver (called by a chain after a push or a close).
    pub(super) fn wake(&self) {
        *self.woken.lock() = true;
        self.cv.notify_one();
    }

    /// Waits until woken or `deadline` (`None`: no deadline); false if the deadline passed
    /// first. Clears the flag.
    pub(super) fn wait(&self, deadline: Option<Instant>) -> bool {
        crate::disp::thread_pool::before_blocking();
        let mut woken = self.woken.lock();
        while !*woken {
            match deadline {
                Some(d) => {
                    if self.cv.wait_until(&mut woken, d).timed_out() {
                        break;
                    }
                }
                None => self.cv.wait(&mut woken),
            }
        }
        std::mem::replace(&mut *woken, false)
    }
}
