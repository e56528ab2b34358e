//! Model checks of the lock-free code: every interleaving loom can produce with at most
//! `PREEMPTIONS` preemptions (the bound tokio uses in CI is 2; exhaustive search of three
//! threads with parking does not finish in reasonable time).

use super::mpsc::MpscQueue;
use super::parker::Parker;
use loom::sync::Arc;
use loom::thread;

/// Pops until `n` values arrived, parking through the sleep protocol when nothing is ready
/// (as the dispatcher worker does; it never spins on a producer).
fn consume(queue: &MpscQueue<(usize, usize)>, parker: &Parker, n: usize) -> Vec<(usize, usize)> {
    let mut got = Vec::new();
    while got.len() < n {
        // SAFETY: this thread is the only consumer.
        match unsafe { queue.pop() } {
            Some(v) => got.push(v),
            // SAFETY: as above.
            None => parker.park(|| unsafe { queue.is_empty() }),
        }
    }
    got
}

const PREEMPTIONS: usize = 3;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(PREEMPTIONS);
    builder.check(f);
}

#[test]
fn two_producers_one_consumer_keep_per_producer_order_and_never_lose_a_wakeup() {
    model(|| {
        let queue = Arc::new(MpscQueue::new());
        let parker = Arc::new(Parker::new());
        let consumer = {
            let (queue, parker) = (queue.clone(), parker.clone());
            thread::spawn(move || {
                // SAFETY: called once, by the consumer, before it parks. Producers may already
                // be pushing (as when agents are registered before the worker starts).
                unsafe { parker.register_consumer() };
                consume(&queue, &parker, 3)
            })
        };
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let (queue, parker) = (queue.clone(), parker.clone());
                thread::spawn(move || {
                    let count = if p == 0 { 2 } else { 1 };
                    for i in 0..count {
                        queue.push((p, i));
                        parker.unpark();
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().expect("producer");
        }
        let got = consumer.join().expect("consumer");
        let from_first: Vec<usize> = got
            .iter()
            .filter(|(p, _)| *p == 0)
            .map(|(_, i)| *i)
            .collect();
        assert_eq!(from_first, vec![0, 1], "producer 0's values in order");
        assert_eq!(got.len(), 3);
    });
}

#[test]
fn values_left_in_the_queue_are_dropped_with_it() {
    model(|| {
        let queue = Arc::new(MpscQueue::new());
        let marker = Arc::new(());
        let q = queue.clone();
        let m = marker.clone();
        let producer = thread::spawn(move || q.push(m));
        producer.join().expect("producer");
        drop(queue);
        assert_eq!(Arc::strong_count(&marker), 1);
    });
}
