//! Every dispatcher running real agents on its threads: senders on other threads (the
//! cross-thread queues and wake-ups), agents sending to each other (the worker's local queue
//! or the pool's local deque), raised event priorities (the sorted parts), the finish barrier
//! at shutdown, and a restart in place (control demands). Small sizes: these run under miri,
//! where they check the dispatchers' `unsafe` code (queue parts owned by one thread, slab
//! bodies, type-erased payloads and handlers) for undefined behaviour and data races.

use crate::disp::Binder;
use crate::disp::OneThreadDispatcher;
use crate::disp::prio_one_thread::PrioOneThreadDispatcher;
use crate::disp::thread_pool::{Fifo, ThreadPoolDispatcher};
use crate::supervision::{Backoff, Strategy, Supervision};
use crate::testing::TestEnv;
use crate::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox, Priority};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SENDERS: usize = 2;
const EACH: u32 = if cfg!(miri) { 6 } else { 300 };
const URGENT: u32 = if cfg!(miri) { 2 } else { 50 };
const NODES: usize = 3;
/// The `from` of the messages a node forwards to the next one.
const FORWARDED: usize = usize::MAX;

/// A numbered message from sender `from` (inline payload). `_live` counts the messages, nodes
/// and senders not dropped yet: a leak shows even where miri's leak check is off.
struct Seq {
    from: usize,
    n: u32,
    _live: Arc<()>,
}

/// A numbered message of raised event priority (boxed payload).
struct Urgent {
    from: usize,
    n: u32,
    _live: Arc<()>,
    _bulk: [u64; 4],
}

#[derive(Default)]
struct Tally {
    handled: AtomicUsize,
    out_of_order: AtomicUsize,
    finished: Mutex<Vec<usize>>,
}

/// A node of a chain: checks per-sender order per priority, forwards what senders sent to
/// the next node.
struct Node {
    index: usize,
    priority: Priority,
    next: Option<Mbox>,
    expected: HashMap<(usize, bool), u32>,
    forwarded: u32,
    tally: Arc<Tally>,
    live: Arc<()>,
}

impl Node {
    fn take(&mut self, from: usize, n: u32, urgent: bool) {
        let expected = self.expected.entry((from, urgent)).or_insert(0);
        if *expected != n {
            self.tally.out_of_order.fetch_add(1, Ordering::SeqCst);
        }
        *expected = n + 1;
        self.tally.handled.fetch_add(1, Ordering::SeqCst);
    }
}

impl Agent for Node {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.priority(self.priority);
        def.event_priority::<Urgent>(Priority::P7)?
            .on(|node: &mut Node, _: &mut Ctx<Node>, Seq { from, n, .. }| {
                node.take(from, n, false);
                if from != FORWARDED
                    && let Some(next) = &node.next
                {
                    next.send(Seq {
                        from: FORWARDED,
                        n: node.forwarded,
                        _live: Arc::clone(&node.live),
                    });
                    node.forwarded += 1;
                }
            })?
            .on(|node: &mut Node, _: &mut Ctx<Node>, u: Urgent| node.take(u.from, u.n, true))?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.tally.finished.lock().push(self.index);
    }
}

/// Runs the chain on the dispatcher `binder` makes (`None`: the default one) and checks that
/// every message was handled once, in order, and that every node finished.
fn run_chain(binder: impl FnOnce(&EnvHandle) -> Option<Binder>) {
    let env = Env::new().expect("env");
    let binder = binder(env.handle());
    let tally = Arc::new(Tally::default());
    let live = Arc::new(());
    let mut coop = env.handle().new_coop();
    let mut next = None;
    let mut nodes = Vec::new();
    for index in (0..NODES).rev() {
        let node = Node {
            index,
            priority: Priority::ALL[index % Priority::ALL.len()],
            next: next.take(),
            expected: HashMap::new(),
            forwarded: 0,
            tally: Arc::clone(&tally),
            live: Arc::clone(&live),
        };
        let mbox = match &binder {
            Some(b) => coop.add_with(node, b),
            None => coop.add(node),
        };
        next = Some(mbox.clone());
        nodes.push(mbox);
    }
    env.handle().register_coop(coop).expect("registered");
    let senders: Vec<_> = (0..SENDERS)
        .map(|from| {
            let (nodes, live) = (nodes.clone(), Arc::clone(&live));
            std::thread::spawn(move || {
                for n in 0..EACH {
                    for node in &nodes {
                        node.send(Seq {
                            from,
                            n,
                            _live: Arc::clone(&live),
                        });
                        if n < URGENT {
                            node.send(Urgent {
                                from,
                                n,
                                _live: Arc::clone(&live),
                                _bulk: [0; 4],
                            });
                        }
                    }
                }
            })
        })
        .collect();
    senders.into_iter().for_each(|s| s.join().expect("sender"));
    // Every node takes what the senders sent; all but the last also forward the `Seq`s.
    let direct = NODES * SENDERS * (EACH + URGENT) as usize;
    let expected = direct + (NODES - 1) * SENDERS * EACH as usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    while tally.handled.load(Ordering::SeqCst) < expected {
        assert!(Instant::now() < deadline, "messages lost");
        std::thread::yield_now();
    }
    env.handle().stop();
    let stats = env.run();
    assert_eq!(tally.handled.load(Ordering::SeqCst), expected);
    assert_eq!(tally.out_of_order.load(Ordering::SeqCst), 0);
    assert_eq!(tally.finished.lock().len(), NODES);
    assert_eq!(
        (stats.unhandled, stats.dead_letters, stats.panics),
        (0, 0, 0)
    );
    assert_eq!(
        Arc::strong_count(&live),
        1,
        "every node and message dropped"
    );
}

#[test]
fn one_thread_runs_every_message_once_in_per_sender_order() {
    run_chain(|_| None);
    run_chain(|env| {
        Some(
            OneThreadDispatcher::new(env, "second")
                .expect("dispatcher")
                .binder(),
        )
    });
}

#[test]
fn prio_one_thread_serves_every_lane() {
    run_chain(|env| {
        Some(
            PrioOneThreadDispatcher::builder("strict")
                .strictly_ordered()
                .build(env)
                .expect("dispatcher")
                .binder(),
        )
    });
    run_chain(|env| {
        Some(
            PrioOneThreadDispatcher::builder("rr")
                .quoted_round_robin([2; 8])
                .build(env)
                .expect("dispatcher")
                .binder(),
        )
    });
}

// Under miri this test runs with Tree Borrows and without the leak check (`scripts/test.sh`):
// crossbeam-epoch, under the pool's work-stealing deques, breaks Stacked Borrows and leaves its
// global garbage at exit (crossbeam-rs/crossbeam#545, #579). `run_chain` counts our own drops.
#[test]
fn thread_pool_runs_each_agent_on_one_worker_at_a_time() {
    for fifo in [Fifo::Agent, Fifo::Coop] {
        run_chain(|env| {
            Some(
                ThreadPoolDispatcher::builder("pool")
                    .threads(2)
                    .fifo(fifo)
                    // A small budget: queues are paused and put back often.
                    .max_demands_at_once(3)
                    .build(env)
                    .expect("pool")
                    .binder(),
            )
        });
    }
}

/// Panics on `Fail`; counts `Seq`s per incarnation.
struct Fragile {
    incarnation: usize,
    log: Arc<Mutex<Vec<(usize, u32)>>>,
}

struct Fail;

fn seq(n: u32) -> Seq {
    Seq {
        from: 0,
        n,
        _live: Arc::new(()),
    }
}

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|f: &mut Fragile, _: &mut Ctx<Fragile>, Seq { n, .. }| {
            f.log.lock().push((f.incarnation, n));
        })?
        .on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Fail| panic!("fail (expected)"))?;
        Ok(())
    }
}

#[test]
fn a_restarted_agent_is_replaced_in_its_slot_and_keeps_its_messages() {
    let mut env = TestEnv::new().expect("test env");
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut coop = env.handle().new_coop();
    coop.supervise(
        Supervision::new(Strategy::OneForOne)
            .intensity(5, Duration::from_secs(60))
            .backoff(Backoff::Fixed(Duration::from_secs(1))),
    );
    let (for_agent, mut made) = (Arc::clone(&log), 0);
    let agent = coop.add_supervised(move || {
        made += 1;
        Fragile {
            incarnation: made,
            log: Arc::clone(&for_agent),
        }
    });
    env.handle().register_coop(coop).expect("registered");
    agent.send(seq(0));
    agent.send(Fail);
    agent.send(seq(1));
    env.run_until_idle().expect("idle");
    env.advance(Duration::from_secs(1)).expect("restarted");
    agent.send(seq(2));
    env.run_until_idle().expect("idle");
    assert_eq!(*log.lock(), [(1, 0), (2, 1), (2, 2)]);
    assert_eq!(agent.stats().restarts, 1);
    env.shutdown().expect("shut down");
}
