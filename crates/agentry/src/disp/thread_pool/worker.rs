//! A thread-pool worker: take a ready agent queue, run up to a budget of its demands, put it
//! back if it has more; search briefly when there is nothing to do, then park.

use super::agent_queue::{PoolQueue, Running};
use super::pool::{Pool, Ready};
use crate::slab::AgentSlab;
use crossbeam_deque::Worker;
use crossbeam_utils::Backoff;
use std::sync::Arc;

pub(super) fn run(
    pool: Arc<Pool>,
    index: usize,
    deque: Worker<PoolQueue>,
    slab: Arc<AgentSlab>,
    env_address: usize,
) {
    let enrolled = pool.enter(index, deque);
    crate::disp::mark_worker_of(env_address);
    let backoff = Backoff::new();
    let mut searching = false;
    loop {
        if let Some(queue) = pool.find_work(index) {
            if searching {
                searching = false;
                // The last searcher found work while more is waiting: let another one look.
                if pool.stop_searching() && pool.surplus() {
                    pool.wake_one_if_none_searching();
                }
            }
            backoff.reset();
            crate::disp::batch(|| run_queue(&pool, index, queue, &slab));
            continue;
        }
        if pool.is_closed() {
            break;
        }
        if !searching {
            searching = true;
            pool.start_searching();
        }
        if !backoff.is_completed() {
            backoff.snooze();
            continue;
        }
        pool.stop_searching();
        searching = pool.park(index);
        backoff.reset();
    }
    if searching {
        pool.stop_searching();
    }
    pool.leave(enrolled);
}

/// Runs one agent queue: at most `max_demands_at_once` demands, then puts it back if needed.
fn run_queue(pool: &Pool, index: usize, ready: Ready, slab: &AgentSlab) {
    let (queue, put_back) = match ready {
        Ready::Claimed(claimed) => claimed.run(|running| run_budget(pool, index, running, slab)),
        Ready::Scheduled(queue) => {
            let running = queue
                .start()
                .expect("invariant: a queue taken from a ready queue is scheduled");
            let put_back = run_budget(pool, index, running, slab);
            (queue, put_back)
        }
    };
    if put_back {
        pool.reschedule_local(queue);
    }
}

/// Runs up to the pool's budget of demands and lets the queue go; true if the caller must put
/// it back into a ready queue.
fn run_budget(pool: &Pool, index: usize, mut running: Running<'_>, slab: &AgentSlab) -> bool {
    pool.set_running(Some(running.queue()));
    let handled = running.run(slab, pool.max_demands_at_once);
    pool.set_running(None);
    pool.count_handled(index, handled as u64);
    if handled == pool.max_demands_at_once {
        running.pause();
        true
    } else {
        running.stop()
    }
}
