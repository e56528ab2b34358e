//! The queue with its default blocks and, where block boundaries matter, with the small
//! blocks of the pool's agent queues too, and with a first block of its own (as a pool
//! agent's queue has it).

use super::{BLOCK_CAP, MpscQueue, Padded, SMALL_BLOCK_CAP};
use std::sync::Arc;

fn drain<T, const CAP: usize, const FIRST: usize>(q: &MpscQueue<T, CAP, Padded, FIRST>) -> Vec<T> {
    let mut out = Vec::new();
    // SAFETY: the test thread is the only consumer.
    while let Some(v) = unsafe { q.pop() } {
        out.push(v);
    }
    out
}

#[test]
fn fifo_single_producer() {
    let q = MpscQueue::<_>::new();
    for i in 0..100 {
        q.push(i);
    }
    assert_eq!(drain(&q), (0..100).collect::<Vec<_>>());
}

#[test]
fn per_producer_order_with_many_producers() {
    // Under miri: 3 producers of a few blocks each (every interleaving miri picks is checked).
    const PRODUCERS: u64 = if cfg!(miri) { 3 } else { 4 };
    const EACH: u64 = if cfg!(miri) { 70 } else { 10_000 };
    let q = Arc::new(MpscQueue::<_>::new());
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = q.clone();
            std::thread::spawn(move || (0..EACH).for_each(|i| q.push((p, i))))
        })
        .collect();
    let mut got = Vec::new();
    while got.len() < (PRODUCERS * EACH) as usize {
        let before = got.len();
        got.extend(drain(&q));
        if got.len() == before {
            std::thread::yield_now();
        }
    }
    producers
        .into_iter()
        .for_each(|h| h.join().expect("producer"));
    let mut next = [0u64; PRODUCERS as usize];
    for (p, i) in got {
        assert_eq!(next[p as usize], i, "producer {p} out of order");
        next[p as usize] += 1;
    }
}

#[test]
fn drop_releases_queued_values() {
    let marker = Arc::new(());
    let q = MpscQueue::<_>::new();
    for _ in 0..10 {
        q.push(marker.clone());
    }
    drop(q);
    assert_eq!(Arc::strong_count(&marker), 1);
}

/// Counts drops of its values.
struct Counted(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn fifo_across_many_blocks_with_interleaved_pops() {
    fifo_across_many_blocks_with_interleaved_pops_in::<BLOCK_CAP, 0>();
}

#[test]
fn fifo_across_many_small_blocks_with_interleaved_pops() {
    fifo_across_many_blocks_with_interleaved_pops_in::<SMALL_BLOCK_CAP, 0>();
}

#[test]
fn fifo_across_many_blocks_with_interleaved_pops_and_a_first_block_of_its_own() {
    fifo_across_many_blocks_with_interleaved_pops_in::<SMALL_BLOCK_CAP, 1>();
}

fn fifo_across_many_blocks_with_interleaved_pops_in<const CAP: usize, const FIRST: usize>() {
    let q = MpscQueue::<u32, CAP, Padded, FIRST>::new();
    let mut expected = 0u32;
    let mut next = 0u32;
    // Pushes run ahead of pops by a varying distance, so the consumer crosses block
    // boundaries both right behind the producer and several blocks behind it.
    for round in 0..200u32 {
        for _ in 0..(round % 70) + 1 {
            q.push(next);
            next += 1;
        }
        assert_eq!(q.len(), (next - expected) as usize);
        for _ in 0..(round % 50) {
            // SAFETY: the test thread is the only consumer.
            match unsafe { q.pop() } {
                Some(v) => {
                    assert_eq!(v, expected);
                    expected += 1;
                }
                None => break,
            }
        }
    }
    let rest = drain(&q);
    assert_eq!(rest, (expected..next).collect::<Vec<_>>());
    // SAFETY: the test thread is the only consumer.
    assert!(unsafe { q.is_empty() });
    assert_eq!(q.len(), 0);
    // The queue keeps working after being drained at an arbitrary offset.
    for i in 0..100 {
        q.push(i);
    }
    assert_eq!(drain(&q), (0..100).collect::<Vec<_>>());
}

#[test]
fn empty_queue_reports_empty_and_pop_none() {
    let q = MpscQueue::<u8>::new();
    // SAFETY: the test thread is the only consumer.
    assert!(unsafe { q.is_empty() });
    // SAFETY: as above.
    assert!(unsafe { q.pop() }.is_none());
    assert_eq!(q.len(), 0);
    q.push(7);
    // SAFETY: as above.
    assert!(!unsafe { q.is_empty() });
    assert_eq!(q.len(), 1);
}

#[test]
fn drop_releases_each_value_exactly_once_including_a_partially_consumed_block() {
    drop_releases_each_value_exactly_once_in::<BLOCK_CAP, 0>();
}

#[test]
fn drop_releases_each_value_exactly_once_with_small_blocks() {
    drop_releases_each_value_exactly_once_in::<SMALL_BLOCK_CAP, 0>();
}

/// Drops with the queue's own block at the head, further on, as the spare and out of use, and
/// (under miri) frees every other block once and never the queue's own.
#[test]
fn drop_releases_each_value_exactly_once_with_a_first_block_of_its_own() {
    drop_releases_each_value_exactly_once_in::<SMALL_BLOCK_CAP, 1>();
}

fn drop_releases_each_value_exactly_once_in<const CAP: usize, const FIRST: usize>() {
    for (pushed, popped) in [
        (0, 0),
        (1, 0),
        (CAP, 0),
        (CAP, CAP),
        (CAP + 1, 5.min(CAP)),
        (3 * CAP + 7, CAP + 9),
        (6 * CAP + 14, 2 * CAP),
    ] {
        let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let q = MpscQueue::<Counted, CAP, Padded, FIRST>::new();
        for _ in 0..pushed {
            q.push(Counted(drops.clone()));
        }
        for _ in 0..popped {
            // SAFETY: the test thread is the only consumer.
            drop(unsafe { q.pop() }.expect("value"));
        }
        assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), popped);
        drop(q);
        assert_eq!(
            drops.load(std::sync::atomic::Ordering::Relaxed),
            pushed,
            "pushed {pushed}, popped {popped}"
        );
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "300 000 pushes from 6 threads, far beyond the miri step's budget; \
              per_producer_order_with_many_producers and \
              concurrent_producers_and_consumer_cross_blocks_and_drop_releases_the_rest are its \
              miri-sized versions"
)]
fn stress_many_producers_per_producer_order_and_exactly_once() {
    const PRODUCERS: u64 = 6;
    const EACH: u64 = 50_000;
    let q = Arc::new(MpscQueue::<_>::new());
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = q.clone();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    q.push((p, i));
                    if i % 1000 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let mut next = [0u64; PRODUCERS as usize];
    let mut total = 0;
    while total < PRODUCERS * EACH {
        // SAFETY: the test thread is the only consumer.
        match unsafe { q.pop() } {
            Some((p, i)) => {
                assert_eq!(next[p as usize], i, "producer {p} out of order");
                next[p as usize] += 1;
                total += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    producers
        .into_iter()
        .for_each(|h| h.join().expect("producer"));
    // SAFETY: as above.
    assert!(unsafe { q.pop() }.is_none());
    assert_eq!(q.len(), 0);
}

#[test]
fn concurrent_producers_and_consumer_cross_blocks_and_drop_releases_the_rest() {
    concurrent_producers_and_consumer_cross_blocks_in::<BLOCK_CAP, 0>();
}

#[test]
fn concurrent_producers_and_consumer_cross_small_blocks_and_drop_releases_the_rest() {
    concurrent_producers_and_consumer_cross_blocks_in::<SMALL_BLOCK_CAP, 0>();
}

#[test]
fn concurrent_producers_and_consumer_cross_blocks_with_a_first_block_of_its_own() {
    concurrent_producers_and_consumer_cross_blocks_in::<SMALL_BLOCK_CAP, 1>();
}

fn concurrent_producers_and_consumer_cross_blocks_in<const CAP: usize, const FIRST: usize>() {
    // Producers race for the last slot of a block (the one that installs the next block, from
    // the spare the consumer recycled or a new allocation) while the consumer retires blocks
    // behind them; the consumer stops half-way and the queue drops the rest.
    const PRODUCERS: usize = 3;
    let each: usize = if cfg!(miri) { 2 * CAP + 5 } else { 20_000 };
    let total: usize = PRODUCERS * each;
    let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let q = Arc::new(MpscQueue::<_, CAP, Padded, FIRST>::new());
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (q, drops) = (q.clone(), drops.clone());
            std::thread::spawn(move || {
                for i in 0..each {
                    q.push((p, i, Counted(drops.clone())));
                }
            })
        })
        .collect();
    let mut next = [0usize; PRODUCERS];
    let mut taken = 0;
    while taken < total / 2 {
        // SAFETY: the test thread is the only consumer.
        match unsafe { q.pop() } {
            Some((p, i, value)) => {
                assert_eq!(next[p], i, "producer {p} out of order");
                next[p] += 1;
                taken += 1;
                drop(value);
            }
            None => std::thread::yield_now(),
        }
    }
    producers
        .into_iter()
        .for_each(|h| h.join().expect("producer"));
    assert_eq!(q.len(), total - taken);
    assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), taken);
    drop(Arc::into_inner(q).expect("the producers are gone"));
    assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), total);
}

#[test]
fn a_value_pushed_on_one_thread_is_read_whole_on_another() {
    // Non-`Copy` values with heap parts: the consumer must see the producer's writes to them.
    const N: usize = if cfg!(miri) { 40 } else { 5_000 };
    let q = Arc::new(MpscQueue::<_>::new());
    let producer = {
        let q = q.clone();
        std::thread::spawn(move || {
            for i in 0..N {
                q.push(vec![i; 3]);
            }
        })
    };
    let mut expected = 0;
    while expected < N {
        // SAFETY: the test thread is the only consumer.
        match unsafe { q.pop() } {
            Some(v) => {
                assert_eq!(v, [expected; 3]);
                expected += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    producer.join().expect("producer");
}
