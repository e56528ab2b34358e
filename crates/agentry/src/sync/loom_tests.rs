//! Model checks of the lock-free code: every interleaving loom can produce with at most
//! `LOOM_MAX_PREEMPTIONS` preemptions (default [`PREEMPTIONS`]; the bound tokio uses in CI is
//! 2; exhaustive search of three threads with parking does not finish in reasonable time).

use super::mpsc::{Apart, BLOCK_CAP, MpscQueue, Padded, SMALL_BLOCK_CAP};
use super::parker::Parker;
use super::set_once::{Flag, SetOnce};
use loom::sync::Arc;
use loom::thread;

/// Pops until `n` values arrived, parking through the sleep protocol when nothing is ready
/// (as the dispatcher worker does; it never spins on a producer).
fn consume<const FIRST: usize>(
    queue: &MpscQueue<(usize, usize), BLOCK_CAP, Padded, FIRST>,
    parker: &Parker,
    n: usize,
) -> Vec<(usize, usize)> {
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

/// The bound when `LOOM_MAX_PREEMPTIONS` does not set one (`scripts/test.sh` sets 2 for the
/// suite's time budget; run with 3 before changing the lock-free code).
const PREEMPTIONS: usize = 3;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    builder.check(f);
}

#[test]
fn two_producers_one_consumer_keep_per_producer_order_and_never_lose_a_wakeup() {
    model(|| {
        let queue = Arc::new(MpscQueue::<_>::new());
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
        let queue = Arc::new(MpscQueue::<_>::new());
        let marker = Arc::new(());
        let q = queue.clone();
        let m = marker.clone();
        let producer = thread::spawn(move || q.push(m));
        producer.join().expect("producer");
        drop(queue);
        assert_eq!(Arc::strong_count(&marker), 1);
    });
}

/// A queue served by a pool: items plus its run state (what the thread pool's agent queue is,
/// with its block size and layout).
struct Served {
    items: MpscQueue<usize, SMALL_BLOCK_CAP, Apart>,
    state: super::run_state::RunState,
    /// Set while a thread runs the queue: two at once would be a violation.
    running: loom::sync::atomic::AtomicBool,
}

/// Takes one queue from `ready` and runs it as a pool worker does; false if none was ready.
fn serve_one(
    ready: &loom::sync::Mutex<std::collections::VecDeque<Arc<Served>>>,
    taken: &loom::sync::atomic::AtomicUsize,
) -> bool {
    let Some(q) = ready.lock().expect("ready").pop_front() else {
        return false;
    };
    assert!(q.state.start(), "a queue taken from `ready` is scheduled");
    run_held(&q, ready, taken);
    true
}

#[test]
fn a_queue_runs_on_one_thread_at_a_time_and_no_push_is_left_unscheduled() {
    use loom::sync::Mutex;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::collections::VecDeque;

    model(|| {
        let served = Arc::new(Served {
            items: MpscQueue::new(),
            state: super::run_state::RunState::new(),
            running: AtomicBool::new(false),
        });
        let ready: Arc<Mutex<VecDeque<Arc<Served>>>> = Arc::new(Mutex::new(VecDeque::new()));
        let taken = Arc::new(AtomicUsize::new(0));
        const ITEMS: usize = 2;
        let producers: Vec<_> = (0..ITEMS)
            .map(|i| {
                let (served, ready) = (served.clone(), ready.clone());
                thread::spawn(move || {
                    served.items.push(i);
                    if served.state.notify() {
                        ready.lock().expect("ready").push_back(served.clone());
                    }
                })
            })
            .collect();
        // Two workers race the producers (and each other) for a bounded number of tries.
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (ready, taken) = (ready.clone(), taken.clone());
                thread::spawn(move || {
                    for _ in 0..2 {
                        serve_one(&ready, &taken);
                    }
                })
            })
            .collect();
        for t in producers.into_iter().chain(workers) {
            t.join().expect("thread");
        }
        // Whatever is still scheduled is served now; an item pushed but never scheduled would
        // stay in the queue with nothing ready to run it.
        while serve_one(&ready, &taken) {}
        assert_eq!(
            taken.load(Ordering::Acquire),
            ITEMS,
            "every pushed item was scheduled and taken"
        );
    });
}

/// Runs a queue whose run state the calling thread holds (taken by `start` or `claim`), as a
/// pool worker does.
fn run_held(
    q: &Arc<Served>,
    ready: &loom::sync::Mutex<std::collections::VecDeque<Arc<Served>>>,
    taken: &loom::sync::atomic::AtomicUsize,
) {
    use loom::sync::atomic::Ordering;
    assert!(
        !q.running.swap(true, Ordering::AcqRel),
        "run by two threads at once"
    );
    // SAFETY: the run state makes this thread the queue's only consumer.
    while let Some(_item) = unsafe { q.items.pop() } {
        taken.fetch_add(1, Ordering::AcqRel);
    }
    q.running.store(false, Ordering::Release);
    if q.state.stop() {
        ready.lock().expect("ready").push_back(q.clone());
    }
}

/// A worker pushes and claims the queue for its `next` slot (`RunState::claim`) while another
/// producer pushes and a second worker serves ready queues; the claiming worker then runs the
/// queue itself, or (`release`) hands it to the ready queue as a displaced slot does. Never
/// two runners, every item taken.
#[test]
fn a_queue_claimed_by_a_producing_worker_runs_once_at_a_time_and_loses_no_push() {
    use loom::sync::Mutex;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::collections::VecDeque;

    for release in [false, true] {
        model(move || {
            let served = Arc::new(Served {
                items: MpscQueue::new(),
                state: super::run_state::RunState::new(),
                running: AtomicBool::new(false),
            });
            let ready: Arc<Mutex<VecDeque<Arc<Served>>>> = Arc::new(Mutex::new(VecDeque::new()));
            let taken = Arc::new(AtomicUsize::new(0));
            let producer = {
                let (served, ready) = (served.clone(), ready.clone());
                thread::spawn(move || {
                    served.items.push(0);
                    if served.state.notify() {
                        ready.lock().expect("ready").push_back(served.clone());
                    }
                })
            };
            let claimer = {
                let (served, ready, taken) = (served.clone(), ready.clone(), taken.clone());
                thread::spawn(move || {
                    served.items.push(1);
                    if !served.state.claim() {
                        return;
                    }
                    if release {
                        served.state.pause();
                        ready.lock().expect("ready").push_back(served.clone());
                    } else {
                        run_held(&served, &ready, &taken);
                    }
                })
            };
            let worker = {
                let (ready, taken) = (ready.clone(), taken.clone());
                thread::spawn(move || {
                    serve_one(&ready, &taken);
                })
            };
            for t in [producer, claimer, worker] {
                t.join().expect("thread");
            }
            while serve_one(&ready, &taken) {}
            assert_eq!(taken.load(Ordering::Acquire), 2, "every pushed item taken");
        });
    }
}

/// With loom's two-slot blocks, four values span three blocks: producers install blocks
/// (one of them possibly the consumer's recycled spare) while the consumer retires them.
#[test]
fn two_producers_cross_block_boundaries_and_blocks_are_recycled() {
    two_producers_cross_block_boundaries::<0>();
}

/// The same with a queue whose first block is its own (a pool agent's,
/// `disp/thread_pool/agent_queue.rs`): that block is recycled like the others, a heap block is
/// freed in its place when it is the spare already, and it is never freed on its own.
#[test]
fn a_first_block_of_its_own_is_recycled_and_never_freed_on_its_own() {
    two_producers_cross_block_boundaries::<1>();
}

fn two_producers_cross_block_boundaries<const FIRST: usize>() {
    model(|| {
        let queue = Arc::new(MpscQueue::<(usize, usize), BLOCK_CAP, Padded, FIRST>::new());
        let parker = Arc::new(Parker::new());
        let consumer = {
            let (queue, parker) = (queue.clone(), parker.clone());
            thread::spawn(move || {
                // SAFETY: called once, by the consumer, before it parks.
                unsafe { parker.register_consumer() };
                consume(&queue, &parker, 4)
            })
        };
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let (queue, parker) = (queue.clone(), parker.clone());
                thread::spawn(move || {
                    for i in 0..2 {
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
        for p in 0..2 {
            let from_p: Vec<usize> = got
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, i)| *i)
                .collect();
            assert_eq!(from_p, vec![0, 1], "producer {p}'s values in order");
        }
        // The queue is usable after recycling: one more round trip through the spare.
        queue.push((9, 9));
        // SAFETY: the consumer has finished; this thread is now the only consumer.
        assert_eq!(unsafe { queue.pop() }, Some((9, 9)));
        // A value left in the queue is released with it.
        queue.push((9, 10));
    });
}

/// A partially consumed block, values in a following block and a spare are all released.
#[test]
fn drop_after_partial_consumption_across_blocks() {
    model(|| {
        let queue = Arc::new(MpscQueue::<_>::new());
        let marker = Arc::new(());
        let producer = {
            let (q, m) = (queue.clone(), marker.clone());
            thread::spawn(move || {
                for _ in 0..5 {
                    q.push(m.clone());
                }
            })
        };
        let mut taken = 0;
        while taken < 3 {
            // SAFETY: this thread is the only consumer.
            match unsafe { queue.pop() } {
                Some(v) => {
                    drop(v);
                    taken += 1;
                }
                None => thread::yield_now(),
            }
        }
        producer.join().expect("producer");
        drop(queue);
        assert_eq!(Arc::strong_count(&marker), 1);
    });
}

/// The thread pool's idle list in miniature: a producer *chooses* a parked (or parking)
/// worker and counts on it to look for work, so the worker must wake even when it was chosen
/// before it raised its sleeping flag and finds nothing to do (the work it was chosen for
/// went to another worker). With the plain `unpark` (which skips a consumer not flagged as
/// sleeping) loom finds the interleaving where it then sleeps forever.
#[test]
fn a_chosen_consumer_wakes_even_if_chosen_before_it_announced_its_sleep() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    model(|| {
        let parker = Arc::new(Parker::new());
        // SAFETY: this thread is the consumer, registered before it parks.
        unsafe { parker.register_consumer() };
        // The consumer is on the idle list before the producer looks (no spinning in a model).
        let idle = Arc::new(AtomicBool::new(true));
        let producer = {
            let parker = Arc::clone(&parker);
            let idle = Arc::clone(&idle);
            thread::spawn(move || {
                if idle.swap(false, Ordering::AcqRel) {
                    parker.unpark_chosen();
                }
            })
        };
        // Nothing left to do: it may sleep, and must be woken — whether the producer chose it
        // before, during or after its announcement.
        parker.park(|| true);
        producer.join().expect("producer");
    });
}

// The timer token's barrier (`timer/token.rs`). The timer module is not part of the crate
// under `cfg(loom)`; its token, which uses only `crate::sync`, is compiled in here.
#[path = "../timer/token.rs"]
mod token;

/// A delivery as the dispatcher runs it: begin, the handler (which must not start after the
/// cancel returned), end.
fn deliver(
    token: &token::TimerToken,
    running: &loom::sync::atomic::AtomicUsize,
    returned: &loom::sync::atomic::AtomicBool,
) {
    use loom::sync::atomic::Ordering;
    if token.begin() {
        running.fetch_add(1, Ordering::Relaxed);
        assert!(
            !returned.load(Ordering::Relaxed),
            "a handler started after cancel returned"
        );
        running.fetch_sub(1, Ordering::Relaxed);
        token.end();
    }
}

#[test]
fn no_handler_runs_or_starts_once_cancel_returned() {
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    model(|| {
        let token = Arc::new(token::TimerToken::default());
        let running = Arc::new(AtomicUsize::new(0));
        let returned = Arc::new(AtomicBool::new(false));
        let dispatcher = {
            let (token, running, returned) = (token.clone(), running.clone(), returned.clone());
            thread::spawn(move || deliver(&token, &running, &returned))
        };
        token.revoke();
        token.wait_for_deliveries(0);
        assert_eq!(running.load(Ordering::Relaxed), 0, "a handler still runs");
        returned.store(true, Ordering::Relaxed);
        dispatcher.join().expect("dispatcher");
    });
}

/// A multi mbox's timer: two subscribers' deliveries of one token may be in flight at once.
#[test]
fn cancel_waits_for_every_delivery_in_flight() {
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    model(|| {
        let token = Arc::new(token::TimerToken::default());
        let running = Arc::new(AtomicUsize::new(0));
        let returned = Arc::new(AtomicBool::new(false));
        let dispatchers: Vec<_> = (0..2)
            .map(|_| {
                let (token, running, returned) = (token.clone(), running.clone(), returned.clone());
                thread::spawn(move || deliver(&token, &running, &returned))
            })
            .collect();
        token.revoke();
        token.wait_for_deliveries(0);
        assert_eq!(running.load(Ordering::Relaxed), 0, "a handler still runs");
        returned.store(true, Ordering::Relaxed);
        for d in dispatchers {
            d.join().expect("dispatcher");
        }
    });
}

/// A handler cancelling its own timer waits for the other delivery, not for itself.
#[test]
fn a_handler_cancelling_its_own_timer_waits_only_for_the_others() {
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    model(|| {
        let token = Arc::new(token::TimerToken::default());
        let running = Arc::new(AtomicUsize::new(0));
        let returned = Arc::new(AtomicBool::new(false));
        let other = {
            let (token, running, returned) = (token.clone(), running.clone(), returned.clone());
            thread::spawn(move || deliver(&token, &running, &returned))
        };
        assert!(token.begin(), "not revoked yet");
        token.revoke();
        token.wait_for_deliveries(1);
        assert_eq!(
            running.load(Ordering::Relaxed),
            0,
            "the other handler still runs"
        );
        returned.store(true, Ordering::Relaxed);
        token.end();
        other.join().expect("other");
    });
}

/// The parking path: the delivery began before the cancel (as the dispatcher's check passed
/// just before it), so the canceller must sleep and be woken by the delivery's end — whether
/// the end comes before, while or after it announces its sleep.
#[test]
fn a_canceller_waiting_for_a_running_handler_is_always_woken() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    model(|| {
        let token = Arc::new(token::TimerToken::default());
        let done = Arc::new(AtomicBool::new(false));
        assert!(token.begin(), "not revoked yet");
        let handler = {
            let (token, done) = (token.clone(), done.clone());
            thread::spawn(move || {
                done.store(true, Ordering::Relaxed);
                token.end();
            })
        };
        token.revoke();
        token.wait_for_deliveries(0);
        assert!(
            done.load(Ordering::Relaxed),
            "the handler's effects are visible"
        );
        handler.join().expect("handler");
    });
}

#[test]
fn a_value_set_once_is_read_whole_or_not_at_all_and_a_second_setter_is_refused() {
    model(|| {
        let cell: Arc<SetOnce<(u64, u64)>> = Arc::new(SetOnce::new());
        let setters: Vec<_> = (0..2u64)
            .map(|v| {
                let cell = cell.clone();
                thread::spawn(move || cell.set((v, v * 10), Flag::NONE).is_ok())
            })
            .collect();
        // A reader racing the setters sees nothing, or one setter's whole value.
        if let Some(&(v, w)) = cell.get() {
            assert_eq!(w, v * 10);
        }
        let won: usize = setters
            .into_iter()
            .map(|s| usize::from(s.join().expect("setter")))
            .sum();
        assert_eq!(won, 1, "exactly one setter wins");
        let &(v, w) = cell.get().expect("set after both setters returned");
        assert_eq!(w, v * 10);
    });
}

#[test]
fn a_flag_changed_while_the_value_is_set_loses_neither_the_value_nor_the_flag() {
    const OPEN: Flag = Flag::nth(0);
    const CLOSING: Flag = Flag::nth(1);
    model(|| {
        let cell: Arc<SetOnce<(u64, u64)>> = Arc::new(SetOnce::new());
        let setter = {
            let cell = cell.clone();
            thread::spawn(move || assert!(cell.set((3, 30), OPEN).is_ok()))
        };
        let closer = {
            let cell = cell.clone();
            thread::spawn(move || assert!(cell.update(CLOSING, OPEN), "raised once"))
        };
        // A reader that finds the flag open finds the whole value.
        if let Some(&(v, w)) = cell.get_if(OPEN) {
            assert_eq!((v, w), (3, 30));
        }
        setter.join().expect("setter");
        closer.join().expect("closer");
        assert_eq!(
            cell.get_if(CLOSING),
            Some(&(3, 30)),
            "SET and CLOSING both kept"
        );
        assert!(!cell.update(CLOSING, Flag::NONE), "CLOSING stays raised");
    });
}

/// What two threads share through a [`BlockArc`]: a cell only the second thread writes, before
/// it lets go of its reference, and a count of drops.
struct Written {
    by_second: loom::cell::UnsafeCell<u64>,
    drops: Arc<loom::sync::atomic::AtomicUsize>,
}

// SAFETY: `by_second` is written by one thread only, before that thread's reference is
// dropped; the drop (the only other access) comes after every reference is gone.
unsafe impl Sync for Written {}

impl Drop for Written {
    fn drop(&mut self) {
        // Whichever thread drops it sees the second thread's write: the count's release and
        // acquire order it (loom reports a race otherwise).
        let seen = self.by_second.with(|v| {
            // SAFETY: no reference is left, so no thread writes any more.
            unsafe { *v }
        });
        assert_eq!(seen, 7);
        self.drops
            .fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_shared_block_is_dropped_once_after_every_use_by_the_last_reference() {
    use super::blocks::BlockArc;
    model(|| {
        let drops = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let first = BlockArc::new(Written {
            by_second: loom::cell::UnsafeCell::new(0),
            drops: Arc::clone(&drops),
        });
        let second = first.clone();
        let t = thread::spawn(move || {
            // SAFETY: this thread is the only writer (`Written`'s `Sync`).
            second.by_second.with_mut(|v| unsafe { *v = 7 });
            drop(second);
        });
        drop(first);
        t.join().expect("the second thread ran");
        assert_eq!(drops.load(loom::sync::atomic::Ordering::SeqCst), 1);
    });
}
