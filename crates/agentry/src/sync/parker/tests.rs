//! The parker with real threads (the interleavings are loom's job, `sync/loom_tests.rs`);
//! under miri these check the thread-handle cell and the flag protocol for data races.

use super::Parker;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// A parker whose wake-ups are counted instead of unparking a thread.
fn counting() -> (Parker, Arc<AtomicUsize>) {
    let wakes = Arc::new(AtomicUsize::new(0));
    let w = Arc::clone(&wakes);
    let parker = Parker::with_callback(Box::new(move || {
        w.fetch_add(1, Ordering::SeqCst);
    }));
    (parker, wakes)
}

#[test]
fn producers_wake_only_a_consumer_that_announced_its_sleep_and_only_once() {
    let (parker, wakes) = counting();
    parker.unpark();
    assert_eq!(
        wakes.load(Ordering::SeqCst),
        0,
        "running consumer: no wake-up"
    );
    assert!(parker.announce_sleep(|| true));
    parker.unpark();
    parker.unpark();
    assert_eq!(wakes.load(Ordering::SeqCst), 1, "one wake-up per sleep");
    parker.end_sleep();
    // Work found on the re-check: the consumer stays up and lowers its flag.
    assert!(!parker.announce_sleep(|| false));
    parker.unpark();
    assert_eq!(wakes.load(Ordering::SeqCst), 1);
    // A chosen consumer is woken whatever its flag says.
    parker.unpark_chosen();
    assert_eq!(wakes.load(Ordering::SeqCst), 2);
}

#[test]
fn a_wake_up_of_a_chosen_consumer_before_it_parks_is_kept() {
    let parker = Arc::new(Parker::new());
    // SAFETY: the test thread is the consumer, registered once before it parks.
    unsafe { parker.register_consumer() };
    let p = Arc::clone(&parker);
    thread::spawn(move || p.unpark_chosen())
        .join()
        .expect("producer");
    // The thread's park token ends this park at once (a lost wake-up would hang here, which
    // miri reports as a deadlock).
    parker.park(|| true);
}

#[test]
fn producers_on_other_threads_wake_a_parked_consumer_for_every_item() {
    const PRODUCERS: usize = 2;
    const EACH: usize = if cfg!(miri) { 5 } else { 2_000 };
    let parker = Arc::new(Parker::new());
    let published = Arc::new(AtomicUsize::new(0));
    let consumer = {
        let (parker, published) = (Arc::clone(&parker), Arc::clone(&published));
        thread::spawn(move || {
            // SAFETY: this thread is the consumer, registered once before it parks.
            unsafe { parker.register_consumer() };
            loop {
                let seen = published.load(Ordering::Acquire);
                if seen == PRODUCERS * EACH {
                    break;
                }
                parker.park(|| published.load(Ordering::Acquire) == seen);
            }
        })
    };
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            let (parker, published) = (Arc::clone(&parker), Arc::clone(&published));
            thread::spawn(move || {
                for _ in 0..EACH {
                    // Publish the work, then wake (the parker's ground rules).
                    published.fetch_add(1, Ordering::Release);
                    parker.unpark();
                }
            })
        })
        .collect();
    producers
        .into_iter()
        .for_each(|p| p.join().expect("producer"));
    consumer.join().expect("consumer saw every item");
}
