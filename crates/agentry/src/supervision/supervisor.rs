//! The supervisor agent of a supervising coop (the protocol is in `supervision.rs`).
//!
//! It is an ordinary agent: its state changes only in its handlers, one message at a time.
//! Its children talk to it through private message types, so nothing else can:
//! `ChildFailed` (from a failed agent), `ChildAck` (an agent ran a control demand) — both
//! in `mbox/supervisor_link.rs` with the link that sends them —,
//! `RestartDue` (its backoff timer), and [`CoopDeregistered`] (a child coop left).

use super::{Child, ChildStats, Strategy, Supervision, SupervisorShared};
use crate::agent::cell::UndefinedAgent;
use crate::agent::restart::{Control, send_control};
use crate::agent::{Agent, Ctx, Define};
use crate::coop::{ChildSpec, CoopDeregistered, CoopFactory, PendingAgent};
use crate::error::UserError;
use crate::error::{DefineError, DeregisterError, SupervisionError};
use crate::ids::CoopId;
use crate::mbox::Mbox;
use crate::mbox::direct::{AgentHost, AgentShared};
use crate::mbox::supervisor_link::SupervisorLink;
use crate::mbox::supervisor_link::{Ack, ChildAck, ChildFailed};
use crate::panic_reaction::PanicReaction;
use crate::reason::DeregReason;
use crate::timer::TimerHandle;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The backoff of restart `epoch` is over.
struct RestartDue {
    epoch: u64,
}

pub(crate) enum ChildKind {
    Agent(Mbox),
    Coop {
        factory: CoopFactory,
        current: Option<CoopId>,
    },
}

struct ChildEntry {
    kind: ChildKind,
    restarts: u64,
    /// A child coop that ended (deregistered `Normal` / `User`): never restarted.
    ended: bool,
}

#[derive(Clone, Copy)]
enum Step {
    /// Stopping `set[..n]`, last first.
    Stopping(usize),
    /// Waiting for the backoff timer.
    Backoff,
    /// Starting: `set[..n]` have been started (or are starting).
    Starting(usize),
}

/// One restart in progress.
struct Job {
    epoch: u64,
    set: Vec<usize>,
    step: Step,
    delay: Duration,
    /// The child whose stop or start the supervisor waits for.
    awaiting: Option<usize>,
    _timer: Option<TimerHandle>,
}

impl Job {
    /// True if `child` will be (re)started by this job from scratch: a new failure of it
    /// changes nothing.
    fn covers(&self, child: usize) -> bool {
        let Some(pos) = self.set.iter().position(|&c| c == child) else {
            return false;
        };
        match self.step {
            Step::Stopping(_) | Step::Backoff => true,
            Step::Starting(started) => pos >= started,
        }
    }
}

pub(crate) struct Supervisor {
    policy: Supervision,
    children: Vec<ChildEntry>,
    /// Times (timer clock, ns) of the restarts within the intensity window.
    history: VecDeque<u64>,
    /// Failed children waiting for the current job to end.
    failed: VecDeque<usize>,
    job: Option<Job>,
    epoch: u64,
    restarts: u64,
    escalations: u64,
    shared: Arc<SupervisorShared>,
}

impl Supervisor {
    pub(crate) fn new(
        policy: Supervision,
        children: Vec<ChildKind>,
        shared: Arc<SupervisorShared>,
    ) -> Self {
        let supervisor = Supervisor {
            policy,
            children: children
                .into_iter()
                .map(|kind| ChildEntry {
                    kind,
                    restarts: 0,
                    ended: false,
                })
                .collect(),
            history: VecDeque::new(),
            failed: VecDeque::new(),
            job: None,
            epoch: 0,
            restarts: 0,
            escalations: 0,
            shared,
        };
        supervisor.publish();
        supervisor
    }

    /// Publishes the counters for `EnvHandle::supervisor_stats`.
    fn publish(&self) {
        let children = self
            .children
            .iter()
            .map(|c| ChildStats {
                child: match &c.kind {
                    ChildKind::Agent(mbox) => Child::Agent(mbox.clone()),
                    ChildKind::Coop { current, .. } => Child::Coop(*current),
                },
                restarts: c.restarts,
            })
            .collect();
        let mut stats = self.shared.stats.lock();
        stats.children = children;
        stats.restarts = self.restarts;
        stats.escalations = self.escalations;
    }

    fn leaving(ctx: &Ctx<Self>) -> bool {
        ctx.env().inner().registry.lock().is_leaving(ctx.coop())
    }

    fn on_child_failed(&mut self, ctx: &mut Ctx<Self>, ChildFailed { child, agent }: ChildFailed) {
        // A report of an earlier incarnation (e.g. an insend handler of one already stopped).
        if let Some(ChildKind::Agent(mbox)) = self.children.get(child).map(|c| &c.kind)
            && mbox.agent_id() != Some(agent)
        {
            return;
        }
        self.child_failed(ctx, child);
    }

    fn child_failed(&mut self, ctx: &mut Ctx<Self>, child: usize) {
        let covered = self.job.as_ref().is_some_and(|j| j.covers(child));
        if covered || self.failed.contains(&child) {
            return;
        }
        tracing::debug!(coop = %ctx.coop(), child, "supervised child failed");
        self.failed.push_back(child);
        self.pump(ctx);
    }

    fn on_coop_gone(&mut self, ctx: &mut Ctx<Self>, gone: CoopDeregistered) {
        let Some(child) = self.children.iter().position(
            |c| matches!(c.kind, ChildKind::Coop { current: Some(id), .. } if id == gone.coop),
        ) else {
            return;
        };
        if let ChildKind::Coop { current, .. } = &mut self.children[child].kind {
            *current = None;
        }
        self.publish();
        if let Some(job) = &mut self.job
            && job.awaiting == Some(child)
        {
            job.awaiting = None;
            self.advance(ctx);
            return;
        }
        match gone.reason {
            DeregReason::Panic
            | DeregReason::Escalation
            | DeregReason::Restart
            | DeregReason::StartFailed => {
                self.child_failed(ctx, child);
            }
            DeregReason::Normal | DeregReason::User(_) => self.children[child].ended = true,
            // Its supervisor is leaving too.
            DeregReason::ParentDeregistered | DeregReason::Shutdown => {}
        }
    }

    fn on_ack(&mut self, ctx: &mut Ctx<Self>, ChildAck { child, epoch, ack }: ChildAck) {
        let Some(job) = &mut self.job else { return };
        if job.epoch != epoch || job.awaiting != Some(child) {
            return;
        }
        job.awaiting = None;
        match ack {
            Ack::Stopped => {}
            Ack::Started => self.count_restart(child),
            Ack::StartFailed => self.failed.push_back(child),
        }
        self.advance(ctx);
    }

    fn on_restart_due(&mut self, ctx: &mut Ctx<Self>, RestartDue { epoch }: RestartDue) {
        let Some(job) = &mut self.job else { return };
        if job.epoch == epoch && matches!(job.step, Step::Backoff) {
            job.step = Step::Starting(0);
            job._timer = None;
            self.advance(ctx);
        }
    }

    /// Counts a restart of `child` in its stats (an agent counts itself in `AgentStats` and
    /// `EnvStats` when its new incarnation starts; a coop is counted here in both).
    fn count_restart(&mut self, child: usize) {
        self.children[child].restarts += 1;
        self.publish();
    }

    /// Starts the next restart if none is running.
    fn pump(&mut self, ctx: &mut Ctx<Self>) {
        while self.job.is_none() {
            let Some(child) = self.failed.pop_front() else {
                return;
            };
            if Self::leaving(ctx) {
                self.failed.clear();
                return;
            }
            let now = ctx.env().inner().timers.now_ns();
            let window = u64::try_from(self.policy.within.as_nanos()).unwrap_or(u64::MAX);
            while self
                .history
                .front()
                .is_some_and(|&t| now.saturating_sub(t) >= window)
            {
                self.history.pop_front();
            }
            if self.history.len() >= self.policy.max_restarts as usize {
                self.escalate(ctx, child);
                return;
            }
            self.history.push_back(now);
            self.restarts += 1;
            let live = |c: &usize| !self.children[*c].ended;
            let set: Vec<usize> = match self.policy.strategy {
                Strategy::OneForOne => vec![child],
                Strategy::OneForAll => (0..self.children.len()).filter(live).collect(),
                Strategy::RestForOne => (child..self.children.len()).filter(live).collect(),
            };
            self.failed.retain(|c| !set.contains(c));
            self.epoch += 1;
            tracing::debug!(coop = %ctx.coop(), child, restart = ?set, "restarting");
            self.job = Some(Job {
                epoch: self.epoch,
                step: Step::Stopping(set.len()),
                set,
                delay: self.policy.backoff.delay(self.history.len()),
                awaiting: None,
                _timer: None,
            });
            self.publish();
            self.advance(ctx);
        }
    }

    /// Drives the current job until it waits for a child, the backoff, or is done; then the
    /// next failure.
    fn advance(&mut self, ctx: &mut Ctx<Self>) {
        loop {
            if Self::leaving(ctx) {
                self.job = None;
                self.failed.clear();
                return;
            }
            let Some(job) = &mut self.job else { break };
            if job.awaiting.is_some() || matches!(job.step, Step::Backoff) {
                return;
            }
            let epoch = job.epoch;
            match job.step {
                Step::Stopping(0) if job.delay.is_zero() => job.step = Step::Starting(0),
                Step::Stopping(0) => {
                    job.step = Step::Backoff;
                    job._timer =
                        Some(ctx.send_delayed(ctx.mbox(), job.delay, RestartDue { epoch }));
                    return;
                }
                Step::Stopping(n) => {
                    let child = job.set[n - 1];
                    job.step = Step::Stopping(n - 1);
                    if self.stop(ctx, child, epoch) {
                        self.await_child(child);
                        return;
                    }
                }
                Step::Starting(n) if n == job.set.len() => self.job = None,
                Step::Starting(n) => {
                    let child = job.set[n];
                    job.step = Step::Starting(n + 1);
                    if self.start(ctx, child, epoch) {
                        self.await_child(child);
                        return;
                    }
                }
                Step::Backoff => return,
            }
        }
        self.pump(ctx);
    }

    fn await_child(&mut self, child: usize) {
        if let Some(job) = &mut self.job {
            job.awaiting = Some(child);
        }
    }

    /// Stops `child`; true if the supervisor must wait for it.
    fn stop(&mut self, ctx: &Ctx<Self>, child: usize, epoch: u64) -> bool {
        match &mut self.children[child].kind {
            ChildKind::Agent(mbox) => send_control(mbox.shared(), Control::Stop { epoch }),
            ChildKind::Coop { current, .. } => {
                let Some(id) = *current else { return false };
                match ctx.env().deregister_coop(id, DeregReason::Restart) {
                    Ok(()) | Err(DeregisterError::AlreadyDeregistering(_)) => true,
                    Err(_) => {
                        *current = None;
                        false
                    }
                }
            }
        }
    }

    /// Starts `child` again; true if the supervisor must wait for it.
    fn start(&mut self, ctx: &Ctx<Self>, child: usize, epoch: u64) -> bool {
        match &self.children[child].kind {
            ChildKind::Agent(mbox) => send_control(mbox.shared(), Control::Start { epoch }),
            ChildKind::Coop { .. } => {
                if self.register_coop(ctx, child) {
                    ctx.env()
                        .inner()
                        .counters
                        .restarts
                        .fetch_add(1, Ordering::Relaxed);
                    self.count_restart(child);
                } else {
                    self.failed.push_back(child);
                }
                false
            }
        }
    }

    /// Makes and registers a fresh coop for the child coop `child`; false if that failed.
    fn register_coop(&mut self, ctx: &Ctx<Self>, child: usize) -> bool {
        let ChildKind::Coop { factory, current } = &mut self.children[child].kind else {
            return false;
        };
        let mut coop = ctx.child_coop();
        coop.notify_on_dereg(ctx.mbox());
        if catch_unwind(AssertUnwindSafe(|| factory(&mut coop))).is_err() {
            tracing::error!(coop = %ctx.coop(), child, "supervised coop factory panicked");
            return false;
        }
        match ctx.register_coop(coop) {
            Ok(id) => {
                *current = Some(id);
                self.publish();
                true
            }
            Err(error) => {
                tracing::error!(coop = %ctx.coop(), child, %error, "supervised coop failed to register");
                false
            }
        }
    }

    /// Gives up: the restart intensity is exceeded.
    fn escalate(&mut self, ctx: &mut Ctx<Self>, child: usize) {
        tracing::warn!(
            coop = %ctx.coop(),
            child,
            max_restarts = self.policy.max_restarts,
            within = ?self.policy.within,
            "restart intensity exceeded: escalating"
        );
        self.escalations += 1;
        ctx.env()
            .inner()
            .counters
            .escalations
            .fetch_add(1, Ordering::Relaxed);
        self.job = None;
        self.failed.clear();
        self.publish();
        ctx.deregister_coop(DeregReason::Escalation);
    }
}

impl Agent for Supervisor {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Supervisor::on_child_failed)?
            .on(Supervisor::on_ack)?
            .on(Supervisor::on_restart_due)?
            .on(Supervisor::on_coop_gone)?
            .panic_reaction(PanicReaction::DeregisterCoop);
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        for child in 0..self.children.len() {
            if matches!(self.children[child].kind, ChildKind::Coop { .. })
                && !self.register_coop(ctx, child)
            {
                self.child_failed(ctx, child);
            }
        }
        Ok(())
    }
}

/// What registration needs from a supervising coop.
pub(crate) struct Plan {
    /// Per agent of the coop: its link, if it is a supervised child.
    pub(crate) links: Vec<Option<SupervisorLink>>,
    pub(crate) shared: Arc<SupervisorShared>,
}

/// Checks a coop's supervision and adds its supervisor to `agents`. `None` if the coop does not
/// supervise.
pub(crate) fn prepare(
    agents: &mut Vec<PendingAgent>,
    policy: Option<Supervision>,
    children: Vec<ChildSpec>,
    env: &Arc<dyn AgentHost>,
) -> Result<Option<Plan>, SupervisionError> {
    let Some(policy) = policy else {
        return if children.is_empty() {
            Ok(None)
        } else {
            Err(SupervisionError::NotSupervising)
        };
    };
    policy.check()?;
    let shared = Arc::new(AgentShared::new(
        env.agent_classes()
            .of::<Supervisor>(std::any::type_name::<Supervisor>(), env),
    ));
    let supervisor_mbox = Mbox::from_shared(Arc::clone(&shared));
    let mut links = vec![None; agents.len() + 1];
    let mut kids = Vec::with_capacity(children.len());
    for (child, spec) in children.into_iter().enumerate() {
        kids.push(match spec {
            ChildSpec::Agent(index) => {
                links[index] = Some(SupervisorLink::new(supervisor_mbox.clone(), child));
                ChildKind::Agent(Mbox::from_shared(Arc::clone(&agents[index].shared)))
            }
            ChildSpec::Coop(factory) => ChildKind::Coop {
                factory,
                current: None,
            },
        });
    }
    let published = Arc::new(SupervisorShared::default());
    agents.push(PendingAgent {
        shared,
        agent: UndefinedAgent::new(Supervisor::new(policy, kids, Arc::clone(&published))),
    });
    Ok(Some(Plan {
        links,
        shared: published,
    }))
}
