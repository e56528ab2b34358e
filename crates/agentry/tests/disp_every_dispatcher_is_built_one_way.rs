//! Every dispatcher is built the same way — `X::builder(name)`, options, `.build(&env)`, or
//! `X::new(&env, name)` for the defaults — and what either path builds runs agents: each
//! agent bound to it handles all its messages on the dispatcher's own thread.

mod common;

use agentry::disp::{
    ActiveGroupDispatcher, ActiveObjDispatcher, Binder, Fifo, OneThreadDispatcher,
    PrioOneThreadDispatcher, ThreadPoolDispatcher,
};
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const HITS: usize = 100;

struct Hit;

/// What a counter saw: its messages, and the threads that ran them.
#[derive(Default)]
struct Seen {
    hits: AtomicUsize,
    threads: Mutex<Vec<String>>,
}

struct Counter(Arc<Seen>);

impl Agent for Counter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Counter, _: &mut Ctx<Counter>, _: Hit| {
            let thread = std::thread::current().name().unwrap_or("?").to_owned();
            let mut threads = c.0.threads.lock().expect("threads");
            if !threads.contains(&thread) {
                threads.push(thread);
            }
            c.0.hits.fetch_add(1, Ordering::Relaxed);
        })?;
        Ok(())
    }
}

/// Binds a counter with `binder`, sends it [`HITS`] messages and returns what it saw.
fn send_hits(h: &EnvHandle, binder: &Binder) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let mut coop = h.new_coop();
    let counter = coop.add_with(Counter(Arc::clone(&seen)), binder);
    h.register_coop(coop).expect("registered");
    for _ in 0..HITS {
        counter.send(Hit);
    }
    seen
}

/// Every dispatcher of the crate, each built through its builder (with options) and through
/// `new`, by the name its threads carry.
fn every_dispatcher(h: &EnvHandle) -> Vec<(&'static str, Binder)> {
    let groups = ActiveGroupDispatcher::builder("b-groups")
        .build(h)
        .expect("active_group");
    vec![
        (
            "b-one",
            OneThreadDispatcher::builder("b-one")
                .build(h)
                .expect("one_thread")
                .binder(),
        ),
        (
            "n-one",
            OneThreadDispatcher::new(h, "n-one")
                .expect("one_thread")
                .binder(),
        ),
        (
            "b-obj",
            ActiveObjDispatcher::builder("b-obj")
                .build(h)
                .expect("active_obj")
                .binder(),
        ),
        (
            "n-obj",
            ActiveObjDispatcher::new(h, "n-obj")
                .expect("active_obj")
                .binder(),
        ),
        ("b-groups", groups.binder("g")),
        (
            "n-groups",
            ActiveGroupDispatcher::new(h, "n-groups")
                .expect("active_group")
                .binder("g"),
        ),
        (
            "b-pool",
            ThreadPoolDispatcher::builder("b-pool")
                .threads(2)
                .fifo(Fifo::Coop)
                .affinity(false)
                .max_demands_at_once(4)
                .build(h)
                .expect("thread_pool")
                .binder(),
        ),
        (
            "n-pool",
            ThreadPoolDispatcher::new(h, "n-pool")
                .expect("thread_pool")
                .binder(),
        ),
        (
            "b-strict",
            PrioOneThreadDispatcher::builder("b-strict")
                .strictly_ordered()
                .build(h)
                .expect("prio_one_thread")
                .binder(),
        ),
        (
            "b-rr",
            PrioOneThreadDispatcher::builder("b-rr")
                .quoted_round_robin([1, 1, 1, 1, 2, 2, 3, 4])
                .build(h)
                .expect("prio_one_thread")
                .binder(),
        ),
        (
            "n-prio",
            PrioOneThreadDispatcher::new(h, "n-prio")
                .expect("prio_one_thread")
                .binder(),
        ),
    ]
}

#[test]
fn every_dispatcher_built_either_way_runs_its_agents() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let runs: Vec<_> = every_dispatcher(h)
        .into_iter()
        .map(|(name, binder)| (name, send_hits(h, &binder)))
        .collect();
    for (name, seen) in &runs {
        common::wait_until(&format!("{name}'s agent handled its messages"), || {
            seen.hits.load(Ordering::Relaxed) == HITS
        });
        let threads = seen.threads.lock().expect("threads");
        assert!(
            threads
                .iter()
                .all(|t| t.starts_with(&format!("agentry-{name}"))),
            "{name}'s agent ran on its dispatcher's threads, not on {threads:?}"
        );
    }
    h.stop();
    common::run_env(env);
}

#[test]
fn the_driven_dispatcher_is_built_by_the_same_builder() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let (driven, mut driver) = OneThreadDispatcher::builder("b-driven")
        .build_driven(&h, || {})
        .expect("driven dispatcher");
    let seen = send_hits(&h, &driven.binder());
    common::wait_until("the driven agent handled its messages", || {
        driver.run();
        seen.hits.load(Ordering::Relaxed) == HITS
    });
    let here = std::thread::current().name().map(str::to_owned);
    assert_eq!(
        *seen.threads.lock().expect("threads"),
        [here.unwrap_or_else(|| "?".into())],
        "the driven agent ran on the thread that drives it"
    );
    h.stop();
    let running = std::thread::spawn(move || common::run_env(env));
    common::wait_until("the driver was closed", || {
        driver.run();
        driver.is_closed()
    });
    while driver.run() > 0 {}
    drop(driver);
    running.join().expect("env thread");
}
