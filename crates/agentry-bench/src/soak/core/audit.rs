//! The end-of-phase audit of the churn: once every coop is gone, every agent's counters,
//! the environment's counters and what the handlers saw are checked against what the soak
//! itself counted (the guarantees of `docs/SEMANTICS.md` §4, §6, §12, §13 and the start
//! transaction of §3).

use super::agent::Shared;
use super::dispatchers::DispKind;
use super::ledger::{Origin, PhaseLedger, Registration};
use crate::soak::check::Checks;
use crate::soak::tally::Tally;
use crate::soak::wait_until;
use agentry::{AgentStats, DeregReason, EnvStats};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long the audit waits for raced messages to be discarded and counted.
const SETTLE: Duration = Duration::from_secs(10);

/// The soak's own counters at a point in time (to take a phase's share).
#[derive(Clone, Copy, Debug, Default)]
pub struct Marks {
    pub env: EnvStats,
    pub provoked: u64,
    pub runs_after_failure: u64,
    pub ticks_after_cancel: u64,
    pub fifo_violations: u64,
    pub ticks: u64,
    pub cancels_in_handlers: u64,
}

impl Marks {
    pub fn take(env: EnvStats, shared: &Shared) -> Marks {
        let r = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::SeqCst);
        Marks {
            env,
            provoked: shared.provoker.count(),
            runs_after_failure: r(&shared.runs_after_failure),
            ticks_after_cancel: r(&shared.ticks_after_cancel),
            fifo_violations: r(&shared.fifo_violations),
            ticks: r(&shared.ticks),
            cancels_in_handlers: r(&shared.cancels_in_handlers),
        }
    }
}

/// Every fate of a message, as the agent counted it.
fn accounted(s: &AgentStats) -> u64 {
    s.handled + s.unhandled + s.insend_handled + s.redirected + s.dropped
}

/// What each agent must have accounted for: what the soak sent it, plus what the limits of
/// other agents handed over to it.
fn expected(ledger: &PhaseLedger, stats: &[AgentStats]) -> Vec<u64> {
    let mut expected: Vec<u64> = ledger
        .agents
        .iter()
        .map(|a| a.target.probe.sent.load(Ordering::SeqCst))
        .collect();
    for (a, s) in ledger.agents.iter().zip(stats) {
        if let Some(to) = a.redirects_to {
            expected[to] += s.redirected;
        }
    }
    expected
}

fn read_all(ledger: &PhaseLedger) -> Vec<AgentStats> {
    ledger
        .agents
        .iter()
        .map(|a| a.target.mbox.stats())
        .collect()
}

/// Audits a phase whose coops are all gone. `stats_now` reads the environment's counters.
pub fn audit(
    ledger: &PhaseLedger,
    before: &Marks,
    now: impl Fn() -> Marks,
    checks: &mut Checks,
    counts: &mut Tally,
) {
    // Messages that raced a deregistration are discarded (and counted) when their
    // dispatcher reaches them: wait for every agent to be even, then judge.
    let settled = wait_until(SETTLE, || {
        let stats = read_all(ledger);
        let exp = expected(ledger, &stats);
        stats.iter().zip(&exp).all(|(s, e)| accounted(s) == *e)
    });
    let after = now();
    let stats = read_all(ledger);
    let exp = expected(ledger, &stats);
    per_agent(ledger, &stats, &exp, settled, checks);
    environment(ledger, &stats, before, &after, checks);
    start_transaction(ledger, checks);
    counts_of(ledger, &stats, &exp, before, &after, counts);
}

fn per_agent(
    ledger: &PhaseLedger,
    stats: &[AgentStats],
    exp: &[u64],
    settled: bool,
    checks: &mut Checks,
) {
    let mut offenders = Vec::new();
    for (i, ((a, s), e)) in ledger.agents.iter().zip(stats).zip(exp).enumerate() {
        if accounted(s) != *e {
            let coop = &ledger.coops[a.coop];
            offenders.push(format!(
                "agent #{i} on {} (coop #{} {:?}, reason {:?}): handled {} + unhandled {} + \
                 insend_handled {} + redirected {} + dropped {} = {} != sent {} \
                 (of which redirected to it {}); refused {}, limit_dropped {}, panics {}",
                a.disp.name(),
                a.coop,
                coop.registration,
                coop.probe.reason(),
                s.handled,
                s.unhandled,
                s.insend_handled,
                s.redirected,
                s.dropped,
                accounted(s),
                e,
                e - a.target.probe.sent.load(Ordering::SeqCst),
                s.refused,
                s.limit_dropped,
                s.panics,
            ));
        }
    }
    if !settled && offenders.is_empty() {
        offenders.push("the counts settled only after the deadline".into());
    }
    checks.for_all(
        "core",
        "per agent: handled + unhandled + insend_handled + redirected + dropped == sent",
        ledger.agents.len() as u64,
        offenders,
    );
}

fn environment(
    ledger: &PhaseLedger,
    stats: &[AgentStats],
    before: &Marks,
    after: &Marks,
    checks: &mut Checks,
) {
    let refused: u64 = stats.iter().map(|s| s.refused).sum();
    let agent_panics: u64 = stats.iter().map(|s| s.panics).sum();
    let d = |f: fn(&Marks) -> u64| f(after) - f(before);
    checks.eq(
        "core",
        "EnvStats::dead_letters (this phase) == Σ AgentStats::refused",
        d(|m| m.env.dead_letters),
        refused,
    );
    checks.eq(
        "core",
        "EnvStats::panics (this phase) == panics the soak provoked",
        d(|m| m.env.panics),
        d(|m| m.provoked),
    );
    checks.eq(
        "core",
        "Σ AgentStats::panics == panics the soak provoked",
        agent_panics,
        d(|m| m.provoked),
    );
    checks.eq(
        "core",
        "EnvStats::agents after the churn == 0",
        after.env.agents as u64,
        0,
    );
    checks.eq(
        "core",
        "EnvStats::coops after the churn == 0",
        after.env.coops as u64,
        0,
    );
    checks.eq(
        "core",
        "EnvStats::timers after the churn == 0",
        after.env.timers as u64,
        0,
    );
    checks.eq(
        "core",
        "tick handlers started after their timer's cancel() returned == 0",
        d(|m| m.ticks_after_cancel),
        0,
    );
    checks.eq(
        "core",
        "handler runs of an agent after its panic with DeregisterCoop == 0",
        d(|m| m.runs_after_failure),
        0,
    );
    checks.eq(
        "core",
        "Work of one sender handled out of send order == 0",
        d(|m| m.fifo_violations),
        0,
    );
    let mut offenders = Vec::new();
    let registered = ledger
        .coops
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.registration, Registration::Registered(_)));
    let mut n = 0;
    for (i, c) in registered {
        n += 1;
        let told = c.probe.notified.load(Ordering::SeqCst);
        if told != 1 {
            offenders.push(format!(
                "coop #{i} ({:?}): on_dereg called {told} times",
                c.origin
            ));
        }
    }
    checks.for_all(
        "core",
        "every registered coop's on_dereg listener called exactly once",
        n,
        offenders,
    );
}

/// True if the coop's start failed, as its registration or its deregistration says.
fn start_failed(c: &super::ledger::CoopEntry) -> bool {
    matches!(c.registration, Registration::StartFailed)
        || c.probe.reason() == Some(DeregReason::StartFailed)
}

fn start_transaction(ledger: &PhaseLedger, checks: &mut Checks) {
    let mut thread_fail = Vec::new();
    let mut handler_fail = Vec::new();
    let mut spurious = Vec::new();
    let mut ran = Vec::new();
    let mut other = Vec::new();
    let (mut planned_thread, mut planned_handler, mut all) = (0, 0, 0);
    for (i, c) in ledger.coops.iter().enumerate() {
        all += 1;
        if let Registration::Other(e) = &c.registration {
            other.push(format!("coop #{i} ({:?}): {e}", c.origin));
        }
        let reason = c.probe.reason();
        match (c.plan_fails, c.origin, &c.registration) {
            (true, Origin::Thread, r) => {
                planned_thread += 1;
                if !matches!(r, Registration::StartFailed) {
                    thread_fail.push(format!("coop #{i}: register_coop gave {r:?}"));
                }
            }
            (true, Origin::Handler, Registration::Registered(_)) => {
                planned_handler += 1;
                // Its parent may leave while it starts: then it goes with its parent.
                if !matches!(
                    reason,
                    Some(DeregReason::StartFailed | DeregReason::ParentDeregistered)
                ) {
                    handler_fail.push(format!("coop #{i}: deregistered with {reason:?}"));
                }
            }
            (true, Origin::Handler, r) => {
                if matches!(r, Registration::StartFailed) {
                    handler_fail.push(format!(
                        "coop #{i}: a handler's register_coop waited and gave Start"
                    ));
                }
            }
            (false, _, r) => {
                if start_failed(c) {
                    spurious.push(format!(
                        "coop #{i} ({:?}): no agent fails, yet {r:?} / {reason:?}",
                        c.origin
                    ));
                }
            }
        }
        let never_ran = start_failed(c) || matches!(c.registration, Registration::ParentGone);
        let runs = c.probe.runs.load(Ordering::SeqCst);
        if never_ran && runs != 0 {
            ran.push(format!(
                "coop #{i} ({:?}, {:?}, {reason:?}): {runs} handler runs",
                c.origin, c.registration
            ));
        }
    }
    checks.for_all(
        "core",
        "start failure, register_coop from a thread → RegisterError::Start",
        planned_thread,
        thread_fail,
    );
    checks.for_all(
        "core",
        "start failure, registered from a handler → DeregReason::StartFailed \
         (or ParentDeregistered if its parent left first)",
        planned_handler,
        handler_fail,
    );
    checks.for_all(
        "core",
        "coops without a failing agent never fail to start",
        all,
        spurious,
    );
    checks.for_all(
        "core",
        "no agent of a coop whose start failed (or never registered) handled a message",
        all,
        ran,
    );
    checks.for_all(
        "core",
        "register_coop errors other than Start / parent gone == 0",
        all,
        other,
    );
}

fn counts_of(
    ledger: &PhaseLedger,
    stats: &[AgentStats],
    exp: &[u64],
    before: &Marks,
    after: &Marks,
    t: &mut Tally,
) {
    for c in &ledger.coops {
        let reason = c.probe.reason();
        t.one(match (c.origin, &c.registration, reason) {
            (Origin::Thread, Registration::StartFailed, _) => {
                "coops: start failed (register_coop → Start)"
            }
            (Origin::Handler, Registration::Registered(_), Some(DeregReason::StartFailed)) => {
                "coops: start failed (from a handler → StartFailed)"
            }
            (Origin::Thread, Registration::Registered(_), _) => "coops: registered by a thread",
            (Origin::Handler, Registration::Registered(_), _) => "coops: registered by a handler",
            (_, Registration::ParentGone, _) => "coops: refused, parent gone",
            _ => "coops: other",
        });
    }
    t.add("agents", ledger.agents.len() as u64);
    for kind in DispKind::ALL {
        let n = ledger.agents.iter().filter(|a| a.disp == kind).count();
        t.add(format!("agents on {}", kind.name()), n as u64);
    }
    t.add("messages: sent", exp.iter().sum());
    let sum = |f: fn(&AgentStats) -> u64| stats.iter().map(f).sum::<u64>();
    t.add("messages: handled", sum(|s| s.handled));
    t.add("messages: unhandled", sum(|s| s.unhandled));
    t.add("messages: insend_handled", sum(|s| s.insend_handled));
    t.add("messages: redirected", sum(|s| s.redirected));
    t.add("messages: dropped", sum(|s| s.dropped));
    t.add("messages: of which refused", sum(|s| s.refused));
    t.add("messages: of which limit_dropped", sum(|s| s.limit_dropped));
    t.add("panics provoked", after.provoked - before.provoked);
    t.add("ticks handled", after.ticks - before.ticks);
    t.add(
        "timers: cancelled by a handler",
        after.cancels_in_handlers - before.cancels_in_handlers,
    );
    t.add(
        "timers: queued ticks revoked",
        after.env.timers_revoked - before.env.timers_revoked,
    );
}
