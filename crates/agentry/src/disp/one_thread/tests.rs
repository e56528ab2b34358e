//! The queue's two parts without a worker thread: the worker's local part (reached through
//! `SERVED_QUEUE`), the cross-thread part, moving between them, and what the queue drops.
//! Demands here never run (their agent reference dangles); the dispatchers running real agents
//! are tested in `disp/tests.rs`. Both run under miri.

use super::{Lane, Policy, Queue, SERVED_QUEUE, Worker};
use crate::Env;
use crate::demand::{Demand, LimitSlot};
use crate::ids::MboxId;
use crate::message::payload::Payload;
use crate::slab::AgentRef;
use crate::sync::parker::Parker;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A demand that must never run; `marker` counts the live payloads.
fn demand(priority: u8, marker: &Arc<()>) -> Demand {
    Demand::message(
        AgentRef::dangling(),
        MboxId::next(),
        Payload::new((Arc::clone(marker), [0u64; 4])),
        LimitSlot::NONE,
        priority,
    )
}

/// Pushes `n` demands from another thread (the cross-thread part).
fn push_from_another_thread(queue: &Arc<Queue>, lane: u8, n: usize, marker: &Arc<()>) {
    let (queue, marker) = (Arc::clone(queue), Arc::clone(marker));
    std::thread::spawn(move || {
        assert!(!queue.is_served_by_current_thread());
        for _ in 0..n {
            queue.push(demand(0, &marker), lane).expect("open");
        }
    })
    .join()
    .expect("sender");
}

/// Makes the test thread the queue's worker for `f` (the local part), as `run` does.
fn as_worker<R>(queue: &Queue, f: impl FnOnce() -> R) -> R {
    SERVED_QUEUE.set(queue.address());
    let r = f();
    SERVED_QUEUE.set(0);
    r
}

fn local_len(lane: &Lane) -> usize {
    // SAFETY: the test thread is the queue's only consumer and holds no other borrow.
    unsafe { (*lane.local.get()).len() }
}

#[test]
fn demands_wait_in_both_parts_and_the_dropped_queue_discards_each_once() {
    const N: usize = if cfg!(miri) { 40 } else { 1_000 };
    let env = Env::new().expect("env");
    let inner = env.handle().inner();
    let marker = Arc::new(());
    for policy in [Policy::Fifo, Policy::Strict] {
        let queue = Arc::new(Queue::new(inner, "t".into(), policy, Parker::new()));
        let lanes = queue.lanes.len() as u8;
        push_from_another_thread(&queue, lanes - 1, N, &marker);
        as_worker(&queue, || {
            for i in 0..N {
                queue
                    .push(demand(0, &marker), i as u8 % lanes)
                    .expect("open");
            }
            let mut worker = Worker {
                queue: &queue,
                slab: &inner.slab,
                handled: 0,
            };
            worker.publish();
            assert_eq!(queue.queued(), 2 * N);
            assert!(!queue.nothing_queued());
            // A raised demand switches to sorting: the cross-thread part moves into the local
            // one (what a prioritised worker does before it serves).
            queue.push(demand(5, &marker), 0).expect("open");
            assert!(queue.raised());
            assert!(worker.pull_remote(), "the other thread's demands");
            while worker.pull_remote() {}
            worker.publish();
            assert_eq!(queue.lanes.iter().map(local_len).sum::<usize>(), 2 * N + 1);
            if lanes > 1 {
                assert_eq!(worker.highest_ready(), Some(usize::from(lanes) - 1));
            }
        });
        // More from another thread, left in the cross-thread part; then closing refuses.
        push_from_another_thread(&queue, 0, N, &marker);
        queue.close();
        assert!(queue.push(demand(0, &marker), 0).is_err());
        let dropped_before = inner.counters.dropped_on_shutdown.load(Ordering::Relaxed);
        drop(Arc::into_inner(queue).expect("the senders are gone"));
        let dropped = inner.counters.dropped_on_shutdown.load(Ordering::Relaxed) - dropped_before;
        assert_eq!(dropped, (3 * N + 1) as u64, "every queued demand, once");
        assert_eq!(Arc::strong_count(&marker), 1, "every payload dropped");
    }
    env.handle().stop();
    env.run();
}
