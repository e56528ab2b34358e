//! Every dispatcher kind the churn binds agents to, made once per environment.

use crate::xorshift::XorShift;
use agentry::EnvHandle;
use agentry::disp::OneThreadDispatcher;
use agentry::disp::{ActiveGroupDispatcher, ActiveObjDispatcher, Binder, PrioOneThreadDispatcher};
use agentry::disp::{Fifo, ThreadPoolDispatcher};

/// A dispatcher configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DispKind {
    OneThreadDefault,
    OneThreadSecond,
    ActiveObj,
    ActiveGroup,
    PoolFifoAgent,
    PoolFifoCoop,
    PrioStrict,
    PrioRoundRobin,
}

impl DispKind {
    pub const ALL: [DispKind; 8] = [
        DispKind::OneThreadDefault,
        DispKind::OneThreadSecond,
        DispKind::ActiveObj,
        DispKind::ActiveGroup,
        DispKind::PoolFifoAgent,
        DispKind::PoolFifoCoop,
        DispKind::PrioStrict,
        DispKind::PrioRoundRobin,
    ];

    pub fn random(rng: &mut XorShift) -> DispKind {
        Self::ALL[rng.below(Self::ALL.len() as u64) as usize]
    }

    pub fn name(self) -> &'static str {
        match self {
            DispKind::OneThreadDefault => "one_thread (default)",
            DispKind::OneThreadSecond => "one_thread (second)",
            DispKind::ActiveObj => "active_obj",
            DispKind::ActiveGroup => "active_group (4 groups)",
            DispKind::PoolFifoAgent => "thread_pool (2 threads, FIFO per agent)",
            DispKind::PoolFifoCoop => "thread_pool (2 threads, FIFO per coop)",
            DispKind::PrioStrict => "prio_one_thread (strictly ordered)",
            DispKind::PrioRoundRobin => "prio_one_thread (quoted round robin)",
        }
    }
}

/// The dispatchers of the churn's environment (kept alive for its whole run).
pub struct Dispatchers {
    default: Binder,
    second: OneThreadDispatcher,
    active_obj: ActiveObjDispatcher,
    groups: ActiveGroupDispatcher,
    pool_agent: ThreadPoolDispatcher,
    pool_coop: ThreadPoolDispatcher,
    prio_strict: PrioOneThreadDispatcher,
    prio_rr: PrioOneThreadDispatcher,
}

impl Dispatchers {
    /// # Errors
    /// A dispatcher that could not be built.
    pub fn new(env: &EnvHandle) -> Result<Self, agentry::BuildError> {
        let pool = |name: &str, fifo| {
            ThreadPoolDispatcher::builder(name)
                .threads(2)
                .fifo(fifo)
                .build(env)
        };
        Ok(Dispatchers {
            default: env.default_binder(),
            second: OneThreadDispatcher::new(env, "soak-second")?,
            active_obj: ActiveObjDispatcher::new(env, "soak-ao")?,
            groups: ActiveGroupDispatcher::new(env, "soak-grp")?,
            pool_agent: pool("soak-pool-agent", Fifo::Agent)?,
            pool_coop: pool("soak-pool-coop", Fifo::Coop)?,
            prio_strict: PrioOneThreadDispatcher::new(env, "soak-prio-s")?,
            prio_rr: PrioOneThreadDispatcher::builder("soak-prio-rr")
                .quoted_round_robin([2; 8])
                .build(env)?,
        })
    }

    /// The binder of `kind` (`group` picks the active group).
    pub fn binder(&self, kind: DispKind, group: u64) -> Binder {
        match kind {
            DispKind::OneThreadDefault => self.default.clone(),
            DispKind::OneThreadSecond => self.second.binder(),
            DispKind::ActiveObj => self.active_obj.binder(),
            DispKind::ActiveGroup => self.groups.binder(&format!("g{group}")),
            DispKind::PoolFifoAgent => self.pool_agent.binder(),
            DispKind::PoolFifoCoop => self.pool_coop.binder(),
            DispKind::PrioStrict => self.prio_strict.binder(),
            DispKind::PrioRoundRobin => self.prio_rr.binder(),
        }
    }
}
