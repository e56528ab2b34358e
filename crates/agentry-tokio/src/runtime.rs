//! [`env_runtime`]: a tokio runtime the environment owns.
//!
//! # Ground rules
//!
//! The runtime lives in one of the environment's stop guards. When the environment starts
//! stopping, the guard shuts the runtime down in the background (it never blocks the
//! stopping thread, and may run on a runtime thread itself), then removes itself so the
//! shutdown goes on: every future still running is dropped at its next suspension point —
//! a [`Tasks`](crate::Tasks) future is counted `cancelled` —, and a future spawned afterwards
//! is cancelled at once. Until then the guard holds a handle of the environment (released
//! when it is removed).

use crate::error::RuntimeError;
use agentry::{EnvHandle, StopGuard, StopGuardId};
use parking_lot::Mutex;
use std::fmt;
use std::sync::{Arc, OnceLock};
use tokio::runtime::{Handle, Runtime};

/// Builds a multi-thread tokio runtime (`worker_threads` workers, timers and I/O enabled)
/// owned by the environment behind `env`: it runs until the environment starts stopping.
/// Returns its handle (for [`Tasks::new`](crate::Tasks::new), `Handle::block_on`, …).
///
/// ```
/// use agentry::Env;
/// use agentry_tokio::env_runtime;
///
/// let env = Env::new()?;
/// let runtime = env_runtime(env.handle(), 2)?;
/// assert_eq!(runtime.block_on(async { 6 * 7 }), 42);
/// env.handle().stop();
/// env.run(); // the runtime is shut down as the environment stops
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn env_runtime(env: &EnvHandle, worker_threads: usize) -> Result<Handle, RuntimeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads.max(1))
        .thread_name("agentry-tokio")
        .enable_all()
        .build()
        .map_err(RuntimeError::Build)?;
    let handle = runtime.handle().clone();
    let guard = Arc::new(OwnedRuntime {
        runtime: Mutex::new(Some(runtime)),
        registration: OnceLock::new(),
    });
    let id = env
        .add_stop_guard(Arc::clone(&guard) as Arc<dyn StopGuard>)
        .map_err(|_| RuntimeError::EnvStopping)?;
    // The environment may have started stopping (and called `stop`) in between: then the
    // guard waits for its registration, which comes here.
    guard
        .registration
        .set((env.clone(), id))
        .expect("invariant: registered once, here");
    if guard.runtime.lock().is_none() {
        env.remove_stop_guard(id);
    }
    Ok(handle)
}

/// The stop guard holding the runtime.
struct OwnedRuntime {
    runtime: Mutex<Option<Runtime>>,
    registration: OnceLock<(EnvHandle, StopGuardId)>,
}

impl StopGuard for OwnedRuntime {
    fn stop(&self) {
        if let Some(runtime) = self.runtime.lock().take() {
            runtime.shutdown_background();
        }
        // Not registered yet: `env_runtime` sees the runtime gone and removes the guard.
        if let Some((env, id)) = self.registration.get() {
            env.remove_stop_guard(*id);
        }
    }
}

impl fmt::Debug for OwnedRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedRuntime").finish_non_exhaustive()
    }
}
