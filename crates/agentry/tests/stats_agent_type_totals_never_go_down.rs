//! `EnvHandle::agent_type_stats` sums the counters of every agent of a type the environment
//! has had: an agent that finishes, and then whose last mbox is dropped, leaves its counts in
//! its type's totals, so they never go down. While agents come and go, a read never counts
//! an agent twice (it is never above what was sent), and once they are quiet it is exact.

mod common;

use agentry::{Agent, AgentTypeStats, Ctx, Define, DefineError, DeregReason, Env, EnvHandle};
use common::{run_env, wait_until};

struct Job;

struct Worker;
impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Worker, _: &mut Ctx<Worker>, _: Job| {})?;
        Ok(())
    }
}

struct Other;
impl Agent for Other {}

fn of_type(env: &EnvHandle, name: &str) -> Option<AgentTypeStats> {
    env.agent_type_stats()
        .into_iter()
        .find(|t| t.agent_type.rsplit("::").next() == Some(name))
}

#[test]
fn totals_keep_the_counts_of_agents_that_are_gone() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let mut coop = h.new_coop();
    let first = coop.add(Worker);
    let second = coop.add(Worker);
    let other = coop.add(Other);
    let coop = h.register_coop(coop).expect("registered");
    for _ in 0..7 {
        first.send(Job);
    }
    for _ in 0..5 {
        second.send(Job);
    }
    other.send(Job); // no handler
    wait_until("the jobs are handled", || {
        of_type(&h, "Worker").is_some_and(|t| t.totals.handled == 12)
    });
    let worker = of_type(&h, "Worker").expect("registered");
    assert_eq!((worker.agents, worker.totals.unhandled), (2, 0));
    let others = of_type(&h, "Other").expect("registered");
    assert_eq!((others.agents, others.totals.unhandled), (1, 1));
    // Sorted by type name, one entry per type.
    let names: Vec<_> = h.agent_type_stats().iter().map(|t| t.agent_type).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");

    h.deregister_coop(coop, DeregReason::Normal)
        .expect("deregistered");
    wait_until("the agents are gone", || {
        of_type(&h, "Worker").is_some_and(|t| t.agents == 0)
    });
    // Finished, mboxes still held (tombstones): still counted.
    assert_eq!(of_type(&h, "Worker").expect("seen").totals.handled, 12);
    first.send(Job); // refused: counted by the finished agent
    drop((first, second, other));
    // Gone for good: in the retired totals.
    let worker = of_type(&h, "Worker").expect("still reported");
    assert_eq!((worker.agents, worker.totals.handled), (0, 12));
    assert_eq!((worker.totals.refused, worker.totals.dropped), (1, 1));
    assert_eq!(
        of_type(&h, "Other")
            .expect("still reported")
            .totals
            .unhandled,
        1
    );
    h.stop();
    run_env(env);
}

#[test]
fn a_read_while_agents_come_and_go_never_counts_one_twice() {
    const ROUNDS: u64 = 200;
    const JOBS: u64 = 3;
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let reader = {
        let h = h.clone();
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while of_type(&h, "Other").is_none() {
                if let Some(t) = of_type(&h, "Worker") {
                    assert!(t.totals.handled <= ROUNDS * JOBS, "{t:?}");
                }
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..ROUNDS {
        let mut coop = h.new_coop();
        let mbox = coop.add(Worker);
        let id = h.register_coop(coop).expect("registered");
        for _ in 0..JOBS {
            mbox.send(Job);
        }
        h.deregister_coop(id, DeregReason::Normal)
            .expect("deregistered");
        drop(mbox);
    }
    wait_until("every worker is gone", || {
        of_type(&h, "Worker").is_some_and(|t| t.agents == 0 && t.totals.handled == ROUNDS * JOBS)
    });
    h.register_agent(Other).expect("registered"); // stops the reader
    assert!(reader.join().expect("reader") > 0);
    h.stop();
    run_env(env);
}
