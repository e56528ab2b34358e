use super::MpscQueue;
use std::sync::Arc;

fn drain<T>(q: &MpscQueue<T>) -> Vec<T> {
    let mut out = Vec::new();
    // SAFETY: the test thread is the only consumer.
    while let Some(v) = unsafe { q.pop() } {
        out.push(v);
    }
    out
}

#[test]
fn fifo_single_producer() {
    let q = MpscQueue::new();
    for i in 0..100 {
        q.push(i);
    }
    assert_eq!(drain(&q), (0..100).collect::<Vec<_>>());
}

#[test]
fn per_producer_order_with_many_producers() {
    let q = Arc::new(MpscQueue::new());
    let producers: Vec<_> = (0..4u64)
        .map(|p| {
            let q = q.clone();
            std::thread::spawn(move || (0..10_000u64).for_each(|i| q.push((p, i))))
        })
        .collect();
    let mut got = Vec::new();
    while got.len() < 40_000 {
        got.extend(drain(&q));
    }
    producers
        .into_iter()
        .for_each(|h| h.join().expect("producer"));
    let mut next = [0u64; 4];
    for (p, i) in got {
        assert_eq!(next[p as usize], i, "producer {p} out of order");
        next[p as usize] += 1;
    }
}

#[test]
fn drop_releases_queued_values() {
    let marker = Arc::new(());
    let q = MpscQueue::new();
    for _ in 0..10 {
        q.push(marker.clone());
    }
    drop(q);
    assert_eq!(Arc::strong_count(&marker), 1);
}
