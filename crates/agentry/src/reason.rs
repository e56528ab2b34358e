//! Why agents and coops leave: a coop's `DeregReason`, and the `ExitReason` a death watch
//! reports (public also as `agentry::watch::ExitReason`). Plain data at the bottom of the
//! layers: an agent's mbox records its exit reason without importing the death watch.

/// Why a coop was deregistered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeregReason {
    /// Deregistered on request, its work done.
    Normal,
    /// The environment shut down.
    Shutdown,
    /// Its parent was deregistered.
    ParentDeregistered,
    /// A handler of one of its agents panicked (reaction `DeregisterCoop`).
    Panic,
    /// Its supervisor gave up: its children failed more often than the restart intensity
    /// allows (see [`Supervision::intensity`](crate::supervision::Supervision::intensity)).
    Escalation,
    /// Its supervisor deregistered it to register a fresh one in its place (a supervised child
    /// coop being restarted).
    Restart,
    /// One of its agents failed to start (`on_start` returned an error or panicked): the coop
    /// was rolled back as part of its registration (see
    /// [`EnvHandle::register_coop`](crate::EnvHandle::register_coop)).
    StartFailed,
    /// An application-defined reason.
    User(u32),
}

/// Why a watched agent or coop is gone: its coop's [`DeregReason`], or `Unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExitReason {
    /// Deregistered on request ([`DeregReason::Normal`]).
    Normal,
    /// The environment shut down.
    Shutdown,
    /// Its (or its coop's) parent coop was deregistered.
    ParentDeregistered,
    /// A handler panicked and the panic reaction deregistered the coop.
    Panic,
    /// A supervisor gave up: restart intensity exceeded ([`DeregReason::Escalation`]).
    Escalation,
    /// Its supervisor deregistered it to register a fresh one ([`DeregReason::Restart`]).
    Restart,
    /// It (or its coop) failed to start ([`DeregReason::StartFailed`]).
    StartFailed,
    /// An application-defined reason.
    User(u32),
    /// A coop that was gone before the watch was made (or never existed here): its reason is
    /// no longer known.
    Unknown,
}

impl From<DeregReason> for ExitReason {
    fn from(reason: DeregReason) -> Self {
        match reason {
            DeregReason::Normal => ExitReason::Normal,
            DeregReason::Shutdown => ExitReason::Shutdown,
            DeregReason::ParentDeregistered => ExitReason::ParentDeregistered,
            DeregReason::Panic => ExitReason::Panic,
            DeregReason::Escalation => ExitReason::Escalation,
            DeregReason::Restart => ExitReason::Restart,
            DeregReason::StartFailed => ExitReason::StartFailed,
            DeregReason::User(code) => ExitReason::User(code),
        }
    }
}
