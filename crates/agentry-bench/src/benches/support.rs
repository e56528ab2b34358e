//! What the agentry benchmarks share: building an environment, and cells in which agents
//! record timings for the runner to read after `Env::run` returns.

use crate::harness::BenchError;
use agentry::{Env, EnvHandle};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
