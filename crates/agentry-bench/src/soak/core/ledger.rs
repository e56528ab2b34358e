//! The ledger of one phase: every agent the churn made (its mbox is held until the phase's
//! audit, so its counters can be read and raced messages are still counted) and every coop,
//! with how its registration went. Coops are built here, from a [`CoopPlan`], whether a
//! driver thread or a handler registers them.

use super::agent::{AgentProbe, CoopProbe, Shared, Worker, WorkerCtx};
use super::dispatchers::{DispKind, Dispatchers};
use super::plan::{ChildOrder, CoopPlan, LimitPlan};
use crate::xorshift::XorShift;
use agentry::{Coop, CoopId, Ctx, EnvHandle, Mbox, MultiMbox, RegisterError, SendError};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

/// An agent's mbox and the soak's count of what was sent to it.
#[derive(Clone)]
pub struct Target {
    pub mbox: Mbox,
    pub probe: Arc<AgentProbe>,
}

impl Target {
    /// Counts, then sends.
    pub fn send<M: Send + 'static>(&self, message: M) {
        self.probe.sent.fetch_add(1, Ordering::SeqCst);
        self.mbox.send(message);
    }

    /// Counts, then tries to send (a refused message is counted by the agent too).
    pub fn try_send<M: Send + 'static>(&self, message: M) -> Result<(), SendError<M>> {
        self.probe.sent.fetch_add(1, Ordering::SeqCst);
        self.mbox.try_send(message)
    }
}

/// An agent added to a coop being built: its target, the index in the coop of the agent its
/// limit hands overflow to, its dispatcher.
type BuiltAgent = (Target, Option<usize>, DispKind);

/// Who registered a coop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A driver thread (`register_coop` waits for the starts).
    Thread,
    /// An agent's handler (`Ctx::register_coop` returns once committed).
    Handler,
}

/// What `register_coop` returned.
#[derive(Clone, Debug)]
pub enum Registration {
    Registered(CoopId),
    /// `RegisterError::Start`.
    StartFailed,
    /// The parent was leaving or gone (a child registered by a handler).
    ParentGone,
    /// Anything else (always a violation).
    Other(String),
}

/// One agent of the phase.
pub struct AgentEntry {
    pub target: Target,
    /// Its coop (index into [`PhaseLedger::coops`]).
    pub coop: usize,
    /// The agent its limit hands overflow to (index into [`PhaseLedger::agents`]).
    pub redirects_to: Option<usize>,
    pub disp: DispKind,
}

/// One coop of the phase.
pub struct CoopEntry {
    pub probe: Arc<CoopProbe>,
    pub plan_fails: bool,
    pub origin: Origin,
    pub registration: Registration,
}

/// Everything one phase made.
#[derive(Default)]
pub struct PhaseLedger {
    pub agents: Vec<AgentEntry>,
    pub coops: Vec<CoopEntry>,
    /// Root coops registered and not yet picked for deregistration.
    roots: Vec<CoopId>,
}

/// Shared by the driver threads and the agents.
pub struct Ledger {
    env: EnvHandle,
    dispatchers: Dispatchers,
    shared: Arc<Shared>,
    topics: Vec<MultiMbox>,
    tick_topics: Vec<MultiMbox>,
    phase: Mutex<PhaseLedger>,
}

/// Targets are picked among the most recent agents with this probability (percent), so
/// most sends reach live agents; the others go to any agent of the phase (often gone).
const RECENT_PERCENT: u64 = 90;
const RECENT: usize = 256;

impl Ledger {
    pub fn new(
        env: EnvHandle,
        dispatchers: Dispatchers,
        shared: Arc<Shared>,
        topics: usize,
        tick_topics: usize,
    ) -> Arc<Self> {
        Arc::new(Ledger {
            topics: (0..topics).map(|_| env.create_mbox()).collect(),
            tick_topics: (0..tick_topics).map(|_| env.create_mbox()).collect(),
            env,
            dispatchers,
            shared,
            phase: Mutex::new(PhaseLedger::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, PhaseLedger> {
        self.phase
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn topics(&self) -> &[MultiMbox] {
        &self.topics
    }

    pub fn tick_topics(&self) -> &[MultiMbox] {
        &self.tick_topics
    }

    /// Adds the agents of `plan` to `coop`; returns them (redirect indices local to the
    /// coop) and the coop's probe.
    fn build(
        self: &Arc<Self>,
        coop: &mut Coop,
        plan: &CoopPlan,
    ) -> (Vec<BuiltAgent>, Arc<CoopProbe>) {
        let probe = Arc::new(CoopProbe::default());
        let notify = Arc::clone(&probe);
        coop.on_dereg(move |gone| notify.deregistered(gone.reason));
        let mut agents: Vec<BuiltAgent> = Vec::new();
        for a in &plan.agents {
            let sink = agents.first().map(|(t, _, _)| t.clone());
            let agent_probe = Arc::new(AgentProbe::default());
            let cx = WorkerCtx {
                probe: Arc::clone(&agent_probe),
                coop: Arc::clone(&probe),
                shared: Arc::clone(&self.shared),
                ledger: Arc::clone(self),
                sink,
                topic: a.topic.map(|t| self.topics[t].clone()),
                ticks: a.ticks.map(|t| self.tick_topics[t].clone()),
            };
            let binder = self.dispatchers.binder(a.disp, a.group);
            let mbox = coop.add_with(Worker::new(a.clone(), cx), &binder);
            let redirects =
                matches!(a.limit, Some(LimitPlan::Redirect | LimitPlan::Transform)).then_some(0);
            agents.push((
                Target {
                    mbox,
                    probe: agent_probe,
                },
                redirects,
                a.disp,
            ));
        }
        (agents, probe)
    }

    fn record(
        &self,
        agents: Vec<BuiltAgent>,
        probe: Arc<CoopProbe>,
        plan: &CoopPlan,
        origin: Origin,
        registration: Registration,
    ) {
        let mut phase = self.lock();
        let coop = phase.coops.len();
        let base = phase.agents.len();
        for (target, redirects, disp) in agents {
            phase.agents.push(AgentEntry {
                target,
                coop,
                redirects_to: redirects.map(|local| base + local),
                disp,
            });
        }
        if let (Origin::Thread, Registration::Registered(id)) = (origin, &registration) {
            phase.roots.push(*id);
        }
        phase.coops.push(CoopEntry {
            probe,
            plan_fails: plan.fails(),
            origin,
            registration,
        });
    }

    /// Registers a root coop from the calling (plain) thread.
    pub fn register_root(self: &Arc<Self>, plan: &CoopPlan) {
        let mut coop = self.env.new_coop();
        let (agents, probe) = self.build(&mut coop, plan);
        let registration = match self.env.register_coop(coop) {
            Ok(id) => Registration::Registered(id),
            Err(RegisterError::Start { .. }) => Registration::StartFailed,
            Err(e) => Registration::Other(e.to_string()),
        };
        self.record(agents, probe, plan, Origin::Thread, registration);
    }

    /// Registers a child of the handler's coop, from the handler.
    pub fn register_child(self: &Arc<Self>, ctx: &Ctx<Worker>, order: ChildOrder) {
        let mut coop = ctx.child_coop();
        let (agents, probe) = self.build(&mut coop, &order.plan);
        let registration = match ctx.register_coop(coop) {
            Ok(id) => Registration::Registered(id),
            Err(RegisterError::Start { .. }) => Registration::StartFailed,
            Err(RegisterError::ParentDeregistering(_) | RegisterError::ParentNotFound(_)) => {
                Registration::ParentGone
            }
            Err(e) => Registration::Other(e.to_string()),
        };
        self.record(agents, probe, &order.plan, Origin::Handler, registration);
    }

    /// A random agent of the phase (mostly a recent one).
    pub fn pick(&self, rng: &mut XorShift) -> Option<Target> {
        let phase = self.lock();
        let n = phase.agents.len();
        if n == 0 {
            return None;
        }
        let from = if rng.below(100) < RECENT_PERCENT {
            n.saturating_sub(RECENT)
        } else {
            0
        };
        let i = from + rng.below((n - from) as u64) as usize;
        Some(phase.agents[i].target.clone())
    }

    /// Root coops registered and not yet deregistered by the driver.
    pub fn live_roots(&self) -> usize {
        self.lock().roots.len()
    }

    /// Takes a random root coop out of the live list (to deregister it).
    pub fn take_root(&self, rng: &mut XorShift) -> Option<CoopId> {
        let mut phase = self.lock();
        if phase.roots.is_empty() {
            return None;
        }
        let i = rng.below(phase.roots.len() as u64) as usize;
        Some(phase.roots.swap_remove(i))
    }

    /// Takes every root coop still listed.
    pub fn take_all_roots(&self) -> Vec<CoopId> {
        std::mem::take(&mut self.lock().roots)
    }

    /// Ends the phase: returns what it made and starts an empty ledger.
    pub fn take_phase(&self) -> PhaseLedger {
        std::mem::take(&mut *self.lock())
    }
}
