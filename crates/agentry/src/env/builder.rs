//! `EnvBuilder`: environment settings.

use super::{Config, Env};
use crate::coop::PanicReaction;
use crate::error::BuildError;
use crate::timer::{Clock, EngineKind};

/// Settings of a new environment.
///
/// ```
/// use agentry::{Env, PanicReaction, timer::EngineKind};
/// let env = Env::builder()
///     .panic_reaction(PanicReaction::ShutdownEnv)
///     .autoshutdown(false)
///     .timer_engine(EngineKind::Wheel)
///     .build()
///     .expect("env");
/// env.handle().stop();
/// env.run();
/// ```
#[derive(Debug)]
pub struct EnvBuilder {
    panic_reaction: PanicReaction,
    autoshutdown: bool,
    timer_engine: EngineKind,
    clock: Clock,
}

impl Default for EnvBuilder {
    fn default() -> Self {
        EnvBuilder {
            panic_reaction: PanicReaction::DeregisterCoop,
            autoshutdown: true,
            timer_engine: EngineKind::Heap,
            clock: Clock::System,
        }
    }
}

impl EnvBuilder {
    /// The panic reaction of coops and agents that set none (default: `DeregisterCoop`).
    pub fn panic_reaction(&mut self, reaction: PanicReaction) -> &mut Self {
        self.panic_reaction = reaction;
        self
    }

    /// Stop when the last coop is deregistered, or at `run()` if none was ever registered
    /// (default: true).
    pub fn autoshutdown(&mut self, on: bool) -> &mut Self {
        self.autoshutdown = on;
        self
    }

    /// The engine of the environment's timers (default: the indexed heap — exact deadlines,
    /// O(log N); the wheel is O(1) but rounds deadlines up to 1 ms, for very many timeouts).
    pub fn timer_engine(&mut self, engine: EngineKind) -> &mut Self {
        self.timer_engine = engine;
        self
    }

    /// The clock of the environment's timers (default: the system clock; a
    /// [`ManualClock`](crate::ManualClock) makes timers deterministic in tests).
    pub fn clock(&mut self, clock: Clock) -> &mut Self {
        self.clock = clock;
        self
    }

    /// Builds the environment and starts its default dispatcher and its timer thread.
    pub fn build(&mut self) -> Result<Env, BuildError> {
        Env::from_config(Config {
            panic_reaction: self.panic_reaction,
            autoshutdown: self.autoshutdown,
            timer_engine: self.timer_engine,
            clock: self.clock.clone(),
        })
    }
}
