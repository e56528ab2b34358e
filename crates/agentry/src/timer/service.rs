//! The timer service of one environment: the engine, and the thread that sends due messages.
//!
//! # Ground rules
//!
//! - The timer thread is started by the first timer scheduled, not with the environment: an
//!   environment whose agents use no timer runs no timer thread. Hence a scheduled timer
//!   implies a started thread, and while none is started the engine is empty: a manual
//!   clock's advance then has nothing to send and returns at once.
//! - If the thread cannot be spawned (the process is out of threads or memory), scheduling
//!   panics with the reason, as `std::thread::spawn` does: the timer could never be served.
//! - `shut_down` stops the thread (what is still scheduled is dropped and counted) and
//!   `join` waits for it; a timer scheduled after the shutdown is revoked at once and
//!   counted, and starts no thread.

use super::TimerHandle;
use super::clock::Clock;
use super::token::TimerToken;
use crate::stats::EnvCounters;
use crate::trace::context::Propagation;
use crate::trace::{TraceContext, with_trace_context};
use agentry_timer::{AnyEngine, EngineKind, TimerEngine, TimerKey};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Sends a timer's message; called by the timer thread, outside the engine's lock.
pub(crate) type FireFn = Box<dyn FnMut(&Arc<TimerToken>) + Send>;

/// Where a scheduled timer currently sits in the engine.
struct Placement {
    key: Option<TimerKey>,
    deadline: u64,
}

/// One scheduled timer.
pub(crate) struct TimerShared {
    pub(crate) token: Arc<TimerToken>,
    placement: Mutex<Placement>,
    period: Option<u64>,
    fire: Mutex<FireFn>,
    /// The trace context current when it was scheduled, carried by each of its messages
    /// (`trace/context.rs`; only with a hook).
    context: Option<TraceContext>,
}

struct Core {
    engine: AnyEngine<Arc<TimerShared>>,
    shutdown: bool,
    /// The timer thread, once the first timer started it (ground rules); `None` again once
    /// joined.
    thread: Option<JoinHandle<()>>,
    /// The thread was started (it stays true once joined).
    started: bool,
    /// Manual clock: the time to catch up to; how many advances were requested and how many
    /// the timer thread has fully served (sent every message due by then).
    manual_target: u64,
    advances_requested: u64,
    advances_served: u64,
}

/// The timers of one environment.
pub(crate) struct TimerService {
    core: Mutex<Core>,
    /// The timer thread waits here for an earlier deadline, a manual advance or shutdown.
    wake: Condvar,
    /// `ManualClock::advance` waits here until the due timers were sent.
    caught_up: Condvar,
    origin: Instant,
    clock: Clock,
    counters: Arc<EnvCounters>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl TimerService {
    pub(crate) fn new(kind: EngineKind, clock: Clock, counters: Arc<EnvCounters>) -> Arc<Self> {
        let service = Arc::new(TimerService {
            core: Mutex::new(Core {
                engine: AnyEngine::new(kind),
                shutdown: false,
                thread: None,
                started: false,
                manual_target: 0,
                advances_requested: 0,
                advances_served: 0,
            }),
            wake: Condvar::new(),
            caught_up: Condvar::new(),
            origin: Instant::now(),
            clock: clock.clone(),
            counters,
        });
        if let Clock::Manual(manual) = &clock {
            service.core.lock().manual_target = manual.now_ns();
            manual.attach(Arc::downgrade(&service));
        }
        service
    }

    fn time_of(&self, core: &Core) -> u64 {
        match &self.clock {
            Clock::System => nanos(self.origin.elapsed()),
            Clock::Manual(_) => core.manual_target,
        }
    }

    /// Schedules `fire` after `delay`, then every `period` if given.
    pub(crate) fn schedule(
        self: &Arc<Self>,
        delay: Duration,
        period: Option<Duration>,
        fire: FireFn,
    ) -> TimerHandle {
        let timer = Arc::new(TimerShared {
            token: Arc::new(TimerToken::default()),
            placement: Mutex::new(Placement {
                key: None,
                deadline: 0,
            }),
            period: period.map(|p| nanos(p).max(1)),
            fire: Mutex::new(fire),
            context: self
                .counters
                .propagation
                .as_ref()
                .and_then(Propagation::current),
        });
        let mut core = self.core.lock();
        if core.shutdown {
            // The environment has stopped: the message will never be sent.
            self.counters
                .dropped_on_shutdown
                .fetch_add(1, Ordering::Relaxed);
            timer.token.revoke();
        } else {
            self.start_thread(&mut core);
            let deadline = self.time_of(&core).saturating_add(nanos(delay));
            let earliest = core.engine.next_deadline();
            let key = core.engine.insert(deadline, Arc::clone(&timer));
            *timer.placement.lock() = Placement {
                key: Some(key),
                deadline,
            };
            if earliest.is_none_or(|e| deadline < e) {
                self.wake.notify_one();
            }
        }
        drop(core);
        TimerHandle::new(timer, Arc::downgrade(self))
    }

    /// Starts the timer thread unless it runs already (ground rules). The thread waits for
    /// `core`'s lock, held by the caller, before it looks at the engine.
    fn start_thread(self: &Arc<Self>, core: &mut Core) {
        if core.started {
            return;
        }
        let service = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("agentry-timer".into())
            .spawn(move || service.run())
            .unwrap_or_else(|e| panic!("agentry: cannot start the timer thread: {e}"));
        core.thread = Some(thread);
        core.started = true;
    }

    /// Removes a cancelled timer from the engine.
    pub(crate) fn unschedule(&self, timer: &Arc<TimerShared>) {
        let mut core = self.core.lock();
        if let Some(key) = timer.placement.lock().key.take() {
            core.engine.cancel(key);
        }
    }

    /// The time (on the service's clock, in nanoseconds) at which the next timer may come
    /// due: never later than the earliest deadline (the testing kit moves a manual clock from
    /// one such time to the next).
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.core.lock().engine.next_deadline()
    }

    /// The time on the service's clock, in nanoseconds (a manual clock's current time).
    pub(crate) fn now_ns(&self) -> u64 {
        let core = self.core.lock();
        self.time_of(&core)
    }

    /// Number of timers scheduled.
    pub(crate) fn len(&self) -> usize {
        self.core.lock().engine.len()
    }

    /// Called by `ManualClock::advance`: sends everything due by `target`, then returns.
    pub(crate) fn advance_manual(&self, target: u64) {
        let mut core = self.core.lock();
        core.manual_target = core.manual_target.max(target);
        core.advances_requested += 1;
        let mine = core.advances_requested;
        if !core.started {
            // No timer was ever scheduled: nothing can be due (ground rules).
            core.advances_served = mine;
            return;
        }
        self.wake.notify_all();
        while core.advances_served < mine && !core.shutdown {
            self.caught_up.wait(&mut core);
        }
    }

    /// Stops the timer thread; timers still scheduled are dropped and counted.
    pub(crate) fn shut_down(&self) {
        let mut core = self.core.lock();
        core.shutdown = true;
        self.wake.notify_all();
        self.caught_up.notify_all();
    }

    /// Waits for the timer thread to end (after [`shut_down`](Self::shut_down)), if it was
    /// started. False if it panicked.
    pub(crate) fn join(&self) -> bool {
        let thread = self.core.lock().thread.take();
        thread.is_none_or(|t| t.join().is_ok())
    }

    /// The timer thread.
    pub(crate) fn run(self: Arc<Self>) {
        let mut due: Vec<(TimerKey, Arc<TimerShared>)> = Vec::new();
        let mut core = self.core.lock();
        while !core.shutdown {
            let now = self.time_of(&core);
            core.engine.expire(now, &mut due);
            if due.is_empty() {
                self.sleep(&mut core, now);
                continue;
            }
            for (_, timer) in &due {
                let mut placement = timer.placement.lock();
                placement.key = None;
                match timer.period {
                    // Fixed rate: missed periods come due at once and are sent in a burst.
                    Some(period) if timer.token.may_deliver() => {
                        placement.deadline = placement.deadline.saturating_add(period);
                        placement.key =
                            Some(core.engine.insert(placement.deadline, Arc::clone(timer)));
                    }
                    Some(_) => {}
                    None => timer.token.mark_fired(),
                }
            }
            parking_lot::MutexGuard::unlocked(&mut core, || {
                for (_, timer) in due.drain(..) {
                    if timer.token.may_deliver() {
                        let mut fire = timer.fire.lock();
                        match timer.context {
                            None => fire(&timer.token),
                            context => with_trace_context(context, || fire(&timer.token)),
                        }
                    }
                }
            });
        }
        let mut left = Vec::new();
        core.engine.drain(&mut left);
        self.counters
            .dropped_on_shutdown
            .fetch_add(left.len() as u64, Ordering::Relaxed);
        drop(core);
        for (_, timer) in left {
            timer.token.revoke();
        }
    }

    /// Waits for the next deadline, an earlier timer, a manual advance or shutdown.
    fn sleep(&self, core: &mut parking_lot::MutexGuard<'_, Core>, now: u64) {
        match &self.clock {
            Clock::Manual(_) => {
                // Everything due by `now` is sent: every advance requested so far is served
                // (one requested meanwhile moved `manual_target` past `now`: loop again).
                if core.manual_target == now {
                    core.advances_served = core.advances_requested;
                    self.caught_up.notify_all();
                    if !core.shutdown {
                        self.wake.wait(core);
                    }
                }
            }
            Clock::System => match core.engine.next_deadline() {
                Some(deadline) => {
                    let at = self.origin + Duration::from_nanos(deadline);
                    self.wake.wait_until(core, at);
                }
                None => self.wake.wait(core),
            },
        }
    }
}
