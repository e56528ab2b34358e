//! What a coop of the churn will be, drawn from the seeded generator before it is built:
//! its agents, their dispatchers, how they start, finish, react to panics and overload, and
//! which multi mboxes they read.

use super::dispatchers::DispKind;
use crate::xorshift::XorShift;
use agentry::{PanicReaction, Priority};

/// How an agent's `on_start` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartPlan {
    Ok,
    /// Returns `Err(UserError)`.
    Error,
    /// Panics.
    Panic,
}

/// The reaction of an agent's limit on `Burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitPlan {
    Drop,
    Redirect,
    Transform,
}

/// One agent.
#[derive(Clone, Debug)]
pub struct AgentPlan {
    pub start: StartPlan,
    pub finish_panics: bool,
    pub reaction: PanicReaction,
    /// Only for agents after the first: the first is the coop's sink.
    pub limit: Option<LimitPlan>,
    pub priority: Priority,
    pub disp: DispKind,
    /// Its active group, if `disp` is `ActiveGroup`.
    pub group: u64,
    /// The index of the topic and of the tick topic it reads, if any.
    pub topic: Option<usize>,
    pub ticks: Option<usize>,
    /// Varies its filter's choices.
    pub salt: u64,
}

/// One coop.
#[derive(Clone, Debug)]
pub struct CoopPlan {
    pub agents: Vec<AgentPlan>,
}

impl CoopPlan {
    /// True if one of its agents fails to start.
    pub fn fails(&self) -> bool {
        self.agents.iter().any(|a| a.start != StartPlan::Ok)
    }
}

/// A child coop an agent is asked to register from its handler.
#[derive(Debug)]
pub struct ChildOrder {
    pub plan: CoopPlan,
}

/// The proportions of the churn, in percent.
pub struct Mix {
    pub start_fails: u64,
    pub finish_panics: u64,
    pub deregister_on_panic: u64,
    pub limited: u64,
    pub reads_topic: u64,
    pub reads_ticks: u64,
    /// One dispatcher kind for the whole coop (else one per agent).
    pub one_kind: u64,
}

pub const MIX: Mix = Mix {
    start_fails: 8,
    finish_panics: 3,
    deregister_on_panic: 50,
    limited: 60,
    reads_topic: 60,
    reads_ticks: 40,
    one_kind: 70,
};

/// True with probability `percent` / 100.
pub fn chance(rng: &mut XorShift, percent: u64) -> bool {
    rng.below(100) < percent
}

impl CoopPlan {
    /// A coop of 1 to 4 agents; `topics` and `tick_topics` are how many of each exist.
    pub fn random(rng: &mut XorShift, topics: usize, tick_topics: usize) -> CoopPlan {
        let n = 1 + rng.below(4) as usize;
        let coop_kind = DispKind::random(rng);
        let one_kind = chance(rng, MIX.one_kind);
        let failing = chance(rng, MIX.start_fails).then(|| rng.below(n as u64) as usize);
        let agents = (0..n)
            .map(|i| AgentPlan {
                start: match failing {
                    Some(f) if f == i => {
                        if rng.below(2) == 0 {
                            StartPlan::Error
                        } else {
                            StartPlan::Panic
                        }
                    }
                    _ => StartPlan::Ok,
                },
                finish_panics: chance(rng, MIX.finish_panics),
                reaction: if chance(rng, MIX.deregister_on_panic) {
                    PanicReaction::DeregisterCoop
                } else {
                    PanicReaction::Ignore
                },
                limit: (i > 0 && chance(rng, MIX.limited)).then(|| match rng.below(3) {
                    0 => LimitPlan::Drop,
                    1 => LimitPlan::Redirect,
                    _ => LimitPlan::Transform,
                }),
                priority: Priority::ALL[rng.below(Priority::ALL.len() as u64) as usize],
                disp: if one_kind {
                    coop_kind
                } else {
                    DispKind::random(rng)
                },
                group: rng.below(4),
                topic: chance(rng, MIX.reads_topic).then(|| rng.below(topics as u64) as usize),
                ticks: chance(rng, MIX.reads_ticks).then(|| rng.below(tick_topics as u64) as usize),
                salt: rng.next_u64(),
            })
            .collect();
        CoopPlan { agents }
    }
}
