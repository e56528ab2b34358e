//! Where an environment's timer thread reads the time.

use super::TimerService;
use parking_lot::Mutex;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The clock of an environment's timers ([`EnvBuilder::clock`](crate::EnvBuilder::clock)).
#[derive(Clone, Debug, Default)]
pub enum Clock {
    /// The system's monotonic clock (`std::time::Instant`).
    #[default]
    System,
    /// Time that moves only when the test says so.
    Manual(ManualClock),
}

/// A clock for deterministic tests: time stands still until [`advance`](Self::advance).
///
/// ```
/// use agentry::{Agent, timer::Clock, Ctx, Define, DefineError, Env, timer::ManualClock};
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// struct Tick;
/// struct Probe(mpsc::Sender<()>);
/// impl Agent for Probe {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|p: &mut Probe, _: &mut Ctx<Probe>, _: Tick| p.0.send(()).expect("test alive"))?;
///         Ok(())
///     }
/// }
///
/// let clock = ManualClock::new();
/// let env = Env::builder().clock(Clock::Manual(clock.clone())).build().expect("env");
/// let (tx, rx) = mpsc::channel();
/// let probe = env.handle().register_agent(Probe(tx)).expect("registered");
/// let timer = env.handle().send_delayed(&probe, Duration::from_secs(60), Tick);
///
/// clock.advance(Duration::from_secs(59));
/// assert!(rx.recv_timeout(Duration::from_millis(50)).is_err()); // not yet
/// clock.advance(Duration::from_secs(1));
/// rx.recv_timeout(Duration::from_secs(10)).expect("delivered at exactly 60 s");
/// # drop(timer);
/// # env.handle().stop();
/// ```
#[derive(Clone, Default)]
pub struct ManualClock(Arc<Mutex<ManualState>>);

#[derive(Default)]
struct ManualState {
    now_ns: u64,
    services: Vec<Weak<TimerService>>,
}

impl ManualClock {
    /// A clock at time zero.
    pub fn new() -> Self {
        ManualClock::default()
    }

    /// The time since the clock was created.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.0.lock().now_ns)
    }

    /// Moves time forward by `by` (zero is allowed), then waits until every environment using
    /// this clock has sent the messages of all timers due by then — sent, that is queued (or
    /// handled by insend handlers), not necessarily handled by their agents yet. A timer
    /// scheduled while time stands still, due at once, is sent at the next `advance`.
    pub fn advance(&self, by: Duration) {
        let (target, services) = {
            let mut state = self.0.lock();
            let by_ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
            state.now_ns = state.now_ns.saturating_add(by_ns);
            state.services.retain(|s| s.strong_count() > 0);
            (state.now_ns, state.services.clone())
        };
        for service in services.iter().filter_map(Weak::upgrade) {
            service.advance_manual(target);
        }
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.0.lock().now_ns
    }

    pub(crate) fn attach(&self, service: Weak<TimerService>) {
        self.0.lock().services.push(service);
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}
