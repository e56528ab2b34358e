//! The start of a coop's agents: the last step of its registration transaction.
//!
//! # Ground rules
//!
//! - Registration commits the coop (every agent bound, accepting and subscribed), then queues
//!   each agent's start demand. Each agent starts on its own dispatcher thread — its initial
//!   states' `on_enter` hooks, then `on_start` — and reports the outcome here.
//! - Until every agent of the coop has started, no agent of it handles a message: an agent
//!   that has started while a sibling has not *holds* what it takes (in order, with its limit
//!   place and, for a timer's message, its token). The agent registers here as holding when it
//!   holds its first message.
//! - Every agent started: the verdict is *started*; the holding agents get a
//!   [`Control::Release`](crate::agent::restart::Control) demand, which handles what they
//!   held, in order, before anything queued behind it. Agents that held nothing notice the
//!   verdict at their next message.
//! - The first failure — an error returned by `on_start`, or a panic in it or in an initial
//!   state's hook — decides: the verdict is *failed*, the failing agent deregisters the coop
//!   with [`DeregReason::StartFailed`](crate::DeregReason::StartFailed). Agents that had
//!   started finish (`on_finish` runs; what they held is dropped and counted); agents whose
//!   start had not run do not start (neither `on_start` nor `on_finish` runs); the failed one
//!   runs no `on_finish`. Every message the coop's agents take from then on is dropped and
//!   counted (`dead_letters`, each agent's `refused` and `dropped`).
//! - Who waits: `register_coop` on a thread that is not a dispatcher thread waits for the
//!   verdict — and after a failure, for the coop to be gone — and returns the failure
//!   ([`RegisterError::Start`](crate::RegisterError::Start)). On a dispatcher thread (in a
//!   handler, or on a driven dispatcher's thread) waiting could deadlock — a start may need
//!   this very thread — so registration returns once the coop is committed, and a failure is
//!   reported as the coop's deregistration reason (to its listeners and watchers) and logged.
//! - A coop of one agent that nobody waits for needs none of this: the agent's own outcome
//!   is the verdict (no [`CoopStart`] is made).

use crate::agent::restart::{Control, send_control};
use crate::error::StartFailure;
use crate::mbox::direct::AgentShared;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;

/// The first failure of a coop's start: which agent, and why.
#[derive(Clone, Debug)]
pub(crate) struct Failed {
    pub(crate) index: usize,
    pub(crate) agent_type: &'static str,
    pub(crate) failure: StartFailure,
}

/// What an agent does after its own start succeeded, or when it takes a message while
/// holding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Go {
    /// Every agent of the coop started: handle messages.
    Run,
    /// A sibling has not started yet: hold messages.
    Hold,
    /// A sibling failed: drop messages (the coop is being deregistered).
    RolledBack,
}

struct Progress {
    /// Agents whose start has not been reported.
    pending: usize,
    failed: Option<Failed>,
    /// Agents that hold messages until the verdict.
    holding: Vec<Arc<AgentShared>>,
    /// The coop is gone (deregistration complete).
    gone: bool,
}

/// The start of one coop, shared by its registration and its agents (ground rules).
pub(crate) struct CoopStart {
    progress: Mutex<Progress>,
    settled: Condvar,
}

impl CoopStart {
    pub(crate) fn new(agents: usize) -> Arc<Self> {
        Arc::new(CoopStart {
            progress: Mutex::new(Progress {
                pending: agents,
                failed: None,
                holding: Vec::new(),
                gone: false,
            }),
            settled: Condvar::new(),
        })
    }

    /// True if a sibling's start already failed (an agent that has not started yet then
    /// never starts).
    pub(crate) fn has_failed(&self) -> bool {
        self.progress.lock().failed.is_some()
    }

    /// An agent started; what it does next. The last one to start releases the holding ones.
    pub(crate) fn started(&self) -> Go {
        let release = {
            let mut p = self.progress.lock();
            p.pending -= 1;
            if p.failed.is_some() {
                return Go::RolledBack;
            }
            if p.pending > 0 {
                return Go::Hold;
            }
            self.settled.notify_all();
            std::mem::take(&mut p.holding)
        };
        for agent in release {
            // A holding agent whose coop is leaving may be gone already: nothing to release.
            let _ = send_control(&agent, Control::Release);
        }
        Go::Run
    }

    /// An agent failed to start. Returns true if it is the first failure (its agent then
    /// deregisters the coop).
    pub(crate) fn failed(&self, failed: Failed) -> bool {
        let mut p = self.progress.lock();
        p.pending -= 1;
        if p.failed.is_some() {
            return false;
        }
        p.failed = Some(failed);
        p.holding.clear();
        self.settled.notify_all();
        true
    }

    /// A started agent takes a message before the verdict it last saw: what to do with it.
    /// `Hold` records `agent` as holding (once: `registered` says whether it already is).
    pub(crate) fn on_message(&self, agent: &Arc<AgentShared>, registered: bool) -> Go {
        let mut p = self.progress.lock();
        if p.failed.is_some() {
            Go::RolledBack
        } else if p.pending == 0 {
            Go::Run
        } else {
            if !registered {
                p.holding.push(Arc::clone(agent));
            }
            Go::Hold
        }
    }

    /// The coop is gone (its last agent finished): a waiting registration may return.
    pub(crate) fn coop_gone(&self) {
        self.progress.lock().gone = true;
        self.settled.notify_all();
    }

    /// Waits for the verdict; after a failure, also for the coop to be gone.
    pub(crate) fn wait(&self) -> Result<(), Failed> {
        let mut p = self.progress.lock();
        loop {
            match &p.failed {
                Some(failed) if p.gone => return Err(failed.clone()),
                None if p.pending == 0 => return Ok(()),
                _ => self.settled.wait(&mut p),
            }
        }
    }
}
