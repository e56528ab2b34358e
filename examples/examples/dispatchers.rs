//! `dispatchers` — the same workload on each kind of dispatcher, and which threads ran it.
//!
//! Four worker agents each handle ten jobs and note the name of the thread that ran each one.
//! The workload is run four times, the agents bound each time to another dispatcher:
//!
//! - `one_thread`: one thread for all its agents (they never run at once);
//! - `active_obj`: a thread per agent;
//! - `active_group`: a thread per named group (here two groups of two agents);
//! - `thread_pool`: a fixed set of worker threads (here two) shared by all its agents; an
//!   agent may move between workers over time but never runs on two at once.
//!
//! Whatever the dispatcher, each agent handles its jobs one at a time and in send order.
//!
//! ```text
//! cargo run -p agentry-examples --example dispatchers
//! ```

use agentry::disp::OneThreadDispatcher;
use agentry::disp::ThreadPoolDispatcher;
use agentry::disp::{ActiveGroupDispatcher, ActiveObjDispatcher, Binder};
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, mchain::Mchain};
use std::collections::BTreeSet;
use std::time::Duration;

const AGENTS: usize = 4;
const JOBS: u32 = 10;

/// One job.
struct Job(u32);

/// Notes (agent, job, thread) for each job.
struct Worker {
    index: usize,
    log: Mchain,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, Job(n): Job| {
            let thread = std::thread::current()
                .name()
                .unwrap_or("unnamed")
                .to_owned();
            w.log.send((w.index, n, thread));
        })?;
        Ok(())
    }
}

/// Who ran what on one dispatcher.
#[derive(Debug)]
struct Run {
    dispatcher: &'static str,
    /// The threads each agent ran on.
    threads_of: Vec<BTreeSet<String>>,
    /// Each agent's jobs, in the order it handled them.
    jobs_of: Vec<Vec<u32>>,
}

impl Run {
    fn all_threads(&self) -> BTreeSet<&str> {
        self.threads_of
            .iter()
            .flat_map(|t| t.iter().map(String::as_str))
            .collect()
    }
}

/// Runs the workload with agent `i` bound through `binder(i)`.
fn workload(env: &EnvHandle, dispatcher: &'static str, binder: impl Fn(usize) -> Binder) -> Run {
    let log = Mchain::unbounded();
    let mut coop = env.new_coop();
    let workers: Vec<_> = (0..AGENTS)
        .map(|index| {
            coop.add_with(
                Worker {
                    index,
                    log: log.clone(),
                },
                &binder(index),
            )
        })
        .collect();
    let coop = env.register_coop(coop).expect("registered");
    for n in 0..JOBS {
        for w in &workers {
            w.send(Job(n));
        }
    }
    let mut threads_of = vec![BTreeSet::new(); AGENTS];
    let mut jobs_of = vec![Vec::new(); AGENTS];
    for _ in 0..AGENTS * JOBS as usize {
        let (index, job, thread) = log
            .recv(Duration::from_secs(10))
            .expect("every job is reported")
            .downcast::<(usize, u32, String)>()
            .expect("a report");
        threads_of[index].insert(thread);
        jobs_of[index].push(job);
    }
    env.deregister_coop(coop, agentry::DeregReason::Normal)
        .expect("deregistered");
    Run {
        dispatcher,
        threads_of,
        jobs_of,
    }
}

fn run() -> Vec<Run> {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let one = OneThreadDispatcher::new(h, "one").expect("one_thread");
    let per_agent = ActiveObjDispatcher::new(h, "obj").expect("active_obj");
    let groups = ActiveGroupDispatcher::new(h, "grp").expect("active_group");
    let pool = ThreadPoolDispatcher::builder("pool")
        .threads(2)
        .build(h)
        .expect("thread_pool");
    let runs = vec![
        workload(h, "one_thread", |_| one.binder()),
        workload(h, "active_obj", |_| per_agent.binder()),
        workload(h, "active_group", |i| {
            groups.binder(if i < AGENTS / 2 { "a" } else { "b" })
        }),
        workload(h, "thread_pool", |_| pool.binder()),
    ];
    h.stop();
    env.run();
    runs
}

fn main() {
    for run in run() {
        println!(
            "{}: {} thread(s) for {AGENTS} agents",
            run.dispatcher,
            run.all_threads().len()
        );
        for (agent, threads) in run.threads_of.iter().enumerate() {
            let in_order = run.jobs_of[agent].windows(2).all(|w| w[0] < w[1]);
            println!("  agent {agent} ran on {threads:?}; jobs in send order: {in_order}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AGENTS, JOBS, run};
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn each_dispatcher_shares_threads_its_own_way() {
        let runs = within(TEST_DEADLINE, run);
        let in_order: Vec<u32> = (0..JOBS).collect();
        for run in &runs {
            for jobs in &run.jobs_of {
                assert_eq!(jobs, &in_order, "{}: send order", run.dispatcher);
            }
        }
        let threads: Vec<(&str, usize)> = runs
            .iter()
            .map(|r| (r.dispatcher, r.all_threads().len()))
            .collect();
        assert_eq!(threads[0], ("one_thread", 1));
        assert_eq!(threads[1], ("active_obj", AGENTS));
        assert_eq!(threads[2], ("active_group", 2));
        assert_eq!(threads[3].0, "thread_pool");
        assert!(
            (1..=2).contains(&threads[3].1),
            "a 2-thread pool uses at most its 2 workers"
        );
        for run in &runs[..3] {
            for (agent, t) in run.threads_of.iter().enumerate() {
                assert_eq!(
                    t.len(),
                    1,
                    "{}: agent {agent} stays on one thread",
                    run.dispatcher
                );
            }
        }
        assert_eq!(
            runs[2].threads_of[0], runs[2].threads_of[1],
            "agents of one group share its thread"
        );
    }
}
