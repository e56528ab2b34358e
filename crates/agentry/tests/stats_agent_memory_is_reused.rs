//! The memory agents' cells live in is kept and reused, and the env's stats show it
//! (`EnvStats::agent_memory_reserved`, `agent_memory_idle`): coops of many agents made and
//! gone again and again — registered from this thread, finished on the dispatcher's — leave
//! the store no larger than the first of them did, and what they left is free for reuse.
//!
//! One test in this file: the store is the process's, and this binary is a process of its own.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, EnvStats, UserError};
use common::{run_env, wait_stats};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An idle agent with a value of 64 bytes, so that its cell is well above the store's
/// smallest blocks.
struct Idle {
    started: Arc<AtomicUsize>,
    _value: [u64; 7],
}

struct Poke;

impl Agent for Idle {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Idle, _: &mut Ctx<Idle>, Poke| {})?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

const AGENTS: usize = 5_000;
const ROUNDS: usize = 6;
/// A chunk of the store: what a round may add at most, for the blocks the dispatcher's thread
/// keeps in its own magazines (64 per size class) rather than handing them back.
const CHUNK: u64 = 64 * 1024;

#[test]
fn coops_made_again_and_again_reuse_the_memory_the_first_one_took() {
    // Kept running between the rounds (no coop is registered then).
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let handle = env.handle().clone();
    let runner = std::thread::spawn(move || run_env(env));
    let started = Arc::new(AtomicUsize::new(0));
    let mut after_first = None;
    for round in 1..=ROUNDS {
        let mut coop = handle.new_coop();
        let mboxes: Vec<_> = (0..AGENTS)
            .map(|_| {
                coop.add(Idle {
                    started: Arc::clone(&started),
                    _value: [round as u64; 7],
                })
            })
            .collect();
        let id = handle.register_coop(coop).expect("register");
        wait_stats(&handle, "every agent registered", |s| s.agents == AGENTS);
        while started.load(Ordering::SeqCst) < round * AGENTS {
            std::thread::yield_now();
        }
        let live = handle.stats();
        assert!(
            live.agent_memory_reserved >= (AGENTS * 64) as u64,
            "round {round}: {AGENTS} agents of 64 bytes live in the store ({live:?})"
        );
        for mbox in &mboxes {
            mbox.send(Poke);
        }
        drop(mboxes);
        handle
            .deregister_coop(id, DeregReason::Normal)
            .expect("deregister");
        let gone: EnvStats = wait_stats(&handle, "every agent gone", |s| s.agents == 0);
        assert!(gone.agent_memory_idle <= gone.agent_memory_reserved);
        match after_first {
            None => after_first = Some(gone.agent_memory_reserved),
            Some(first) => assert!(
                gone.agent_memory_reserved <= first + CHUNK,
                "round {round}: the store grew from {first} to {} bytes for agents that \
                 replaced others of the same size",
                gone.agent_memory_reserved
            ),
        }
    }
    let last = handle.stats();
    assert!(
        last.agent_memory_idle >= ((AGENTS - 2 * 32) * 64) as u64,
        "what the last coop's agents left is free for reuse ({last:?})"
    );
    handle.stop();
    runner.join().expect("the env's thread");
}
