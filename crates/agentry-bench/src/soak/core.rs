//! The churn of the core runtime: coops on every dispatcher kind registered and
//! deregistered at random — from threads and from handlers, some failing to start — while
//! senders race every kind of message against the deregistrations, agents panic, and timers
//! are scheduled and cancelled. One environment serves the whole run; each phase ends with
//! every coop gone and is audited (`core/audit.rs`).
//!
//! # Ground rules
//! 1. Only the soak's agents live in this environment, and every one of their mboxes is
//!    held in the phase's ledger until the audit: so the environment's `dead_letters` of the
//!    phase is exactly the sum of the agents' `refused`.
//! 2. The soak counts a message to an agent before sending it (`Target::send`); a multi
//!    mbox's delivery is counted by the subscriber's delivery filter when it accepts it.
//!    Timers send to multi mboxes (the tick topics), so their deliveries are counted too.
//! 3. A phase ends in this order: the drivers stop (the timer thread cancels what it
//!    holds), every root coop left is deregistered, the environment must reach zero coops,
//!    agents and timers, then the audit runs and the ledger is dropped.

mod agent;
mod audit;
mod dispatchers;
mod drivers;
mod ledger;
mod plan;

use crate::soak::check::Checks;
use crate::soak::tally::Tally;
use crate::soak::{Part, stream_rng, wait_until};
use agent::{SENDERS, Shared};
use agentry::{DeregReason, Env, EnvHandle, EnvStats};
use audit::Marks;
use dispatchers::Dispatchers;
use ledger::Ledger;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Multi mboxes the agents read `News` from, and tick topics timers send to.
const TOPICS: usize = 4;
const TICK_TOPICS: usize = 4;
/// How long the environment may take to let every coop go at the end of a phase.
const DRAIN: Duration = Duration::from_secs(30);

/// The core workload.
pub struct CoreSoak {
    env: Option<Env>,
    handle: EnvHandle,
    shared: Arc<Shared>,
    ledger: Arc<Ledger>,
    stop: Arc<AtomicBool>,
    drivers: Vec<JoinHandle<Tally>>,
    marks: Marks,
}

impl CoreSoak {
    /// # Errors
    /// The environment or a dispatcher could not be built.
    pub fn new() -> Result<Self, String> {
        let env = Env::builder()
            .autoshutdown(false)
            .build()
            .map_err(|e| format!("core environment: {e}"))?;
        let handle = env.handle().clone();
        let shared = Arc::new(Shared::default());
        let dispatchers = Dispatchers::new(&handle).map_err(|e| format!("dispatchers: {e}"))?;
        let ledger = Ledger::new(
            handle.clone(),
            dispatchers,
            Arc::clone(&shared),
            TOPICS,
            TICK_TOPICS,
        );
        let marks = Marks::take(handle.stats(), &shared);
        Ok(CoreSoak {
            env: Some(env),
            handle,
            shared,
            ledger,
            stop: Arc::new(AtomicBool::new(false)),
            drivers: Vec::new(),
            marks,
        })
    }

    /// The environment's counters now.
    fn stats(&self) -> EnvStats {
        self.handle.stats()
    }
}

impl Part for CoreSoak {
    fn name(&self) -> &'static str {
        "core"
    }

    fn start_phase(&mut self, seed: u64, phase: u32) {
        self.stop.store(false, Ordering::SeqCst);
        let spawn = |name: &str, f: Box<dyn FnOnce() -> Tally + Send>| {
            std::thread::Builder::new()
                .name(format!("soak-{name}"))
                .spawn(f)
                .expect("invariant: the soak can start its driver threads")
        };
        let (env, ledger, stop) = (
            self.handle.clone(),
            Arc::clone(&self.ledger),
            Arc::clone(&self.stop),
        );
        let rng = stream_rng(seed, phase, 0);
        self.drivers.push(spawn(
            "registrar",
            Box::new(move || drivers::registrar(&env, &ledger, rng, &stop)),
        ));
        for id in 0..SENDERS {
            let (ledger, stop) = (Arc::clone(&self.ledger), Arc::clone(&self.stop));
            let rng = stream_rng(seed, phase, 1 + id as u64);
            let id = u8::try_from(id).expect("invariant: few senders");
            self.drivers.push(spawn(
                "sender",
                Box::new(move || drivers::sender(&ledger, id, rng, &stop)),
            ));
        }
        let (env, ledger, stop) = (
            self.handle.clone(),
            Arc::clone(&self.ledger),
            Arc::clone(&self.stop),
        );
        let rng = stream_rng(seed, phase, 9);
        self.drivers.push(spawn(
            "timers",
            Box::new(move || drivers::timers(&env, &ledger, rng, &stop)),
        ));
    }

    fn end_phase(&mut self) -> (Tally, Checks) {
        let mut counts = Tally::default();
        let mut checks = Checks::default();
        self.stop.store(true, Ordering::SeqCst);
        let mut driver_panicked = 0;
        for d in self.drivers.drain(..) {
            match d.join() {
                Ok(t) => counts.merge(&t),
                Err(_) => driver_panicked += 1,
            }
        }
        checks.eq(
            "core",
            "driver threads that panicked == 0",
            driver_panicked,
            0,
        );
        for id in self.ledger.take_all_roots() {
            // Gone already (a panic, Quit) is fine.
            let _ = self.handle.deregister_coop(id, DeregReason::Normal);
        }
        let drained = wait_until(DRAIN, || {
            let s = self.stats();
            s.coops == 0 && s.agents == 0 && s.timers == 0
        });
        if !drained {
            counts.one("phase end: the environment did not drain in time");
        }
        let phase = self.ledger.take_phase();
        let before = self.marks;
        audit::audit(
            &phase,
            &before,
            || Marks::take(self.stats(), &self.shared),
            &mut checks,
            &mut counts,
        );
        drop(phase);
        self.marks = Marks::take(self.stats(), &self.shared);
        (counts, checks)
    }

    fn finish(&mut self) -> Checks {
        let mut checks = Checks::default();
        let Some(env) = self.env.take() else {
            return checks;
        };
        self.handle.stop();
        let last = env.run();
        checks.eq("core", "final EnvStats::agents == 0", last.agents as u64, 0);
        checks.eq("core", "final EnvStats::coops == 0", last.coops as u64, 0);
        checks.eq("core", "final EnvStats::timers == 0", last.timers as u64, 0);
        checks.eq(
            "core",
            "final EnvStats::panics == panics the soak provoked",
            last.panics,
            self.shared.provoker.count(),
        );
        checks.eq(
            "core",
            "EnvStats::dead_letters unchanged by the shutdown",
            last.dead_letters,
            self.marks.env.dead_letters,
        );
        checks
    }
}
