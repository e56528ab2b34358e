//! `EnvBuilder`: environment settings.

use super::{Config, Env};
use crate::coop::PanicReaction;
use crate::error::BuildError;

/// Settings of a new environment.
///
/// ```
/// use agentry::{Env, PanicReaction};
/// let env = Env::builder().panic_reaction(PanicReaction::ShutdownEnv).autoshutdown(false).build()
///     .expect("env");
/// env.handle().stop();
/// env.run();
/// ```
#[derive(Debug)]
pub struct EnvBuilder {
    panic_reaction: PanicReaction,
    autoshutdown: bool,
}

impl Default for EnvBuilder {
    fn default() -> Self {
        EnvBuilder {
            panic_reaction: PanicReaction::DeregisterCoop,
            autoshutdown: true,
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

    /// Builds the environment and starts its default dispatcher.
    pub fn build(&mut self) -> Result<Env, BuildError> {
        Env::from_config(Config {
            panic_reaction: self.panic_reaction,
            autoshutdown: self.autoshutdown,
        })
    }
}
