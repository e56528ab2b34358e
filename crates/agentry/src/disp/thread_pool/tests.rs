//! One agent queue without workers: the run state hands the queue to the test thread, which
//! pops as a worker would (straight from the MPSC queue, or sorted by event priority once a
//! raised demand is queued), and the dropped queue discards what is left. Demands here never
//! run (their agent reference dangles); pools running real agents are tested in
//! `disp/tests.rs`. Both run under miri.

use super::agent_queue::{AgentQueue, PoolQueue, Running};
use super::pool::{Pool, Ready};
use crate::demand::Demand;
use crate::ids::MboxId;
use crate::message::LimitSlot;
use crate::message::payload::Payload;
use crate::slab::AgentRef;
use crate::stats::EnvCounters;
use crossbeam_deque::Worker;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A demand that must never run, numbered `n`; `marker` counts the live payloads.
fn demand(n: u32, priority: u8, marker: &Arc<()>) -> Demand {
    Demand::message(
        AgentRef::dangling(),
        MboxId::next(),
        Payload::new((n, Arc::clone(marker))),
        LimitSlot::NONE,
        priority,
    )
}

fn number(d: Demand) -> (u32, u8) {
    let priority = d.priority();
    let (n, _) = d
        .payload
        .expect("message")
        .take::<(u32, Arc<()>)>()
        .expect("type");
    (n, priority)
}

/// A pool of one worker slot and no thread: the test thread plays the worker.
fn pool() -> Arc<Pool> {
    let pool = Pool::new(
        "t".into(),
        0,
        1,
        8,
        true,
        Arc::new(EnvCounters::default()),
        std::sync::Weak::new(),
    );
    pool.set_stealers(vec![Worker::<PoolQueue>::new_fifo().stealer()].into());
    Arc::new(pool)
}

/// Takes the queue the pool scheduled, as a worker does.
fn take(pool: &Pool) -> PoolQueue {
    match pool.find_work(0) {
        Some(Ready::Scheduled(queue)) => queue,
        Some(Ready::Claimed(_)) => unreachable!("the test thread is no worker: it claims nothing"),
        None => panic!("nothing scheduled"),
    }
}

/// Pops as the worker that started the queue.
fn pop(running: &mut Running<'_>) -> Option<(u32, u8)> {
    running.pop().map(number)
}

#[test]
fn a_started_queue_pops_in_order_then_by_event_priority_and_drops_the_rest_once() {
    // One pop sorts everything waiting (however many: `disp_event_priorities.rs`).
    const N: u32 = 40;
    let pool = pool();
    let marker = Arc::new(());
    let queue = PoolQueue::new(AgentQueue::new(Arc::clone(&pool)));
    // From another thread: the first push schedules the queue, the others only queue.
    {
        let (queue, marker) = (queue.clone(), Arc::clone(&marker));
        std::thread::spawn(move || {
            for n in 0..N {
                AgentQueue::push(&queue, demand(n, 0, &marker)).expect("open");
            }
        })
        .join()
        .expect("sender");
    }
    let taken = take(&pool);
    assert!(std::ptr::eq(&*taken, &*queue));
    let mut running = taken.start().expect("scheduled");
    assert!(queue.start().is_none(), "one thread runs a queue at a time");
    for n in 0..N / 2 {
        assert_eq!(
            pop(&mut running),
            Some((n, 0)),
            "FIFO while nothing is raised"
        );
    }
    // A raised demand behind the rest: sorting starts, and it overtakes what waits.
    AgentQueue::push(&queue, demand(1_000_000, 3, &marker)).expect("open");
    AgentQueue::push(&queue, demand(1_000_001, 7, &marker)).expect("open");
    assert!(
        pool.find_work(0).is_none(),
        "a running queue is not scheduled again"
    );
    assert_eq!(pop(&mut running), Some((1_000_001, 7)));
    assert_eq!(pop(&mut running), Some((1_000_000, 3)));
    assert_eq!(pop(&mut running), Some((N / 2, 0)));
    // Stop with demands left: the queue is put back for a worker.
    assert!(running.stop(), "notified while running");
    pool.reschedule_local(queue.clone());
    let again = take(&pool);
    assert!(std::ptr::eq(&*again, &*queue));
    let mut running = again.start().expect("scheduled again");
    assert_eq!(pop(&mut running), Some((N / 2 + 1, 0)));
    // Budget used up: paused and put back; a push meanwhile does not schedule it twice.
    running.pause();
    pool.reschedule_local(queue.clone());
    drop((taken, again));
    AgentQueue::push(&queue, demand(2_000_000, 0, &marker)).expect("open");
    let scheduled = pool.find_work(0).expect("put back once");
    assert!(pool.find_work(0).is_none());
    drop(scheduled);
    // Drop with demands in both the sorted part and the MPSC queue.
    let left = u64::from(N / 2 - 2 + 1);
    // The last reference: dropping it drops the queue (the count below shows it).
    drop(queue);
    assert_eq!(
        pool.counters.dropped_on_shutdown.load(Ordering::Relaxed),
        left,
        "every demand left, once"
    );
    assert_eq!(Arc::strong_count(&marker), 1, "every payload dropped");
    pool.close();
    let queue = AgentQueue::new(Arc::clone(&pool));
    assert!(
        AgentQueue::push(&PoolQueue::new(queue), demand(0, 0, &marker)).is_err(),
        "closed"
    );
}
