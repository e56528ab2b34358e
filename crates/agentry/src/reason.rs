//! Why agents and coops leave: a coop's `DeregReason`, and the `ExitReason` a death watch
//! reports (public also as `agentry::watch::ExitReason`). Plain data at the bottom of the
//! layers: an agent's mbox records its exit reason (`ExitCell`) without importing the death
//! watch.

use std::sync::atomic::{AtomicU64, Ordering};

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

/// Where an agent's shared part records why the agent is gone (`mbox/direct.rs`): set once,
/// read from any thread. One word, so that it packs with the shared part's other small fields
/// (a `OnceLock<ExitReason>` takes 12 bytes and four of padding).
#[derive(Default)]
pub(crate) struct ExitCell(AtomicU64);

impl ExitCell {
    /// Records `reason`, unless a reason is recorded already (that one stays).
    pub(crate) fn set(&self, reason: ExitReason) {
        let _ = self
            .0
            .compare_exchange(0, encode(reason), Ordering::Release, Ordering::Relaxed);
    }

    /// The recorded reason, if one is.
    pub(crate) fn get(&self) -> Option<ExitReason> {
        decode(self.0.load(Ordering::Acquire))
    }
}

/// A reason as a nonzero word: its variant (from 1) in the high half, `User`'s code in the
/// low half.
fn encode(reason: ExitReason) -> u64 {
    let (variant, code) = match reason {
        ExitReason::Normal => (1, 0),
        ExitReason::Shutdown => (2, 0),
        ExitReason::ParentDeregistered => (3, 0),
        ExitReason::Panic => (4, 0),
        ExitReason::Escalation => (5, 0),
        ExitReason::Restart => (6, 0),
        ExitReason::StartFailed => (7, 0),
        ExitReason::User(code) => (8, code),
        ExitReason::Unknown => (9, 0),
    };
    (variant << 32) | u64::from(code)
}

/// The reason [`encode`] made `word` from; `None` for zero (none recorded).
fn decode(word: u64) -> Option<ExitReason> {
    Some(match word >> 32 {
        0 => return None,
        1 => ExitReason::Normal,
        2 => ExitReason::Shutdown,
        3 => ExitReason::ParentDeregistered,
        4 => ExitReason::Panic,
        5 => ExitReason::Escalation,
        6 => ExitReason::Restart,
        7 => ExitReason::StartFailed,
        8 => ExitReason::User(word as u32),
        9 => ExitReason::Unknown,
        _ => unreachable!("invariant: an exit cell holds what `encode` made"),
    })
}

#[cfg(test)]
mod tests {
    use super::{ExitCell, ExitReason};

    #[test]
    fn an_exit_cell_keeps_the_first_reason_of_every_kind() {
        let reasons = [
            ExitReason::Normal,
            ExitReason::Shutdown,
            ExitReason::ParentDeregistered,
            ExitReason::Panic,
            ExitReason::Escalation,
            ExitReason::Restart,
            ExitReason::StartFailed,
            ExitReason::User(0),
            ExitReason::User(u32::MAX),
            ExitReason::Unknown,
        ];
        for reason in reasons {
            let cell = ExitCell::default();
            assert_eq!(cell.get(), None);
            cell.set(reason);
            cell.set(ExitReason::Shutdown);
            cell.set(ExitReason::User(7));
            assert_eq!(cell.get(), Some(reason), "the first reason stays");
        }
    }
}
