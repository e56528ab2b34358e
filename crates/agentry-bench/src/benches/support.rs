//! What the agentry benchmarks share: building an environment, placing agents on
//! dispatchers, and cells in which agents record timings for the runner to read after
//! `Env::run` returns.

use crate::harness::BenchError;
use agentry::disp::OneThreadDispatcher;
use agentry::disp::ThreadPoolDispatcher;
use agentry::disp::{ActiveGroupDispatcher, ActiveObjDispatcher, Binder};
use agentry::{Env, EnvHandle};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The CPU time all the process's threads used over a workload's timed window, read where
/// the window's own clock starts and stops (`/proc/self/task/*/schedstat`, as `idle` reads
/// it). Unlike the wall time it does not grow while other processes hold the CPU, so A/B
/// ratios of it hold on a loaded machine (`observability`). Its grain is coarse where the
/// reading thread ran without a break: the kernel adds a running thread's time at scheduler
/// ticks (4 ms on the project's VM), so a window of tens of milliseconds is read to within a
/// tick — medians over repetitions, and longer windows, smooth it. Off by default: nothing is
/// read.
#[derive(Clone, Default)]
pub(crate) struct CpuClock(Option<Arc<Mutex<CpuWindow>>>);

#[derive(Default)]
struct CpuWindow {
    start: Option<Duration>,
    used: Option<Result<Duration, String>>,
}

impl CpuClock {
    /// A clock that measures.
    pub(crate) fn on() -> CpuClock {
        CpuClock(Some(Arc::default()))
    }

    fn window(&self) -> Option<std::sync::MutexGuard<'_, CpuWindow>> {
        let w = self.0.as_ref()?;
        Some(w.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The window opens (where the workload's clock starts).
    pub(crate) fn start(&self) {
        if let Some(mut w) = self.window() {
            match super::idle::process_cpu_time() {
                Ok(now) => w.start = Some(now),
                Err(e) => w.used = Some(Err(e.to_string())),
            }
        }
    }

    /// The window closes (where the workload's clock stops).
    pub(crate) fn stop(&self) {
        if let Some(mut w) = self.window() {
            let used = match (w.start, super::idle::process_cpu_time()) {
                (Some(start), Ok(now)) => Ok(now.saturating_sub(start)),
                (None, _) => Err("the CPU window was closed before it was opened".to_owned()),
                (_, Err(e)) => Err(e.to_string()),
            };
            w.used.get_or_insert(used);
        }
    }

    /// The CPU time of the window (`None` when off); fails if it was not opened and closed.
    pub(crate) fn used(&self) -> Result<Option<Duration>, BenchError> {
        let Some(w) = self.window() else {
            return Ok(None);
        };
        match &w.used {
            Some(Ok(d)) => Ok(Some(*d)),
            Some(Err(e)) => Err(BenchError::Harness(format!("CPU time: {e}"))),
            None => Err(BenchError::Harness(
                "the CPU window was never closed".to_owned(),
            )),
        }
    }
}

/// A fresh environment with the default settings (one `one_thread` dispatcher).
pub(crate) fn env() -> Result<Env, BenchError> {
    Env::new().map_err(|e| BenchError::Harness(format!("cannot build the environment: {e}")))
}

/// Turns a setup error into a harness error.
pub(crate) fn setup<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> BenchError {
    move |e| BenchError::Harness(format!("{what}: {e}"))
}

/// Durations recorded by agents, read by the runner once the environment has stopped.
#[derive(Clone, Default)]
pub(crate) struct Timings(Arc<Mutex<Vec<Duration>>>);

impl Timings {
    pub(crate) fn record(&self, d: Duration) {
        self.0
            .lock()
            .expect("invariant: no panic while holding the timings lock")
            .push(d);
    }

    /// The recorded durations; fails unless exactly `expected` were recorded.
    pub(crate) fn take(&self, expected: usize) -> Result<Vec<Duration>, BenchError> {
        let v = std::mem::take(&mut *self.0.lock().expect("invariant: lock not poisoned"));
        if v.len() == expected {
            Ok(v)
        } else {
            Err(BenchError::Verify(format!(
                "expected {expected} timings, the agents recorded {}",
                v.len()
            )))
        }
    }
}

/// Runs the environment to completion and returns its handle's final stats reader.
pub(crate) fn run(env: Env) -> EnvHandle {
    let handle = env.handle().clone();
    env.run();
    handle
}

/// The two timed phases of a send-then-process workload (`send_process`, `state_change`,
/// `event_priority`): the agent times its sends in `on_start`, then the processing up to its
/// last message; the runner reads both from its clone once the environment has stopped.
#[derive(Clone, Default)]
pub(crate) struct SendThenProcess {
    timings: Timings,
    /// When the sends ended (the agent's copy only).
    process_start: Option<Instant>,
    /// The CPU time of the processing, if measured.
    cpu: CpuClock,
}

impl SendThenProcess {
    /// Runs the agent's sends and records how long they took; processing starts now.
    pub(crate) fn send(&mut self, sends: impl FnOnce()) {
        let start = Instant::now();
        sends();
        let sent = Instant::now();
        self.timings.record(sent - start);
        self.process_start = Some(sent);
        self.cpu.start();
    }

    /// The last message was handled: records the processing time.
    pub(crate) fn processed(&self) {
        let start = self
            .process_start
            .expect("invariant: the sends were timed in on_start");
        self.timings.record(start.elapsed());
        self.cpu.stop();
    }

    /// A clock whose processing phase is also measured in CPU time (by `cpu`).
    pub(crate) fn with_cpu(cpu: CpuClock) -> SendThenProcess {
        SendThenProcess {
            cpu,
            ..SendThenProcess::default()
        }
    }

    /// The runner's side: the send and process durations.
    pub(crate) fn take(&self) -> Result<(Duration, Duration), BenchError> {
        let t = self.timings.take(2)?;
        Ok((t[0], t[1]))
    }
}

/// A number recorded by agents (a count, a sum, a state index), read by the runner.
#[derive(Clone, Default)]
pub(crate) struct Tally(Arc<std::sync::atomic::AtomicU64>);

impl Tally {
    pub(crate) fn add(&self, v: u64) {
        self.0.fetch_add(v, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn set(&self, v: u64) {
        self.0.store(v, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Where a benchmark's agents run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The environment's default `one_thread` dispatcher.
    OneThread,
    /// An `active_obj` dispatcher: a thread per agent.
    ActiveObj,
    /// An `active_group` dispatcher with this many groups; agent `i` of `n` is in group
    /// `i * groups / n` (contiguous segments of the agents).
    ActiveGroup(u64),
    /// A `thread_pool` dispatcher with this many threads.
    ThreadPool(usize),
    /// This many `one_thread` dispatchers; agent `i` is on dispatcher `i % count`.
    Dispatchers(usize),
}

impl Placement {
    /// The dispatcher label of the cases using it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::OneThread | Self::Dispatchers(_) => "one_thread",
            Self::ActiveObj => "active_obj",
            Self::ActiveGroup(_) => "active_group",
            Self::ThreadPool(_) => "thread_pool",
        }
    }

    /// Worker threads serving `agents` agents.
    pub(crate) fn threads(self, agents: u64) -> usize {
        let threads = match self {
            Self::OneThread => 1,
            Self::ActiveObj => agents,
            Self::ActiveGroup(groups) => groups.min(agents),
            Self::ThreadPool(threads) | Self::Dispatchers(threads) => threads as u64,
        };
        usize::try_from(threads).unwrap_or(usize::MAX)
    }

    /// Creates the dispatchers in `env` and returns the binders of its agents.
    pub(crate) fn binders(self, env: &EnvHandle) -> Result<Binders, BenchError> {
        let (binders, contiguous) = match self {
            Self::OneThread => (vec![env.default_binder()], false),
            Self::ActiveObj => (
                vec![
                    ActiveObjDispatcher::new(env, "active_obj")
                        .map_err(setup("make the active_obj dispatcher"))?
                        .binder(),
                ],
                false,
            ),
            Self::ActiveGroup(groups) => {
                let dispatcher = ActiveGroupDispatcher::new(env, "active_group")
                    .map_err(setup("make the active_group dispatcher"))?;
                let binders = (0..groups)
                    .map(|g| dispatcher.binder(&format!("group-{g}")))
                    .collect();
                (binders, true)
            }
            Self::ThreadPool(threads) => {
                let pool = ThreadPoolDispatcher::builder("pool")
                    .threads(threads)
                    .build(env)
                    .map_err(setup("build the thread pool"))?;
                (vec![pool.binder()], false)
            }
            Self::Dispatchers(count) => {
                let binders = (0..count)
                    .map(|i| {
                        OneThreadDispatcher::new(env, format!("one_thread-{i}"))
                            .map(|d| d.binder())
                            .map_err(setup("start a one_thread dispatcher"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (binders, false)
            }
        };
        Ok(Binders {
            binders,
            contiguous,
        })
    }
}

/// The binders of a [`Placement`], handed out per agent.
pub(crate) struct Binders {
    binders: Vec<Binder>,
    /// Agents go to binders in contiguous segments rather than round-robin.
    contiguous: bool,
}

impl Binders {
    /// The binder of agent `index` among `agents`.
    pub(crate) fn of(&self, index: u64, agents: u64) -> &Binder {
        let count = self.binders.len() as u64;
        let slot = if self.contiguous {
            index * count / agents.max(1)
        } else {
            index % count
        };
        &self.binders[slot as usize]
    }
}

/// The end of a workload made of `count` independent parts (tokens, message chains): the
/// agent that finishes the last part records the time since [`start`](Self::start).
pub(crate) struct Finish {
    left: AtomicU64,
    start: OnceLock<Instant>,
    timings: Timings,
    /// The CPU time over the same window, if measured.
    cpu: CpuClock,
}

impl Finish {
    pub(crate) fn new(count: u64) -> Arc<Self> {
        Self::with_cpu(count, CpuClock::default())
    }

    /// A finish that also measures the CPU time of its window with `cpu`.
    pub(crate) fn with_cpu(count: u64, cpu: CpuClock) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicU64::new(count),
            start: OnceLock::new(),
            timings: Timings::default(),
            cpu,
        })
    }

    /// Starts the clock (once, before the first part is injected).
    pub(crate) fn start(&self) -> Result<(), BenchError> {
        self.cpu.start();
        self.start
            .set(Instant::now())
            .map_err(|_| BenchError::Harness("the clock was started twice".to_owned()))
    }

    /// One part is done; true (and the time recorded) if it was the last.
    pub(crate) fn arrive(&self) -> bool {
        let last = self.left.fetch_sub(1, Ordering::AcqRel) == 1;
        if last {
            let start = self
                .start
                .get()
                .expect("invariant: started before injection");
            self.timings.record(start.elapsed());
            self.cpu.stop();
        }
        last
    }

    /// The time from start to the last part; fails unless every part arrived exactly once.
    pub(crate) fn elapsed(&self) -> Result<Duration, BenchError> {
        Ok(self.timings.take(1)?[0])
    }
}
