//! An agent handles at most one message at a time, whoever sends and through whichever mbox,
//! on every dispatcher.

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::disp::ThreadPoolDispatcher;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, MultiMbox, UserError};
use common::{recv, wait_until};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};

struct Hit;
struct Total;

/// Counts hits; flags any handler that starts while another is still running.
struct Target {
    busy: Arc<AtomicBool>,
    overlaps: Arc<AtomicU64>,
    hits: u64,
    topic: MultiMbox,
}

impl Target {
    fn enter(&mut self) {
        if self.busy.swap(true, Ordering::SeqCst) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        // Widen the window in which an overlap would be seen.
        for _ in 0..20 {
            std::hint::spin_loop();
        }
        std::thread::yield_now();
        self.hits += 1;
        self.busy.store(false, Ordering::SeqCst);
    }
}

impl Agent for Target {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|t: &mut Target, _: &mut Ctx<Target>, _: Hit| t.enter())?;
        def.on_request(|t: &mut Target, _: &mut Ctx<Target>, _: Total| t.hits)?;
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|t: &mut Target, _: &mut Ctx<Target>, _: Arc<Hit>| t.enter())?;
        Ok(())
    }
}

/// Sends `count` hits from its dispatcher, in bursts, then reports.
struct Hammer {
    target: Mbox,
    left: u32,
    done: Sender<()>,
}

struct Burst;

impl Agent for Hammer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|h: &mut Hammer, ctx: &mut Ctx<Hammer>, _: Burst| {
            for _ in 0..50 {
                if h.left == 0 {
                    break;
                }
                h.target.send(Hit);
                h.left -= 1;
            }
            if h.left == 0 {
                let _ = h.done.send(());
            } else {
                ctx.mbox().send(Burst);
            }
        })?;
        Ok(())
    }
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        ctx.mbox().send(Burst);
        Ok(())
    }
}

#[test]
fn handlers_of_one_agent_never_overlap() {
    const THREADS: u64 = 3;
    const PER_THREAD: u64 = 400;
    const PER_AGENT: u32 = 300;
    const MULTI: u64 = 200;
    const HAMMERS: u64 = 3;

    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    // Senders on dispatchers other than the one under test.
    let other = OneThreadDispatcher::new(&h, "other").expect("dispatcher");
    let other_pool = ThreadPoolDispatcher::builder("other-pool")
        .threads(2)
        .build(&h)
        .expect("pool");
    for disp in common::dispatchers(&h) {
        let name = disp.name;
        let busy = Arc::new(AtomicBool::new(false));
        let overlaps = Arc::new(AtomicU64::new(0));
        let topic = h.create_mbox();
        let mut coop = h.new_coop();
        let target = coop.add_with(
            Target {
                busy,
                overlaps: overlaps.clone(),
                hits: 0,
                topic: topic.clone(),
            },
            &disp.binder(0),
        );
        h.register_coop(coop).expect("register target");

        // Agents sending from the target's own dispatcher and from two others.
        let (done_tx, done_rx) = mpsc::channel();
        let mut coop = h.new_coop();
        for binder in [disp.binder(1), other.binder(), other_pool.binder()] {
            let hammer = Hammer {
                target: target.clone(),
                left: PER_AGENT,
                done: done_tx.clone(),
            };
            coop.add_with(hammer, &binder);
        }
        h.register_coop(coop).expect("register hammers");

        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let target = target.clone();
                std::thread::spawn(move || {
                    for _ in 0..PER_THREAD {
                        target.send(Hit);
                    }
                })
            })
            .collect();
        let multi_sender = std::thread::spawn(move || {
            for _ in 0..MULTI {
                topic.send(Hit);
            }
        });
        for t in threads {
            t.join().expect("sender thread");
        }
        multi_sender.join().expect("multi sender thread");
        for _ in 0..HAMMERS {
            recv(&done_rx);
        }

        let expected = THREADS * PER_THREAD + HAMMERS * u64::from(PER_AGENT) + MULTI;
        wait_until(&format!("the target handled every hit on {name}"), || {
            target.stats().handled >= expected
        });
        let hits: u64 = target
            .request(Total, common::DEADLINE)
            .expect("total request");
        assert_eq!(hits, expected, "{name}");
        // The agent's counter includes a message once its handler has returned.
        wait_until(&format!("the request is counted on {name}"), || {
            target.stats().handled == expected + 1
        });
        assert_eq!(
            overlaps.load(Ordering::SeqCst),
            0,
            "two handlers overlapped on {name}"
        );
        let stats = h.stats();
        assert_eq!(stats.dead_letters, 0, "{name}");
        assert_eq!(stats.unhandled, 0, "{name}");
    }
}
