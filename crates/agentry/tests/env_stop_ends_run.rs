//! `Env::run()` returns once the environment has stopped: stopped from another thread, from an
//! agent, by autoshutdown when the last coop is gone, or at once when no coop was ever
//! registered. Every agent has finished by then.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env};
use common::{recv, run_env};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

struct Ping;
struct StopNow;

/// Answers pings; stops the environment on `StopNow`; counts its finishes.
struct Worker {
    finished: Arc<AtomicU64>,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Worker, _: &mut Ctx<Worker>, _: Ping| "pong")?;
        def.on(|_: &mut Worker, ctx: &mut Ctx<Worker>, _: StopNow| ctx.stop_env())?;
        Ok(())
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

fn worker(finished: &Arc<AtomicU64>) -> Worker {
    Worker {
        finished: finished.clone(),
    }
}

#[test]
fn stop_from_another_thread() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    let w = h.register_agent(worker(&finished)).expect("register");
    h.register_agent(worker(&finished)).expect("register");
    assert_eq!(w.request::<Ping, &str>(Ping, common::DEADLINE), Ok("pong"));
    assert!(!h.is_stopped());
    let stopper = {
        let h = h.clone();
        std::thread::spawn(move || h.stop())
    };
    run_env(env);
    stopper.join().expect("stopper");
    assert!(h.is_stopped());
    assert_eq!(finished.load(Ordering::SeqCst), 2);
    assert_eq!(h.stats().agents, 0);
    assert!(!w.is_alive());
}

#[test]
fn stop_from_an_agent() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    let w = h.register_agent(worker(&finished)).expect("register");
    h.register_agent(worker(&finished)).expect("register");
    w.send(StopNow);
    run_env(env);
    assert!(h.is_stopped());
    assert_eq!(finished.load(Ordering::SeqCst), 2);
}

#[test]
fn stopping_twice_is_harmless() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    h.register_agent(worker(&finished)).expect("register");
    h.stop();
    h.stop();
    run_env(env);
    h.stop();
    assert!(h.is_stopped());
    assert_eq!(finished.load(Ordering::SeqCst), 1);
}

#[test]
fn autoshutdown_when_the_last_coop_is_gone() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    let (gone_tx, gone_rx) = mpsc::channel();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut coop = h.new_coop();
        coop.add(worker(&finished));
        let tx = gone_tx.clone();
        coop.on_dereg(move |e| {
            let _ = tx.send(e);
        });
        ids.push(h.register_coop(coop).expect("register"));
    }
    h.deregister_coop(ids[0], DeregReason::Normal)
        .expect("deregister");
    recv(&gone_rx);
    assert!(!h.is_stopped(), "stopped while a coop was left");
    h.deregister_coop(ids[1], DeregReason::Normal)
        .expect("deregister");
    run_env(env);
    assert!(h.is_stopped());
    assert_eq!(finished.load(Ordering::SeqCst), 2);
}

#[test]
fn without_autoshutdown_the_env_outlives_its_coops() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    let (gone_tx, gone_rx) = mpsc::channel();
    let mut coop = h.new_coop();
    coop.add(worker(&finished));
    coop.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let id = h.register_coop(coop).expect("register");
    h.deregister_coop(id, DeregReason::Normal)
        .expect("deregister");
    recv(&gone_rx);
    assert_eq!(h.stats().coops, 0);
    assert!(!h.is_stopped());
    // Still usable.
    let w = h.register_agent(worker(&finished)).expect("register again");
    assert_eq!(w.request::<Ping, &str>(Ping, common::DEADLINE), Ok("pong"));
    h.stop();
    run_env(env);
    assert_eq!(finished.load(Ordering::SeqCst), 2);
}

#[test]
fn run_without_any_coop_returns() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    run_env(env);
    assert!(h.is_stopped());
}

#[test]
fn dropping_an_env_stops_it() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    h.register_agent(worker(&finished)).expect("register");
    drop(env);
    assert!(h.is_stopped());
    assert_eq!(finished.load(Ordering::SeqCst), 1);
}

#[test]
fn sends_to_a_stopped_env_are_refused_and_counted() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    let w = h.register_agent(worker(&finished)).expect("register");
    assert_eq!(w.request::<Ping, &str>(Ping, common::DEADLINE), Ok("pong"));
    h.stop();
    run_env(env);
    assert!(matches!(
        w.try_send(StopNow),
        Err(agentry::SendError::AgentGone(StopNow))
    ));
    w.send(StopNow);
    assert_eq!(
        w.request::<Ping, &str>(Ping, common::DEADLINE),
        Err(agentry::RequestError::AgentGone)
    );
    assert_eq!(h.stats().dead_letters, 3);
    assert_eq!(w.stats().refused, 3);
    assert!(matches!(
        h.register_agent(worker(&finished)),
        Err(agentry::RegisterError::EnvStopped)
    ));
}

#[test]
fn run_for_gives_a_running_env_back_when_the_time_is_up() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    h.register_agent(worker(&finished)).expect("register");
    let env = env
        .run_for(std::time::Duration::from_millis(30))
        .expect_err("nothing stops it")
        .into_env();
    assert!(!h.is_stopped());
    assert_eq!(finished.load(Ordering::SeqCst), 0, "still running");
    h.stop();
    let deadline = std::time::Instant::now() + common::DEADLINE;
    let stats = env.run_until(deadline).expect("stopped in time");
    assert_eq!((stats.coops, stats.agents), (0, 0));
    assert_eq!(finished.load(Ordering::SeqCst), 1);
}
