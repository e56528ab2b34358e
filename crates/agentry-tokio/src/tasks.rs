//! [`Tasks`]: the futures one agent started, on a tokio runtime, their outputs coming back as
//! messages.
//!
//! # Ground rules
//!
//! 1. The agent owns its `Tasks` (a field); only its handlers call [`Tasks::spawn`], so the
//!    scope needs no lock of its own. Futures run on the runtime's threads and never see the
//!    agent: the output `T` is sent to the agent's direct mbox (`try_send`), and the agent
//!    handles it in whatever state it is in then — a `T` without a handler in that state is
//!    counted `unhandled` by the core, as any message.
//! 2. A panic inside the future is caught on the runtime's thread and sent to the agent as
//!    [`TaskPanicked`]; [`TaskPanicked::resume`] in a handler re-raises it on the agent's
//!    thread, where the agent's panic reaction applies as to a handler's panic.
//! 3. Dropping the scope (with the agent, after `on_finish`) or [`Tasks::abort_all`] aborts
//!    every future still running; tokio drops an aborted future at its next suspension
//!    point, and the future's guard counts it `cancelled` then. The core refuses whatever an
//!    output races past the agent's finish (the agent stopped accepting before `on_finish`).
//! 4. Each future is counted once when it ends, by a guard dropped whatever the ending
//!    (see [`TaskStats`](crate::TaskStats)).

mod catch;

use crate::probe::{Shared, TaskProbe, TaskStats};
use agentry::{Agent, Ctx, Mbox};
use catch::CatchUnwind;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::task::JoinSet;

tokio::task_local! {
    /// The counters of the scope whose future is being polled ([`crate::sleep`] reports to them).
    pub(crate) static SCOPE: Arc<Shared>;
}

/// Identifies one future of a [`Tasks`] scope (numbered from 1 in spawn order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u64);

/// The message an agent gets when one of its futures panicked.
///
/// Subscribe to it like any message; [`resume`](Self::resume) re-raises the panic in the
/// handler, so the agent's panic reaction (`Define::panic_reaction`, the coop's, the env's)
/// applies exactly as to a panicking handler. Without a handler it is counted `unhandled`.
pub struct TaskPanicked {
    /// Which future panicked.
    pub task: TaskId,
    /// The panic's message (as [`agentry::panic_message`] words it).
    pub message: String,
    payload: Box<dyn Any + Send>,
}

impl TaskPanicked {
    /// Re-raises the future's panic on the calling thread (call it from the agent's handler).
    pub fn resume(self) -> ! {
        std::panic::resume_unwind(self.payload)
    }
}

impl fmt::Debug for TaskPanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskPanicked")
            .field("task", &self.task)
            .field("message", &self.message)
            .finish()
    }
}

/// The futures one agent started: each runs on a tokio runtime and its output comes back to
/// the agent as a message. See the [crate guide](crate::guide).
pub struct Tasks {
    runtime: Handle,
    /// The running futures; dropping the set aborts them (ground rule 3).
    running: JoinSet<()>,
    shared: Arc<Shared>,
    last_id: u64,
}

impl Tasks {
    /// A scope whose futures run on `runtime` (a multi-thread runtime's handle, usually; a
    /// current-thread runtime runs them only while its owner drives it).
    pub fn new(runtime: Handle) -> Self {
        Tasks {
            runtime,
            running: JoinSet::new(),
            shared: Arc::default(),
            last_id: 0,
        }
    }

    /// Starts `future` on the runtime; its output is sent to the agent behind `ctx` as a
    /// message of type `F::Output`. Returns the future's id.
    pub fn spawn<A, F>(&mut self, ctx: &Ctx<A>, future: F) -> TaskId
    where
        A: Agent,
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawn_to(ctx.mbox().clone(), future)
    }

    /// [`spawn`](Self::spawn) with the agent's mbox given (for code outside a handler, e.g.
    /// `on_start` through `ctx.mbox()`, or an agent's helper holding its mbox).
    pub fn spawn_to<F>(&mut self, agent: Mbox, future: F) -> TaskId
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // Reap the ended ones (their results are `()`; the guard counted them).
        while self.running.try_join_next().is_some() {}
        self.last_id += 1;
        let id = TaskId(self.last_id);
        self.shared.update(|c| {
            c.spawned += 1;
            c.running += 1;
        });
        let ending = Ending {
            shared: Arc::clone(&self.shared),
            outcome: Outcome::Cancelled,
        };
        let task = async move {
            // The whole guard moves into the task (not just the field assigned below).
            let mut ending = ending;
            ending.outcome = match CatchUnwind::new(future).await {
                Ok(output) => match agent.try_send(output) {
                    Ok(()) => Outcome::Delivered,
                    Err(_) => Outcome::Undelivered,
                },
                Err(payload) => {
                    let message = agentry::panic_message(payload.as_ref());
                    agent.send(TaskPanicked {
                        task: id,
                        message,
                        payload,
                    });
                    Outcome::Panicked
                }
            };
            // `ending` drops here: counted before the task is reaped.
        };
        self.running
            .spawn_on(SCOPE.scope(Arc::clone(&self.shared), task), &self.runtime);
        id
    }

    /// How many of this scope's futures have not ended.
    pub fn running(&self) -> u64 {
        self.shared.stats().running
    }

    /// The scope's counters.
    pub fn stats(&self) -> TaskStats {
        self.shared.stats()
    }

    /// A probe of the counters, for tests and monitoring (it outlives the agent).
    pub fn probe(&self) -> TaskProbe {
        TaskProbe(Arc::clone(&self.shared))
    }

    /// Aborts every running future (each counted `cancelled` when tokio drops it). Dropping
    /// the scope does the same (its `JoinSet` aborts what it holds).
    pub fn abort_all(&mut self) {
        self.running.abort_all();
        while self.running.try_join_next().is_some() {}
    }
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("stats", &self.stats())
            .finish()
    }
}

/// How a future ended.
#[derive(Clone, Copy)]
enum Outcome {
    Delivered,
    Undelivered,
    Panicked,
    Cancelled,
}

/// Counts the future's end once, whatever ends it (an abort drops it as `Cancelled`).
struct Ending {
    shared: Arc<Shared>,
    outcome: Outcome,
}

impl Drop for Ending {
    fn drop(&mut self) {
        let outcome = self.outcome;
        self.shared.update(|c| {
            c.running -= 1;
            match outcome {
                Outcome::Delivered => c.delivered += 1,
                Outcome::Undelivered => c.undelivered += 1,
                Outcome::Panicked => c.panicked += 1,
                Outcome::Cancelled => c.cancelled += 1,
            }
        });
    }
}
