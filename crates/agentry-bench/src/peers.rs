//! The peer frameworks of `compare` (feature `peers`): the five workloads on actix 0.13,
//! ractor 0.16 and kameo 0.22, one module per framework.
//!
//! # Ground rules
//! 1. Same semantics as agentry's workloads (`crate::compare::Workload`): the same message
//!    flow, the same parameters, the same xorshift generator seeded by actor index for `ttl`.
//!    Each actor counts what it handled; after the timed part the counts are collected by
//!    asking every actor (untimed) and verified, as is the skynet sum and the fan-in sum.
//! 2. Defaults first: each framework's usual spawn and send calls, its default runtime;
//!    what had to change is in `Impl::notes` and printed with the results.
//! 3. The clock runs from the first injected message (every actor spawned and wired) to the
//!    moment the actor finishing the last part (token, message chain, pong, root sum, last
//!    fan-in message) arrives at the run's [`Countdown`]; the waiting task only wakes up
//!    after that.
//! 4. A send that fails fails the run at once, and a run that has not finished after
//!    [`DEADLINE`] fails: a peer that deadlocks must not hang the comparison.

pub(crate) mod actix;
pub(crate) mod kameo;
pub(crate) mod ractor;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::benches::fan_in::fan_in_sum;
use crate::benches::support::Finish;
use crate::compare::Runtime;
use crate::harness::{BenchError, verify_eq};

/// How long a run may take before it fails (rule 4).
const DEADLINE: Duration = Duration::from_secs(120);

/// The end of a run made of `count` parts (rule 3), awaited by the task driving it.
pub(crate) struct Countdown {
    finish: Arc<Finish>,
    failure: OnceLock<String>,
    done: tokio::sync::Notify,
}

impl Countdown {
    pub(crate) fn new(count: u64) -> Arc<Self> {
        Arc::new(Self {
            finish: Finish::new(count),
            failure: OnceLock::new(),
            done: tokio::sync::Notify::new(),
        })
    }

    /// Starts the clock, just before the first message is injected.
    pub(crate) fn start(&self) -> Result<(), BenchError> {
        self.finish.start()
    }

    /// One part is done.
    pub(crate) fn arrive(&self) {
        if self.finish.arrive() {
            self.done.notify_one();
        }
    }

    /// The run cannot finish: `what` went wrong (the first failure is kept).
    pub(crate) fn fail(&self, what: impl Into<String>) {
        let _first = self.failure.set(what.into());
        self.done.notify_one();
    }

    /// Waits for the last part; the time from start to it.
    pub(crate) async fn wait(&self) -> Result<Duration, BenchError> {
        let finished = tokio::time::timeout(DEADLINE, self.done.notified()).await;
        if let Some(failure) = self.failure.get() {
            return Err(BenchError::Verify(failure.clone()));
        }
        finished.map_err(|_| BenchError::Verify(format!("did not finish within {DEADLINE:?}")))?;
        self.finish.elapsed()
    }
}

/// The tokio runtime under ractor and kameo: `current_thread`, or the default multi-thread
/// runtime (a worker per core).
pub(crate) fn tokio_runtime(runtime: Runtime) -> Result<tokio::runtime::Runtime, BenchError> {
    let mut builder = match runtime {
        Runtime::Single => tokio::runtime::Builder::new_current_thread(),
        Runtime::Multi => tokio::runtime::Builder::new_multi_thread(),
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| BenchError::Harness(format!("cannot build the tokio runtime: {e}")))
}

/// Turns a framework error met while setting up or querying a run into a harness error.
pub(crate) fn peer_error<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> BenchError {
    move |e| BenchError::Harness(format!("{what}: {e}"))
}

/// The sum a skynet root must compute for `depth`: every leaf number once.
pub(crate) fn skynet_sum(depth: u32) -> u64 {
    let leaves = 10u64.pow(depth);
    leaves * (leaves - 1) / 2
}

/// The timed part of a fan-in run and its checks: `senders` threads, released together, each
/// sends `per_sender` messages through its own `sender()` (the values `0..per_sender`); then
/// the threads are joined and what the sink counted and summed (`result`: messages, sum) is
/// verified.
pub(crate) async fn drive_fan_in<F>(
    (senders, per_sender): (u64, u64),
    countdown: &Countdown,
    result: &(AtomicU64, AtomicU64),
    sender: impl Fn() -> F,
) -> Result<Duration, BenchError>
where
    F: FnMut(u64) + Send + 'static,
{
    let release = Arc::new(std::sync::Barrier::new(senders as usize + 1));
    let threads = (0..senders)
        .map(|i| {
            let (mut send, release) = (sender(), Arc::clone(&release));
            std::thread::Builder::new()
                .name(format!("fan_in-{i}"))
                .spawn(move || {
                    release.wait();
                    for v in 0..per_sender {
                        send(v);
                    }
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(peer_error("spawn a sender"))?;
    countdown.start()?;
    release.wait();
    let elapsed = countdown.wait().await;
    for thread in threads {
        thread
            .join()
            .map_err(|_| BenchError::Harness("a sender panicked".to_owned()))?;
    }
    let elapsed = elapsed?;
    verify_eq(
        "messages counted",
        senders * per_sender,
        result.0.load(Ordering::Relaxed),
    )?;
    verify_eq(
        "sum of the messages",
        fan_in_sum(senders, per_sender),
        result.1.load(Ordering::Relaxed),
    )?;
    Ok(elapsed)
}
