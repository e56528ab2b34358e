//! `idle`: an environment with live agents on two worker threads (a `one_thread` dispatcher
//! and a 2-thread pool, plus the timer thread) and no work for a while; reports the CPU the
//! process used meanwhile, in percent of one core (target: < 1 %).
//!
//! CPU time is the sum over the process's threads of `/proc/self/task/*/schedstat` (time on a
//! CPU, in ns), read before and after the idle period; the runner thread sleeps meanwhile. The
//! benchmark verifies that the sleeping workers still answer: after the idle period each agent
//! gets a message and must handle it.

use super::support::{Tally, env, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::disp::ThreadPoolDispatcher;
use agentry::{Agent, Ctx, Define, DefineError};
use std::time::{Duration, Instant};

pub static BENCH: BenchDef = BenchDef {
    id: "idle",
    description: "env with 2 workers and no work: CPU % of one core used while idle (target < 1 %)",
    cases,
    charts: &[ChartKind::Bars],
};

/// The message that checks a worker is still awake enough to answer.
struct Poke;

struct Sleeper {
    answered: Tally,
}

impl Agent for Sleeper {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Sleeper, _: &mut Ctx<Sleeper>, Poke| s.answered.add(1))?;
        Ok(())
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let idle = scale.pick(
        Duration::from_millis(100),
        Duration::from_secs(1),
        Duration::from_secs(10),
    );
    let millis = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    vec![
        Case::builder(format!("one_thread + thread_pool(2), {millis} ms idle"))
            .dispatcher("one_thread+thread_pool")
            .threads(3)
            .param("idle_ms", millis)
            .phase(PhaseSpec::ops("idle"))
            .reps(3)
            .runner(move || run_idle(idle)),
    ]
}

fn run_idle(idle: Duration) -> Result<Sample, BenchError> {
    let env = env()?;
    let handle = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("idle-pool")
        .threads(2)
        .build(&handle)
        .map_err(setup("build the pool"))?;
    let answered = Tally::default();
    let mut coop = handle.new_coop();
    let on_default = coop.add(Sleeper {
        answered: answered.clone(),
    });
    let on_pool = coop.add_with(
        Sleeper {
            answered: answered.clone(),
        },
        &pool.binder(),
    );
    handle.register_coop(coop).map_err(setup("register"))?;
    let runner = std::thread::spawn(move || env.run());
    // Let registration and the start events settle before measuring.
    std::thread::sleep(Duration::from_millis(20));

    let before = process_cpu_time()?;
    let start = Instant::now();
    std::thread::sleep(idle);
    let wall = start.elapsed();
    let used = process_cpu_time()?.saturating_sub(before);

    on_default.send(Poke);
    on_pool.send(Poke);
    while answered.get() < 2 && start.elapsed() < wall + Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    handle.stop();
    let stats = runner
        .join()
        .map_err(|_| BenchError::Harness("the environment thread panicked".into()))?;
    verify_eq("pokes answered after the idle period", 2, answered.get())?;
    verify_eq("unhandled messages", 0, stats.unhandled)?;

    let cpu_pct = 100.0 * used.as_secs_f64() / wall.as_secs_f64();
    Ok(Sample::new()
        .phase("idle", wall, 1)
        .metric("cpu_pct_of_one_core", cpu_pct))
}

/// CPU time used so far by the live threads of this process.
pub(crate) fn process_cpu_time() -> Result<Duration, BenchError> {
    let unreadable = |e: std::io::Error| BenchError::Harness(format!("/proc/self/task: {e}"));
    let mut total_ns: u64 = 0;
    for task in std::fs::read_dir("/proc/self/task").map_err(unreadable)? {
        let path = task.map_err(unreadable)?.path().join("schedstat");
        // A thread may exit between listing and reading; it no longer uses CPU.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let on_cpu = text
            .split_whitespace()
            .next()
            .and_then(|field| field.parse::<u64>().ok())
            .ok_or_else(|| {
                BenchError::Harness(format!("unexpected {}: {text:?}", path.display()))
            })?;
        total_ns += on_cpu;
    }
    Ok(Duration::from_nanos(total_ns))
}
