//! A waiting receiver: registered in every chain it waits on, woken by the first push or
//! close among them. A thread waits on the condition variable; a task ([`super::Recv`])
//! leaves its waker.

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::task::Waker;
use std::time::Instant;

/// One receiver's wake-up flag (sticky: a wake before the wait is not lost).
#[derive(Default)]
pub(super) struct Waiter {
    woken: Mutex<bool>,
    cv: Condvar,
    task: Mutex<Option<Waker>>,
}

impl Waiter {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Waiter::default())
    }

    /// Wakes the receiver (called by a chain after a push or a close).
    pub(super) fn wake(&self) {
        *self.woken.lock() = true;
        self.cv.notify_one();
        if let Some(waker) = self.task.lock().take() {
            waker.wake();
        }
    }

    /// Sets the waker of the task waiting (replacing an earlier poll's).
    pub(super) fn set_task(&self, waker: &Waker) {
        let mut task = self.task.lock();
        if !task.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *task = Some(waker.clone());
        }
    }

    /// Waits until woken or `deadline` (`None`: no deadline); false if the deadline passed
    /// first. Clears the flag.
    pub(super) fn wait(&self, deadline: Option<Instant>) -> bool {
        crate::disp::before_blocking();
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
