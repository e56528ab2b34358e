//! The queue's two parts without a worker thread: the server's local part (the test thread
//! claims the server), the cross-thread part, moving between them, and what the queue drops.
//! Demands here never run (their agent reference dangles); the dispatchers running real agents
//! are tested in `disp/tests.rs`. Both run under miri.

use super::queue::{Policy, Queue};
use super::server::Server;
use crate::Env;
use crate::demand::Demand;
use crate::ids::MboxId;
use crate::message::LimitSlot;
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

#[test]
fn demands_wait_in_both_parts_and_the_dropped_queue_discards_each_once() {
    const N: usize = if cfg!(miri) { 40 } else { 1_000 };
    let env = Env::new().expect("env");
    let inner = env.handle().inner();
    let marker = Arc::new(());
    for policy in [Policy::Fifo, Policy::Strict] {
        let queue = Arc::new(Queue::new(
            inner.address(),
            &inner.counters,
            &inner.slab,
            "t".into(),
            policy,
            Parker::new(),
        ));
        let lanes = queue.lanes.len() as u8;
        push_from_another_thread(&queue, lanes - 1, N, &marker);
        {
            let mut server =
                Server::claim(Arc::clone(&queue)).expect("the test thread serves no queue");
            assert!(queue.is_served_by_current_thread());
            assert!(
                Server::claim(Arc::clone(&queue)).is_none(),
                "one server per thread and per queue"
            );
            for i in 0..N {
                queue
                    .push(demand(0, &marker), i as u8 % lanes)
                    .expect("open");
            }
            server.publish();
            assert_eq!(queue.queued(), 2 * N);
            assert!(!server.nothing_queued());
            // A raised demand switches to sorting: the cross-thread part moves into the local
            // one (what a prioritised server does before it serves).
            queue.push(demand(5, &marker), 0).expect("open");
            assert!(queue.raised());
            assert!(server.pull_remote(), "the other thread's demands");
            while server.pull_remote() {}
            server.publish();
            assert_eq!(queue.queued(), 2 * N + 1, "all in the local parts now");
            if lanes > 1 {
                assert_eq!(server.highest_ready(), Some(usize::from(lanes) - 1));
            }
            // Dropped without leaving (only a test does that): the queue keeps the demands.
        }
        assert!(!queue.is_served_by_current_thread());
        assert!(
            Server::claim(Arc::clone(&queue)).is_none(),
            "a queue never gets a second server"
        );
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
