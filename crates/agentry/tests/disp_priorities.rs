//! Priority dispatchers: a strictly-ordered one serves every demand of a higher-priority agent
//! before any of a lower one; a quoted round-robin one interleaves them by its quotas; each
//! agent's own messages stay in send order.

mod common;

use agentry::disp::PrioOneThreadDispatcher;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, Priority};
use common::{Gate, Log, gate};

struct Hold(Gate);
struct Job(u32);

/// Records `<name><n>` for every job; can hold its dispatcher's thread (`Hold`).
struct Prioritised {
    name: &'static str,
    priority: Priority,
    log: Log,
}

impl Agent for Prioritised {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.priority(self.priority);
        def.on(
            |a: &mut Prioritised, _: &mut Ctx<Prioritised>, Job(n): Job| {
                a.log.push(format!("{}{n}", a.name))
            },
        )?;
        def.on(|_: &mut Prioritised, _: &mut Ctx<Prioritised>, Hold(g): Hold| g.pass())?;
        Ok(())
    }
}

/// Registers a low (P0), a middle (P3) and a high (P7) agent on `binder`; holds the thread
/// while `jobs` jobs are sent to each (low first), then lets it go and waits for all of them.
fn run_with(env: &Env, binder: &agentry::disp::Binder, jobs: u32) -> Vec<String> {
    let log = Log::default();
    let mut coop = env.handle().new_coop();
    let mut add = |name, priority| {
        coop.add_with(
            Prioritised {
                name,
                priority,
                log: log.clone(),
            },
            binder,
        )
    };
    let (low, mid, high): (Mbox, Mbox, Mbox) = (
        add("L", Priority::P0),
        add("M", Priority::P3),
        add("H", Priority::P7),
    );
    env.handle().register_coop(coop).expect("registered");
    let (g, key) = gate();
    low.send(Hold(g));
    key.wait_entered();
    for n in 0..jobs {
        low.send(Job(n));
    }
    for n in 0..jobs {
        mid.send(Job(n));
    }
    for n in 0..jobs {
        high.send(Job(n));
    }
    key.open();
    common::wait_until("every job is handled", || {
        log.snapshot().len() == 3 * jobs as usize
    });
    log.take()
}

fn names(log: &[String]) -> String {
    log.iter().map(|e| &e[..1]).collect()
}

#[test]
fn strictly_ordered_serves_higher_priorities_first() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let prio = PrioOneThreadDispatcher::builder("strict")
        .strictly_ordered()
        .build(env.handle())
        .expect("dispatcher");
    let log = run_with(&env, &prio.binder(), 5);
    assert_eq!(names(&log), "HHHHHMMMMMLLLLL");
    // Each agent's jobs in send order.
    for name in ["H", "M", "L"] {
        let mine: Vec<&String> = log.iter().filter(|e| e.starts_with(name)).collect();
        assert_eq!(
            mine,
            (0..5)
                .map(|n| format!("{name}{n}"))
                .collect::<Vec<_>>()
                .iter()
                .collect::<Vec<_>>()
        );
    }
    env.handle().stop();
}

#[test]
fn quoted_round_robin_interleaves_by_quota() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let mut quotes = [1; 8];
    quotes[Priority::P7.index()] = 3;
    quotes[Priority::P3.index()] = 2;
    let rr = PrioOneThreadDispatcher::builder("rr")
        .quoted_round_robin(quotes)
        .build(env.handle())
        .expect("dispatcher");
    let log = run_with(&env, &rr.binder(), 6);
    // Rounds of 3 H, 2 M, 1 L while each has work; nobody starves.
    assert_eq!(names(&log), "HHHMMLHHHMMLMMLLLL");
    env.handle().stop();
}

#[test]
fn a_plain_dispatcher_ignores_priorities() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let plain = env.handle().default_binder();
    let log = run_with(&env, &plain, 3);
    assert_eq!(names(&log), "LLLMMMHHH", "send order, not priority order");
    env.handle().stop();
}
