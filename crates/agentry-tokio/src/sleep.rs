//! [`sleep`]: a future that waits on agentry's clock — the environment's timer service — so
//! that on a `agentry::testing::TestEnv` it waits on virtual time.
//!
//! # Ground rules
//!
//! The sleep is an agentry timer that sends one message to a private chain; the future awaits
//! the chain ([`agentry::mchain::Recv`]). Inside a [`Tasks`](crate::Tasks) future it counts as
//! `waiting_on_clock` from the poll that left its waker in the chain (not from its creation:
//! a timer that fires before that poll must not look like a parked future) until the timer
//! fires: the count drops in the wake-up itself (on the timer's thread), before the future
//! runs again, so [`TaskProbe::settle`](crate::TaskProbe::settle) after moving virtual time
//! waits for the woken futures. Dropping the sleep cancels its timer.

use crate::probe::Shared;
use crate::tasks::SCOPE;
use agentry::mchain::Recv;
use agentry::{EnvHandle, mchain::Mchain, timer::TimerHandle};
use parking_lot::Mutex;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Waits `delay` on the clock of the environment behind `env` (its timer service: real time
/// in an `Env`, virtual time in a `TestEnv`). A tokio sleep, by contrast, always waits in
/// real time.
///
/// If the environment stops before the timer fires, the sleep never ends (its task is
/// aborted with its agent, or by its owner).
pub fn sleep(env: &EnvHandle, delay: Duration) -> Sleep {
    let chain = Mchain::unbounded();
    let timer = env.send_delayed(&chain, delay, Elapsed);
    let park = SCOPE.try_with(|shared| {
        Arc::new(Park {
            shared: Arc::clone(shared),
            state: AtomicU8::new(IDLE),
            task: Mutex::new(None),
        })
    });
    Sleep {
        recv: chain.recv_future(),
        _timer: timer,
        park: park.ok(),
    }
}

/// The timer's message.
struct Elapsed;

/// The future of [`sleep`].
#[must_use = "a Sleep does nothing unless awaited"]
pub struct Sleep {
    recv: Recv,
    _timer: TimerHandle,
    park: Option<Arc<Park>>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let ready = match self.park.clone() {
            Some(park) => {
                *park.task.lock() = Some(cx.waker().clone());
                let waker = Waker::from(Arc::clone(&park));
                let ready = Pin::new(&mut self.recv)
                    .poll(&mut Context::from_waker(&waker))
                    .is_ready();
                if ready {
                    park.fire();
                } else {
                    park.count();
                }
                ready
            }
            None => Pin::new(&mut self.recv).poll(cx).is_ready(),
        };
        // The chain is private and never closed: ready means the timer's message came.
        if ready {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(park) = &self.park {
            park.fire();
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep").finish_non_exhaustive()
    }
}

/// Not counted yet (created, or polled without registering).
const IDLE: u8 = 0;
/// Registered in the chain, counted in `waiting_on_clock`.
const COUNTED: u8 = 1;
/// Woken (or dropped): never counted again.
const FIRED: u8 = 2;

/// The waker a counted sleep gives its chain: the wake-up uncounts the sleep, then wakes the
/// task. The state moves under the scope's counters' lock, so a wake racing the count
/// between the registration and `count` leaves the sleep uncounted (`FIRED` first).
struct Park {
    shared: Arc<Shared>,
    state: AtomicU8,
    task: Mutex<Option<Waker>>,
}

impl Park {
    /// Counts the sleep as waiting, once, unless it already fired.
    fn count(&self) {
        self.shared.update(|c| {
            if self
                .state
                .compare_exchange(IDLE, COUNTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                c.waiting_on_clock += 1;
            }
        });
    }

    /// The timer fired (or the sleep is dropped): uncounts it if it was counted.
    fn fire(&self) {
        self.shared.update(|c| {
            if self.state.swap(FIRED, Ordering::AcqRel) == COUNTED {
                c.waiting_on_clock -= 1;
            }
        });
    }
}

impl Wake for Park {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fire();
        if let Some(task) = self.task.lock().take() {
            task.wake();
        }
    }
}
