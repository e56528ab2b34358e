//! `PanicReaction`: what a panic in a handler does (set per agent by `Define::panic_reaction`,
//! per coop, or for the env; carried out by the env: `EnvInner::react_to_panic`). Plain data at
//! the bottom of the layers, so that the send path (an insend handler's panic) and the agents
//! can name it without importing the coops.

/// What happens when a handler panics. The panic is always caught and counted; other agents
/// keep running. (The panic message still goes through the process's panic hook, which
/// prints it to stderr by default; install a hook with `std::panic::set_hook` to change that.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PanicReaction {
    /// Keep going (the agent's state is whatever the handler left).
    Ignore,
    /// Deregister the agent's coop with [`DeregReason::Panic`](crate::DeregReason::Panic) (the default).
    DeregisterCoop,
    /// Stop the whole environment.
    ShutdownEnv,
    /// Abort the process.
    Abort,
    /// Report the failure to the agent's supervisor, which restarts it by its coop's policy
    /// ([`Coop::supervise`](crate::Coop::supervise)); meanwhile the agent handles nothing and keeps its messages for its
    /// next incarnation. The default of agents added with [`Coop::add_supervised`](crate::Coop::add_supervised). An agent
    /// without a supervisor reacts as with `DeregisterCoop`.
    Supervise,
}
