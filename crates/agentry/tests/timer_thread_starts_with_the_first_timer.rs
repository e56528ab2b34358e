//! An environment starts its timer thread when the first timer is scheduled, not before:
//! agents that use no timer cost no timer thread. Once started, timers behave as always,
//! and the thread ends with the environment. (One test in this binary: it counts the
//! process's threads by name.)

mod common;

use agentry::testing::TestEnv;
use agentry::{Agent, Ctx, Define, DefineError, Env};
use common::recv;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

struct Ping;
struct Later(u32);

/// Answers `Ping`; on `Later(n)` schedules `Later(n - 1)` to itself 5 ms later, and reports
/// `n` when it reaches 0.
struct Worker {
    done: Sender<&'static str>,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, Ping| {
            let _ = w.done.send("ping");
        })?
        .on(|w: &mut Worker, ctx: &mut Ctx<Worker>, Later(n): Later| {
            if n == 0 {
                let _ = w.done.send("timers done");
            } else {
                ctx.send_delayed(ctx.mbox(), Duration::from_millis(5), Later(n - 1))
                    .detach();
            }
        })?;
        Ok(())
    }
}

/// Threads of this process named `agentry-timer`.
fn timer_threads() -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "agentry-timer")
        .count()
}

#[test]
fn the_timer_thread_starts_with_the_first_timer_and_ends_with_the_environment() {
    assert_eq!(timer_threads(), 0);
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let (done, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    let worker = coop.add(Worker { done });
    h.register_coop(coop).expect("register");
    let runner = std::thread::spawn(move || env.run());

    worker.send(Ping);
    assert_eq!(recv(&rx), "ping");
    assert_eq!(timer_threads(), 0, "no timer yet, no timer thread");

    worker.send(Later(3));
    assert_eq!(recv(&rx), "timers done");
    assert_eq!(
        timer_threads(),
        1,
        "one thread for the environment's timers"
    );

    h.stop();
    let stats = runner.join().expect("env thread");
    assert_eq!((stats.timers, stats.dropped_on_shutdown), (0, 0));
    assert_eq!(timer_threads(), 0, "the thread ended with the environment");

    // A manual clock with no timer ever scheduled: an advance has nothing to send and
    // returns (nor does it start the thread).
    let mut test = TestEnv::new().expect("test env");
    test.advance(Duration::from_secs(1)).expect("advance");
    assert_eq!(timer_threads(), 0);
    drop(test);

    // A timer scheduled after the environment stopped is revoked and counted; no thread.
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    h.stop();
    let stats = env.run();
    let late = h.send_delayed(&h.create_mbox(), Duration::from_millis(1), Ping);
    drop(late);
    assert_eq!(timer_threads(), 0);
    assert_eq!(stats.timers, 0);
    assert_eq!(h.stats().dropped_on_shutdown, 1);
}
