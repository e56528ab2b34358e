//! Which threads run agents: a dispatcher's worker marks itself with its environment's
//! address as it starts, and a driven dispatcher's thread is one while it serves its queue
//! (`engine::serves_a_queue`). The env asks before it blocks (a registration waits for its
//! coop's start only off such threads: waiting there for other agents could deadlock).

use std::cell::Cell;

thread_local! {
    /// Address of the environment whose dispatcher this thread runs (0 if none).
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
}

/// Marks the calling thread as a worker of the environment at `env_address`.
pub(crate) fn mark_worker_of(env_address: usize) {
    WORKER_OF.set(env_address);
}

/// True on a worker thread of the environment at `env_address`.
pub(crate) fn is_worker_of(env_address: usize) -> bool {
    WORKER_OF.get() == env_address
}

/// True on a thread that runs agents — a dispatcher's worker or a driven dispatcher's thread,
/// of any environment: a blocking wait there for other agents could deadlock.
pub(crate) fn on_a_dispatcher_thread() -> bool {
    WORKER_OF.get() != 0 || super::serves_a_queue()
}
