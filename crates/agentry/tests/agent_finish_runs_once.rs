//! Every registered agent's `on_start` and `on_finish` run exactly once, whatever races to
//! end it: concurrent deregistrations, a deregistration racing the environment's stop, or the
//! environment dropped without `run()` — on every dispatcher.

mod common;

use agentry::disp::Binder;
use agentry::disp::OneThreadDispatcher;
use agentry::{Agent, CoopId, Ctx, DeregReason, DeregisterError, Env, EnvHandle, UserError};
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
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.starts[self.index].fetch_add(1, Ordering::SeqCst);
        Ok(())
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

    fn assert_each_once(&self, on: &str) {
        for (i, (s, f)) in self.starts.iter().zip(self.finishes.iter()).enumerate() {
            assert_eq!(s.load(Ordering::SeqCst), 1, "on_start of agent {i} on {on}");
            assert_eq!(
                f.load(Ordering::SeqCst),
                1,
                "on_finish of agent {i} on {on}"
            );
        }
    }
}

/// Registers `coops` coops of `per_coop` agents, agent `j` of each bound with `binder(j)`.
fn populate(
    h: &EnvHandle,
    c: &Counters,
    coops: usize,
    per_coop: usize,
    binder: &dyn Fn(usize) -> Binder,
) -> Vec<CoopId> {
    (0..coops)
        .map(|k| {
            let mut coop = h.new_coop();
            for j in 0..per_coop {
                coop.add_with(c.agent(k * per_coop + j), &binder(j));
            }
            h.register_coop(coop).expect("register")
        })
        .collect()
}

/// Half the agents on the default dispatcher, half on a second one.
fn two_one_threads(h: &EnvHandle) -> impl Fn(usize) -> Binder {
    let (default, second) = (
        h.default_binder(),
        OneThreadDispatcher::new(h, "second")
            .expect("dispatcher")
            .binder(),
    );
    move |j| if j % 2 == 0 { &default } else { &second }.clone()
}

/// Deregisters every coop from three threads while a fourth stops the environment.
fn race_deregistrations_with_stop(h: &EnvHandle, ids: &[CoopId]) {
    let barrier = Arc::new(Barrier::new(4));
    let mut threads = Vec::new();
    for t in 0..3 {
        let h = h.clone();
        let ids = ids.to_vec();
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
    c.assert_each_once("one_thread");
    assert!(gone_rx.try_recv().is_err(), "a second deregistration event");
}

#[test]
fn deregistrations_racing_the_env_stop_finish_each_agent_once() {
    const COOPS: usize = 24;
    const PER_COOP: usize = 4;
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let c = Counters::new(COOPS * PER_COOP);
    let ids = populate(&h, &c, COOPS, PER_COOP, &two_one_threads(&h));
    race_deregistrations_with_stop(&h, &ids);
    run_env(env);
    c.assert_each_once("one_thread");
    assert_eq!(h.stats().agents, 0);
    assert_eq!(h.stats().coops, 0);
}

#[test]
fn dropping_the_env_without_run_finishes_each_agent_once() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let c = Counters::new(30);
    populate(&h, &c, 10, 3, &two_one_threads(&h));
    drop(env);
    assert!(h.is_stopped());
    c.assert_each_once("one_thread");
}

/// Logs its lifecycle.
struct Lifecycle {
    log: Log,
}
impl Agent for Lifecycle {
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.log.push("start");
        Ok(())
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

/// The three ways to end an agent above that do not depend on a single dispatcher — racing
/// deregistrations and stop, dropping the environment, deregistering at once — on every
/// dispatcher.
#[test]
fn each_agent_starts_and_finishes_once_on_every_dispatcher() {
    const COOPS: usize = 8;
    const PER_COOP: usize = 3;
    let new_env = || Env::new().expect("env");
    common::on_every_dispatcher(new_env, |env, disp| {
        let h = env.handle().clone();
        let c = Counters::new(COOPS * PER_COOP);
        let ids = populate(&h, &c, COOPS, PER_COOP, &|j| disp.binder(j));
        race_deregistrations_with_stop(&h, &ids);
        run_env(env);
        c.assert_each_once(disp.name);
        assert_eq!(h.stats().agents, 0, "{}", disp.name);
        assert_eq!(h.stats().coops, 0, "{}", disp.name);
    });
    common::on_every_dispatcher(new_env, |env, disp| {
        let h = env.handle().clone();
        let c = Counters::new(COOPS * PER_COOP);
        populate(&h, &c, COOPS, PER_COOP, &|j| disp.binder(j));
        drop(env);
        assert!(h.is_stopped(), "{}", disp.name);
        c.assert_each_once(disp.name);
    });
    common::on_every_dispatcher(new_env, |env, disp| {
        let h = env.handle().clone();
        let log = Log::default();
        let mut coop = h.new_coop();
        coop.add_with(Lifecycle { log: log.clone() }, &disp.binder(0));
        let id = h.register_coop(coop).expect("register");
        h.deregister_coop(id, DeregReason::Normal)
            .expect("deregister");
        run_env(env);
        assert_eq!(log.take(), vec!["start", "finish"], "{}", disp.name);
    });
}
