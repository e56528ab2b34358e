//! The start of a coop's agents: the last step of its registration transaction, in the
//! agents' layer because the agents take part in it (each cell reports its start here and
//! holds its messages until the verdict); the registration makes it, and the listener that
//! tells a waiting registration that its failed coop is gone is the coop's (`coop/start.rs`).
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
//! - Nothing keeps a start past its use: its agents drop it once their own start is settled
//!   (an agent that started before a sibling keeps it until its release or its next
//!   message), and a waiting registration adds the listener that tells it that its coop is
//!   gone only once the start failed (the coop is then on its way out). So a coop registered
//!   from outside a handler does not keep its start (120 B) as long as it lives.

use super::restart::{Control, send_control};
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
    /// The start of a coop of `agents` agents, none started yet. (A failure names its agent
    /// by its position in the coop, which the agent asks its env for then: the start keeps
    /// no list of its agents.)
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

    /// Waits for the verdict: true if every agent started, false if one failed.
    pub(crate) fn wait_verdict(&self) -> bool {
        let mut p = self.progress.lock();
        loop {
            if p.failed.is_some() {
                return false;
            }
            if p.pending == 0 {
                return true;
            }
            self.settled.wait(&mut p);
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

#[cfg(test)]
mod tests {
    use super::{CoopStart, Failed, Go};
    use crate::coop::CoopDeregistered;
    use crate::error::StartFailure;
    use crate::ids::CoopId;
    use crate::reason::DeregReason;
    use std::sync::Arc;

    fn failure() -> Failed {
        Failed {
            index: 1,
            agent_type: "t",
            failure: StartFailure::Panicked("boom".into()),
        }
    }

    #[test]
    fn a_started_coop_needs_no_listener_and_a_failed_one_waits_for_its_end() {
        // Started: the verdict is known without any listener; nothing else holds the start.
        let start = CoopStart::new(2);
        assert_eq!(start.started(), Go::Hold);
        assert_eq!(start.started(), Go::Run);
        assert!(start.wait_verdict());
        assert!(start.wait().is_ok());
        assert_eq!(Arc::strong_count(&start), 1);

        // Failed: the verdict is known at once; the registration then waits for the coop's
        // end, which the listener reports.
        let start = CoopStart::new(2);
        assert!(start.failed(failure()));
        assert!(!start.failed(failure()), "only the first failure decides");
        assert!(!start.wait_verdict());
        let listener = CoopStart::gone_listener(&start);
        let waiter = {
            let start = Arc::clone(&start);
            std::thread::spawn(move || start.wait())
        };
        listener.notify(CoopDeregistered {
            coop: CoopId::next_in(0),
            reason: DeregReason::StartFailed,
        });
        let Err(failed) = waiter.join().expect("the waiter returns") else {
            panic!("the start failed");
        };
        assert_eq!((failed.index, failed.agent_type), (1, "t"));
        // The listener was consumed: the start is the registration's alone again.
        assert_eq!(Arc::strong_count(&start), 1);
    }
}
