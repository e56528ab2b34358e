//! Helpers shared by the integration tests: bounded waits (a bug fails a test instead of
//! hanging it), a gate that holds an agent inside a handler, a quiet panic hook for the panics
//! tests provoke on purpose, a runner for tests whose subject aborts the process, and the
//! dispatcher configurations every dispatcher-sensitive guarantee is checked on.

#![allow(dead_code)]

use agentry::disp::OneThreadDispatcher;
use agentry::disp::{ActiveGroupDispatcher, ActiveObjDispatcher, Binder, PrioOneThreadDispatcher};
use agentry::disp::{Fifo, ThreadPoolDispatcher};
use agentry::{Env, EnvHandle, EnvStats};
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

pub mod supervised;

/// Every blocking wait of a test gives up after this long.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// How long a test waits to show that something does *not* happen (e.g. that two agents
/// cannot meet). Only for that: a wait for something that should happen uses [`DEADLINE`].
pub const SHORT: Duration = Duration::from_millis(100);

/// Runs `env` to completion; fails if it has not stopped by the deadline (the stuck
/// environment is leaked rather than dropped: dropping it would wait for it).
pub fn run_env(env: Env) {
    if let Err(still) = env.run_for(DEADLINE) {
        std::mem::forget(still.into_env());
        panic!("the environment did not stop before the deadline");
    }
}

/// Receives from `rx`, failing after the deadline.
pub fn recv<T>(rx: &Receiver<T>) -> T {
    rx.recv_timeout(DEADLINE)
        .expect("nothing received before the deadline")
}

/// Polls `condition` until it holds, failing after the deadline.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Polls the environment's stats until `condition` holds; returns the stats that satisfied it.
pub fn wait_stats(env: &EnvHandle, what: &str, condition: impl Fn(&EnvStats) -> bool) -> EnvStats {
    let mut last = env.stats();
    wait_until(what, || {
        last = env.stats();
        condition(&last)
    });
    last
}

/// A shared, ordered record of events (hook calls, finish order, ...).
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, event: impl Into<String>) {
        self.0.lock().expect("log lock").push(event.into());
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("log lock"))
    }

    pub fn snapshot(&self) -> Vec<String> {
        self.0.lock().expect("log lock").clone()
    }
}

/// Holds an agent inside a handler: the agent calls [`Gate::pass`], the test waits for it with
/// [`GateKey::wait_entered`] and lets it go with [`GateKey::open`].
pub struct Gate {
    entered: Sender<()>,
    release: Receiver<()>,
}

/// The test's side of a [`Gate`].
pub struct GateKey {
    entered: Receiver<()>,
    release: Sender<()>,
}

pub fn gate() -> (Gate, GateKey) {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    (
        Gate {
            entered: entered_tx,
            release: release_rx,
        },
        GateKey {
            entered: entered_rx,
            release: release_tx,
        },
    )
}

impl Gate {
    /// Announces that the agent is inside, then blocks until the test opens the gate.
    pub fn pass(&self) {
        let _ = self.entered.send(());
        self.release
            .recv_timeout(DEADLINE)
            .expect("the test did not open the gate before the deadline");
    }
}

impl GateKey {
    pub fn wait_entered(&self) {
        recv(&self.entered);
    }

    pub fn open(&self) {
        let _ = self.release.send(());
    }
}

/// Panics that tests provoke on purpose carry this prefix; the hook installed by
/// [`quiet_expected_panics`] does not print them.
pub const EXPECTED: &str = "expected panic";

/// Installs (once per test binary) a panic hook that keeps provoked panics out of the output.
pub fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if !message.is_some_and(|m| m.starts_with(EXPECTED)) {
                default(info);
            }
        }));
    });
}

/// The environment variable that tells a re-run test binary which scenario to play.
pub const CHILD_MODE: &str = "AGENTRY_TEST_CHILD_MODE";

/// The scenario this process was asked to play, if it is such a child.
pub fn child_mode() -> Option<String> {
    std::env::var(CHILD_MODE).ok()
}

/// What a child test process did.
pub struct ChildOutcome {
    pub status: ExitStatus,
    pub stderr: String,
}

/// Re-runs this test binary with only `test_name`, in scenario `mode`, and waits (bounded)
/// for it to exit.
pub fn run_child(test_name: &str, mode: &str) -> ChildOutcome {
    let mut child = Command::new(std::env::current_exe().expect("current test binary"))
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_MODE, mode)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the test binary");
    let mut stderr_pipe = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stderr_pipe.read_to_string(&mut out);
        out
    });
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("child test process `{test_name}` ({mode}) did not exit before the deadline");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = reader.join().expect("stderr reader");
    ChildOutcome { status, stderr }
}

/// Asserts that the child was killed by SIGABRT and printed `expected` on stderr.
pub fn assert_aborted(outcome: &ChildOutcome, expected: &str) {
    use std::os::unix::process::ExitStatusExt;
    const SIGABRT: i32 = 6;
    assert!(
        !outcome.status.success(),
        "the child exited successfully; stderr:\n{}",
        outcome.stderr
    );
    assert_eq!(
        outcome.status.signal(),
        Some(SIGABRT),
        "the child was not aborted ({:?}); stderr:\n{}",
        outcome.status,
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains(expected),
        "stderr lacks {expected:?}:\n{}",
        outcome.stderr
    );
}

/// How the agents bound through one [`Disp`] share threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// One thread runs them all: they never run at once, and a request from one to another
    /// is `RequestError::SameThread`.
    OneThread,
    /// The agents of one coop share a queue (`Fifo::Coop`): one at a time, in one FIFO order;
    /// agents of different coops run in parallel.
    PerCoop,
    /// Each agent may run in parallel with the others.
    Parallel,
}

/// A dispatcher configuration under test.
pub struct Disp {
    /// Its readable name, for assertion messages.
    pub name: &'static str,
    pub sharing: Sharing,
    binder: Box<dyn Fn(usize) -> Binder>,
}

impl Disp {
    /// The binder for a test's agent number `agent` (the same for every agent, except that on
    /// `active_group (group per agent)` each agent gets a group of its own).
    pub fn binder(&self, agent: usize) -> Binder {
        (self.binder)(agent)
    }
}

/// Every dispatcher configuration of `env`, each with fresh dispatchers.
pub fn dispatchers(env: &EnvHandle) -> Vec<Disp> {
    use Sharing::{OneThread, Parallel, PerCoop};
    let one = |name, sharing, binder: Binder| Disp {
        name,
        sharing,
        binder: Box::new(move |_| binder.clone()),
    };
    let pool = |name: &str, threads, fifo, at_once| {
        ThreadPoolDispatcher::builder(name)
            .threads(threads)
            .fifo(fifo)
            .max_demands_at_once(at_once)
            .build(env)
            .expect("thread pool")
            .binder()
    };
    let second = OneThreadDispatcher::new(env, "second").expect("one_thread dispatcher");
    let groups = ActiveGroupDispatcher::new(env, "grp").expect("dispatcher");
    vec![
        one("one_thread (default)", OneThread, env.default_binder()),
        one("one_thread (second instance)", OneThread, second.binder()),
        one(
            "active_obj",
            Parallel,
            ActiveObjDispatcher::new(env, "ao")
                .expect("dispatcher")
                .binder(),
        ),
        one("active_group (one group)", OneThread, groups.binder("all")),
        Disp {
            name: "active_group (group per agent)",
            sharing: Parallel,
            binder: Box::new(move |agent| groups.binder(&format!("g{agent}"))),
        },
        one(
            "thread_pool (1 thread)",
            OneThread,
            pool("p1", 1, Fifo::Agent, 32),
        ),
        one(
            "thread_pool (4 threads, FIFO per agent)",
            Parallel,
            pool("p4a", 4, Fifo::Agent, 32),
        ),
        one(
            "thread_pool (4 threads, FIFO per coop)",
            PerCoop,
            pool("p4c", 4, Fifo::Coop, 32),
        ),
        one(
            "thread_pool (2 threads, 1 demand at once)",
            Parallel,
            pool("p2x1", 2, Fifo::Agent, 1),
        ),
        // The tests' agents keep the default priority: one lane of the priority queue.
        one(
            "prio_one_thread (strictly ordered)",
            OneThread,
            PrioOneThreadDispatcher::new(env, "prio-s")
                .expect("priority dispatcher")
                .binder(),
        ),
        one(
            "prio_one_thread (quoted round robin)",
            OneThread,
            PrioOneThreadDispatcher::builder("prio-rr")
                .quoted_round_robin([2; 8])
                .build(env)
                .expect("priority dispatcher")
                .binder(),
        ),
    ]
}

/// Runs `test` once per dispatcher configuration, each in a fresh environment made by
/// `make_env`.
pub fn on_every_dispatcher(make_env: impl Fn() -> Env, mut test: impl FnMut(Env, &Disp)) {
    for k in 0.. {
        let env = make_env();
        let Some(disp) = dispatchers(env.handle()).into_iter().nth(k) else {
            break;
        };
        test(env, &disp);
    }
}
