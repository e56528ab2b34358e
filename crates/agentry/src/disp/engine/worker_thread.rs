//! The loop of a one-thread dispatcher's own thread: serve, spin briefly when idle
//! (crossbeam `Backoff`), then park; leave the queue once it is closed.

use super::queue::Queue;
use super::server::Server;
use crossbeam_utils::Backoff;
use std::sync::Arc;

/// Serves `queue` on the calling thread (a thread spawned for it) until the queue closes.
pub(crate) fn run(queue: Arc<Queue>, env_address: usize) {
    let Some(mut server) = Server::claim(queue) else {
        // The environment is gone already: nothing to serve.
        return;
    };
    crate::disp::mark_worker_of(env_address);
    let backoff = Backoff::new();
    loop {
        if crate::disp::batch(|| server.serve()) {
            server.publish();
            backoff.reset();
            continue;
        }
        if server.queue().is_closed() {
            break;
        }
        if !backoff.is_completed() {
            backoff.snooze();
            continue;
        }
        server.park();
        backoff.reset();
    }
    server.leave();
}
