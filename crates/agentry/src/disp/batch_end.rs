//! The end-of-batch hook: work a handler leaves for the end of the batch of demands its
//! dispatcher thread is serving — a transport that coalesces everything one batch of
//! handlers sent into one write, on the thread that ran them, instead of waking a writer
//! thread per message.
//!
//! # Ground rules
//!
//! - **What a batch is.** Every dispatcher thread serves demands in batches: one round of an
//!   engine queue's policy (a `one_thread`, `active_obj`, `active_group` or `prio_one_thread`
//!   thread, and a driven dispatcher's [`Driver::run`](super::Driver::run) — the io
//!   dispatcher of agentry-net, the testing kit), one agent queue's activation on a thread
//!   pool worker (up to `max_demands_at_once`). The worker loops wrap each batch in
//!   `batch(..)`: one thread-local flag set before it, cleared after it, one look at the list
//!   of hooks — per batch, not per demand, and a thread that found nothing to serve (an idle
//!   wake-up) runs no hook.
//! - **Who registers, where it runs.** [`at_batch_end`] called while the calling thread
//!   serves a batch (from a handler, or anything a handler calls) keeps the hook in that
//!   thread's list and returns true; the hook runs once on **that same thread** when the
//!   batch ends, after the last demand of the batch and before the thread serves the next
//!   batch, spins or parks. The same hook (the same `Arc`) registered several times in one
//!   batch runs once. Called anywhere else (a thread that is not a dispatcher's, or a hook
//!   itself), it keeps nothing and returns false: the caller does the work itself.
//! - **Blocking waits.** Before agentry's own blocking waits on a dispatcher thread (a
//!   synchronous request, a message chain's receive: `disp::before_blocking`) the hooks
//!   registered so far run, so nothing a handler deferred waits for the handler to return
//!   while the handler waits for its answer; a blocking wait of another crate calls
//!   [`run_batch_end_hooks`] first (agentry-remote's `RemoteMbox::request` does). A
//!   handler that blocks in some other way holds its deferred work back until it returns.
//! - **What a hook may do.** Anything a non-blocking piece of code on a dispatcher thread
//!   may: send messages (they are served in a later batch), write to a socket. It should
//!   not block for long (the thread's agents wait). A hook runs outside the batch: an
//!   [`at_batch_end`] from inside a hook returns false. A hook that panics unwinds the
//!   dispatcher thread like a panic outside a handler would; the hooks after it in the list
//!   are dropped unrun.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// Work to do at the end of a dispatcher batch (see the module docs).
pub trait BatchEnd: Send + Sync {
    /// Runs on the dispatcher thread that registered it, once its batch has ended.
    fn batch_ended(&self);
}

struct State {
    /// The thread is serving a batch (`batch` is on the stack).
    in_batch: Cell<bool>,
    /// Hooks registered in the current batch, each once.
    hooks: RefCell<Vec<Arc<dyn BatchEnd>>>,
}

thread_local! {
    static STATE: State = const {
        State {
            in_batch: Cell::new(false),
            hooks: RefCell::new(Vec::new()),
        }
    };
}

/// Runs `hook` on the calling thread at the end of the dispatcher batch it is serving; false
/// if it is serving none (the caller then does the work itself). The same `Arc` registered
/// twice in one batch runs once.
pub fn at_batch_end<H: BatchEnd + 'static>(hook: &Arc<H>) -> bool {
    STATE.with(|s| {
        if !s.in_batch.get() {
            return false;
        }
        let mut hooks = s.hooks.borrow_mut();
        let new = Arc::as_ptr(hook).cast::<()>();
        if !hooks.iter().any(|h| Arc::as_ptr(h).cast::<()>() == new) {
            hooks.push(Arc::clone(hook) as Arc<dyn BatchEnd>);
        }
        true
    })
}

/// Serves one batch: `serve` runs with the calling thread marked as serving a batch, then
/// the hooks registered meanwhile run (one call in each dispatcher's worker loop).
#[inline]
pub(crate) fn batch<R>(serve: impl FnOnce() -> R) -> R {
    let outer = STATE.with(|s| s.in_batch.replace(true));
    let result = serve();
    STATE.with(|s| s.in_batch.set(outer));
    if !outer {
        run_batch_end_hooks();
    }
    result
}

/// Runs the end-of-batch hooks registered so far on this thread: the end of a batch, or a
/// blocking wait inside one (call it before blocking a dispatcher thread until another
/// process or thread answers). Cheap when there are none; does nothing off a batch.
#[inline]
pub fn run_batch_end_hooks() {
    if STATE.with(|s| s.hooks.borrow().is_empty()) {
        return;
    }
    run_registered();
}

#[cold]
fn run_registered() {
    let (outer, mut hooks) = STATE.with(|s| {
        (
            s.in_batch.replace(false),
            std::mem::take(&mut *s.hooks.borrow_mut()),
        )
    });
    for hook in hooks.drain(..) {
        hook.batch_ended();
    }
    STATE.with(|s| {
        s.in_batch.set(outer);
        // Keep the list's allocation for the next batch (registrations were refused while
        // the hooks ran, so the thread's list is still empty).
        let mut list = s.hooks.borrow_mut();
        if list.is_empty() {
            *list = hooks;
        }
    });
}

#[cfg(test)]
mod tests;
