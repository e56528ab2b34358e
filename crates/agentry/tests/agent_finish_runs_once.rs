//! Every registered agent's `on_start` and `on_finish` run exactly once, whatever races to
//! end it: concurrent deregistrations, a deregistration racing the environment's stop, or the
//! environment dropped without `run()`.

mod common;

use agentry::disp::one_thread::OneThreadDispatcher;
use agentry::{Agent, CoopId, Ctx, DeregReason, DeregisterError, Env, EnvHandle};
use common::{Log, recv, run_env};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};

/// Counts its own starts and finishes in slot `index` of shared arrays.
struct Counted {
    index: usize,
    starts: Arc<Vec<AtomicU64>>,
    finishes: Arc<Vec<AtomicU64>>,
}

impl Agent for Counted {
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        self.starts[self.index].fetch_add(1, Ordering::SeqCst);
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        assert_eq!(self.starts[self.index].load(Ordering::SeqCst), 1);
        self.finishes[self.index].fetch_add(1, Ordering::SeqCst);
    }
}

struct Counters {
    starts: Arc<Vec<AtomicU64>>,
    finishes: Arc<Vec<AtomicU64>>,
}

impl Counters {
    fn new(n: usize) -> Self {
        let make = || Arc::new((0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
        Counters {
            starts: make(),
            finishes: make(),
        }
    }

    fn agent(&self, index: usize) -> Counted {
        Counted {
            index,
            starts: self.starts.clone(),
            finishes: self.finishes.clone(),
        }
    }

    fn assert_each_once(&self) {
        for (i, (s, f)) in self.starts.iter().zip(self.finishes.iter()).enumerate() {
            assert_eq!(s.load(Ordering::SeqCst), 1, "on_start of agent {i}");
            assert_eq!(f.load(Ordering::SeqCst), 1, "on_finish of agent {i}");
        }
    }
}

/// Registers `coops` coops of `per_coop` agents (half on a second dispatcher).
fn populate(h: &EnvHandle, c: &Counters, coops: usize, per_coop: usize) -> Vec<CoopId> {
    let second = OneThreadDispatcher::new(h, "second").expect("dispatcher");
    (0..coops)
        .map(|k| {
            let mut coop = h.new_coop();
            for j in 0..per_coop {
                let agent = c.agent(k * per_coop + j);
                if j % 2 == 0 {
                    coop.add(agent);
                } else {
                    coop.add_with(agent, &second.binder());
                }
            }
            h.register_coop(coop).expect("register")
        })
        .collect()
}

#[test]
fn concurrent_deregistrations_finish_each_agent_once() {
    const AGENTS: usize = 5;
    const THREADS: usize = 8;
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let c = Counters::new(AGENTS);
    let (gone_tx, gone_rx) = mpsc::channel();
    let mut coop = h.new_coop();
    for i in 0..AGENTS {
        coop.add(c.agent(i));
    }
    coop.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let id = h.register_coop(coop).expect("register");

    let barrier = Arc::new(Barrier::new(THREADS));
    let results: Vec<Result<(), DeregisterError>> = (0..THREADS)
        .map(|i| {
            let h = h.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                h.deregister_coop(id, DeregReason::User(i as u32))
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .collect();

    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1, "exactly one deregistration is accepted: {results:?}");
    for r in results.iter().filter_map(|r| r.err()) {
        assert!(
            r == DeregisterError::AlreadyDeregistering(id) || r == DeregisterError::NotFound(id),
            "{r:?}"
        );
    }
    let event = recv(&gone_rx);
    assert!(matches!(event.reason, DeregReason::User(_)));
    run_env(env);
    c.assert_each_once();
    assert!(gone_rx.try_recv().is_err(), "a second deregistration event");
}

#[test]
fn deregistrations_racing_the_env_stop_finish_each_agent_once() {
    const COOPS: usize = 24;
    const PER_COOP: usize = 4;
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let c = Counters::new(COOPS * PER_COOP);
    let ids = populate(&h, &c, COOPS, PER_COOP);

    let barrier = Arc::new(Barrier::new(4));
    let mut threads = Vec::new();
    for t in 0..3 {
        let h = h.clone();
        let ids = ids.clone();
        let barrier = barrier.clone();
        threads.push(std::thread::spawn(move || {
            barrier.wait();
            // Every thread tries every coop, in a different order.
            for k in 0..ids.len() {
                let _ = h.deregister_coop(ids[(k * (t + 1)) % ids.len()], DeregReason::Normal);
            }
        }));
    }
    let stopper = {
        let h = h.clone();
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            barrier.wait();
            h.stop();
        })
    };
    for t in threads {
        t.join().expect("deregistering thread");
    }
    stopper.join().expect("stopping thread");
    run_env(env);
    c.assert_each_once();
    assert_eq!(h.stats().agents, 0);
    assert_eq!(h.stats().coops, 0);
}

#[test]
fn dropping_the_env_without_run_finishes_each_agent_once() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let c = Counters::new(30);
    populate(&h, &c, 10, 3);
    drop(env);
    assert!(h.is_stopped());
    c.assert_each_once();
}

/// Logs its lifecycle.
struct Lifecycle {
    log: Log,
}
impl Agent for Lifecycle {
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        self.log.push("start");
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log.push("finish");
    }
}

#[test]
fn an_agent_deregistered_at_once_still_starts_before_it_finishes() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let log = Log::default();
    let mut coop = h.new_coop();
    coop.add(Lifecycle { log: log.clone() });
    let id = h.register_coop(coop).expect("register");
    h.deregister_coop(id, DeregReason::Normal)
        .expect("deregister");
    run_env(env);
    assert_eq!(log.take(), vec!["start", "finish"]);
}
