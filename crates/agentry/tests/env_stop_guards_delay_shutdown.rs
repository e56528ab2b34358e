//! Stop guards: `stop()` calls every guard once and waits for all of them to be removed before
//! shutting down; meanwhile coops keep running and new coops may still be registered. A guard
//! cannot be added once the environment is stopping.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, StopGuard, StopGuardError};
use common::{DEADLINE, recv};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};

struct Ping;

struct Worker {
    finished: Arc<AtomicU64>,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Worker, _: &mut Ctx<Worker>, _: Ping| "pong")?;
        Ok(())
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

/// Counts its `stop()` calls and reports them.
struct Flag {
    calls: AtomicU64,
    told: Mutex<Sender<()>>,
}

impl StopGuard for Flag {
    fn stop(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let _ = self.told.lock().expect("lock").send(());
    }
}

fn flag() -> (Arc<Flag>, mpsc::Receiver<()>) {
    let (tx, rx) = mpsc::channel();
    (
        Arc::new(Flag {
            calls: AtomicU64::new(0),
            told: Mutex::new(tx),
        }),
        rx,
    )
}

/// Runs the env on a helper thread; the receiver gets `()` when `run()` returns.
fn spawn_run(env: Env) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        env.run();
        let _ = tx.send(());
    });
    rx
}

#[test]
fn shutdown_waits_for_the_last_guard() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    let first = h
        .register_agent(Worker {
            finished: finished.clone(),
        })
        .expect("register");
    let (g1, told1) = flag();
    let (g2, told2) = flag();
    let id1 = h.add_stop_guard(g1.clone()).expect("guard 1");
    let id2 = h.add_stop_guard(g2.clone()).expect("guard 2");
    let ran = spawn_run(env);

    h.stop();
    recv(&told1);
    recv(&told2);
    h.stop();
    assert_eq!(g1.calls.load(Ordering::SeqCst), 1);
    assert_eq!(g2.calls.load(Ordering::SeqCst), 1);
    assert!(matches!(
        h.add_stop_guard(flag().0),
        Err(StopGuardError::EnvStopping)
    ));

    // Stopping, but guarded: coops keep running and new ones register.
    assert_eq!(first.request::<Ping, &str>(Ping, DEADLINE), Ok("pong"));
    let late = h
        .register_agent(Worker {
            finished: finished.clone(),
        })
        .expect("register while stopping");
    assert_eq!(late.request::<Ping, &str>(Ping, DEADLINE), Ok("pong"));

    assert!(h.remove_stop_guard(id1));
    assert!(!h.remove_stop_guard(id1), "removed twice");
    assert_eq!(late.request::<Ping, &str>(Ping, DEADLINE), Ok("pong"));
    assert!(!h.is_stopped());
    assert_eq!(h.stats().coops, 2);
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert!(
        ran.try_recv().is_err(),
        "run() returned while a guard was left"
    );

    assert!(h.remove_stop_guard(id2));
    ran.recv_timeout(DEADLINE)
        .expect("run() did not return after the last guard was removed");
    assert!(h.is_stopped());
    assert_eq!(finished.load(Ordering::SeqCst), 2);
}

/// Removes itself as soon as it is told to stop.
struct SelfRemoving {
    env: EnvHandle,
    id: OnceLock<agentry::StopGuardId>,
}

impl StopGuard for SelfRemoving {
    fn stop(&self) {
        let id = self.id.get().expect("id set after adding");
        assert!(self.env.remove_stop_guard(*id));
    }
}

#[test]
fn a_guard_may_remove_itself_from_stop() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let finished = Arc::new(AtomicU64::new(0));
    h.register_agent(Worker {
        finished: finished.clone(),
    })
    .expect("register");
    let guard = Arc::new(SelfRemoving {
        env: h.clone(),
        id: OnceLock::new(),
    });
    let id = h.add_stop_guard(guard.clone()).expect("guard");
    guard.id.set(id).expect("set once");
    h.stop();
    common::run_env(env);
    assert_eq!(finished.load(Ordering::SeqCst), 1);
}

#[test]
fn a_guard_removed_before_stop_does_not_delay_it() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let (g, told) = flag();
    let id = h.add_stop_guard(g.clone()).expect("guard");
    assert!(h.remove_stop_guard(id));
    h.register_agent(Worker {
        finished: Arc::new(AtomicU64::new(0)),
    })
    .expect("register");
    h.stop();
    common::run_env(env);
    assert_eq!(g.calls.load(Ordering::SeqCst), 0);
    assert!(told.try_recv().is_err());
}
