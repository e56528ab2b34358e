//! A read-only view of a running environment for operators and inspectors
//! ([`EnvHandle::snapshot`]): the environment's counters, its dispatchers, and a page of its
//! agents — chosen by a filter, ordered by a counter — with their coops.
//!
//! # Ground rules
//!
//! - **Read, never added work.** A snapshot reads what the runtime keeps anyway: the slab's
//!   occupants and their counters (relaxed atomics), the coop registry, the environment's
//!   counters, the dispatchers' counters. No message path does anything for it; the one thing
//!   kept for it is the agent's current state, which the agent's worker publishes when the
//!   state changes (`mbox/published_state.rs`: one relaxed store per change, a lock per
//!   incarnation), never otherwise per message.
//! - **Not atomic across agents.** Each agent's counters are read one after the other with
//!   relaxed loads, while the agents keep running: a snapshot of a busy environment is not a
//!   single instant (an agent read later may show a message an agent read earlier had not yet
//!   sent). Each counter, read on its own, is one the runtime really had; with no message in
//!   flight every counter is exact.
//! - **Bounded output.** The agents are scanned once (one lock per slot, in turn, as
//!   [`EnvHandle::agent_type_stats`] does) and matched against the filter without allocating;
//!   only the [`SnapshotQuery::limit`] agents of the requested page are copied out, with the
//!   coops that hold them and those coops' ancestors. A snapshot of 100 000 agents costs a
//!   scan in proportion to them but returns a page, not 100 000 rows.
//! - **Live agents only.** An agent appears from its registration until its slot is freed
//!   (it finished); a coop appears while it is in the registry (registered or being
//!   deregistered). A deregistered coop's agents vanish from the next snapshot once they have
//!   finished.
//!
//! ```
//! use agentry::Env;
//! use agentry::snapshot::{SnapshotQuery, SortBy};
//!
//! struct Worker;
//! impl agentry::Agent for Worker {}
//!
//! let env = Env::new()?;
//! env.handle().register_agent(Worker)?;
//! let snap = env.handle().snapshot(&SnapshotQuery::new().filter("Worker").sort(SortBy::Handled));
//! assert_eq!(snap.matched, 1);
//! assert!(snap.agents[0].agent_type.ends_with("Worker"));
//! env.handle().stop();
//! env.run();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::disp::DispatcherStats;
use crate::env::EnvHandle;
use crate::ids::{AgentId, CoopId, MboxId};
use crate::mbox::Mbox;
use crate::mbox::direct::AgentShared;
use crate::stats::{AgentStats, EnvStats};
use crate::supervision::SupervisorStats;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// The agent counter a snapshot orders its agents by ([`SnapshotQuery::sort`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SortBy {
    /// By agent id (slot, then generation), ascending.
    #[default]
    Id,
    /// Most messages handled first (queued and insend handlers).
    Handled,
    /// Most messages dropped first.
    Dropped,
    /// Most messages unhandled first.
    Unhandled,
    /// Deepest queue first (agents whose depth is not tracked count as 0).
    QueueDepth,
    /// Most panics first.
    Panics,
}

impl SortBy {
    /// The name used in query strings: `id`, `handled`, `dropped`, `unhandled`,
    /// `queue_depth`, `panics`.
    pub fn name(self) -> &'static str {
        match self {
            SortBy::Id => "id",
            SortBy::Handled => "handled",
            SortBy::Dropped => "dropped",
            SortBy::Unhandled => "unhandled",
            SortBy::QueueDepth => "queue_depth",
            SortBy::Panics => "panics",
        }
    }

    /// The order named `name` (as [`name`](Self::name) gives it), if there is one.
    pub fn from_name(name: &str) -> Option<SortBy> {
        [
            SortBy::Id,
            SortBy::Handled,
            SortBy::Dropped,
            SortBy::Unhandled,
            SortBy::QueueDepth,
            SortBy::Panics,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// The sort key of `stats` (larger first), `None` for [`SortBy::Id`].
    fn key(self, stats: &AgentStats) -> Option<u64> {
        match self {
            SortBy::Id => None,
            SortBy::Handled => Some(stats.handled + stats.insend_handled),
            SortBy::Dropped => Some(stats.dropped),
            SortBy::Unhandled => Some(stats.unhandled),
            SortBy::QueueDepth => Some(stats.queue_depth.value().unwrap_or(0)),
            SortBy::Panics => Some(stats.panics),
        }
    }
}

/// Which agents a snapshot returns: those matching [`filter`](Self::filter), ordered by
/// [`sort`](Self::sort), [`limit`](Self::limit) of them from [`offset`](Self::offset).
///
/// ```
/// use agentry::snapshot::{SnapshotQuery, SortBy};
/// let q = SnapshotQuery::new().filter("Reader").sort(SortBy::Dropped).offset(10).limit(5);
/// assert_eq!((q.filter_text(), q.sort_by(), q.page()), ("Reader", SortBy::Dropped, (10, 5)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub struct SnapshotQuery {
    filter: String,
    sort: SortBy,
    offset: usize,
    limit: usize,
}

impl Default for SnapshotQuery {
    fn default() -> Self {
        SnapshotQuery {
            filter: String::new(),
            sort: SortBy::Id,
            offset: 0,
            limit: SnapshotQuery::DEFAULT_LIMIT,
        }
    }
}

impl SnapshotQuery {
    /// The page size of a new query.
    pub const DEFAULT_LIMIT: usize = 100;

    /// Every agent (no filter), by id, the first [`DEFAULT_LIMIT`](Self::DEFAULT_LIMIT).
    pub fn new() -> Self {
        SnapshotQuery::default()
    }

    /// Only agents whose type name, current state name or id (as displayed, e.g. `agent#3.1`)
    /// contains `text` (case-sensitive; empty matches every agent).
    pub fn filter(mut self, text: &str) -> Self {
        text.clone_into(&mut self.filter);
        self
    }

    /// Orders the matching agents by `sort`.
    pub fn sort(mut self, sort: SortBy) -> Self {
        self.sort = sort;
        self
    }

    /// Skips the first `offset` matching agents.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Returns at most `limit` agents.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// The filter text.
    pub fn filter_text(&self) -> &str {
        &self.filter
    }

    /// The order.
    pub fn sort_by(&self) -> SortBy {
        self.sort
    }

    /// `(offset, limit)`.
    pub fn page(&self) -> (usize, usize) {
        (self.offset, self.limit)
    }
}

/// One agent in a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentSnapshot {
    /// Its current incarnation's id.
    pub id: AgentId,
    /// Its direct mbox.
    pub mbox: MboxId,
    /// Its coop.
    pub coop: CoopId,
    /// Its Rust type name.
    pub agent_type: &'static str,
    /// The name of the state it is in, as its worker last published it; `None` before it
    /// has started.
    pub state: Option<String>,
    /// Whether it accepts messages (false once its deregistration began).
    pub accepting: bool,
    /// Its counters (queue depth and handler time where tracked).
    pub stats: AgentStats,
}

/// One coop in a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CoopSnapshot {
    /// Its id.
    pub id: CoopId,
    /// Its parent, if it is a child coop.
    pub parent: Option<CoopId>,
    /// Its agents that have not finished.
    pub agents: usize,
    /// True while it is being deregistered.
    pub deregistering: bool,
    /// Its supervisor's counters, if it supervises.
    pub supervisor: Option<SupervisorStats>,
}

/// What [`EnvHandle::snapshot`] returns (module docs: what it guarantees).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvSnapshot {
    /// The environment's counters (dead letters, timers, …).
    pub stats: EnvStats,
    /// Its live dispatchers' counters.
    pub dispatchers: Vec<DispatcherStats>,
    /// Agents scanned (every live agent).
    pub agents_total: usize,
    /// Agents that matched the filter.
    pub matched: usize,
    /// The requested page of the matching agents, in the requested order.
    pub agents: Vec<AgentSnapshot>,
    /// Coops in the registry.
    pub coops_total: usize,
    /// The coops of the agents in `agents` and all their ancestors, by id.
    pub coops: Vec<CoopSnapshot>,
}

/// A scanned agent: its shared part, its counters, and its sort key.
struct Row {
    shared: Arc<AgentShared>,
    id: AgentId,
    coop: CoopId,
    stats: AgentStats,
}

impl EnvHandle {
    /// A snapshot of the environment and of the page of its agents `query` asks for
    /// (module [`snapshot`](crate::snapshot): what it reads, what it guarantees). Read-only and
    /// off every message path; it costs a scan of the live agents, for dashboards rather than
    /// hot loops.
    pub fn snapshot(&self, query: &SnapshotQuery) -> EnvSnapshot {
        let stats = self.stats();
        let dispatchers = self.dispatcher_stats();
        let inner = self.inner();
        let mut scanned = 0;
        let mut id_text = String::new();
        let mut rows: Vec<Row> = Vec::new();
        for (shared, live) in inner.slab.agents_for_report::<AgentShared>() {
            let Some(binding) = shared.binding().filter(|_| live) else {
                continue;
            };
            let (id, coop) = (binding.id(), binding.coop());
            scanned += 1;
            if !query.filter.is_empty() && !matches(&shared, id, &query.filter, &mut id_text) {
                continue;
            }
            let stats = Mbox::from_shared(Arc::clone(&shared)).stats();
            rows.push(Row {
                shared,
                id,
                coop,
                stats,
            });
        }
        let matched = rows.len();
        let page = page(rows, query);
        let (coops_total, coops) = coops_of(self, &page);
        let agents = page
            .into_iter()
            .map(|row| AgentSnapshot {
                id: row.id,
                mbox: row.shared.mbox_id,
                coop: row.coop,
                agent_type: row.shared.agent_type(),
                state: row.shared.with_state_name(|n| n.map(str::to_owned)),
                accepting: Mbox::from_shared(Arc::clone(&row.shared)).is_alive(),
                stats: row.stats,
            })
            .collect();
        EnvSnapshot {
            stats,
            dispatchers,
            agents_total: scanned,
            matched,
            agents,
            coops_total,
            coops,
        }
    }
}

/// True if the agent's type, state or displayed id contains `filter`.
fn matches(shared: &AgentShared, id: AgentId, filter: &str, id_text: &mut String) -> bool {
    if shared.agent_type().contains(filter) {
        return true;
    }
    if shared.with_state_name(|n| n.is_some_and(|n| n.contains(filter))) {
        return true;
    }
    id_text.clear();
    let _ = write!(id_text, "{id}");
    id_text.contains(filter)
}

/// The rows of the requested page, in order.
fn page(mut rows: Vec<Row>, query: &SnapshotQuery) -> Vec<Row> {
    let (offset, limit) = (query.offset.min(rows.len()), query.limit);
    let end = offset.saturating_add(limit).min(rows.len());
    if offset == end {
        return Vec::new();
    }
    let order = |a: &Row, b: &Row| {
        let (ka, kb) = (query.sort.key(&a.stats), query.sort.key(&b.stats));
        kb.cmp(&ka)
            .then_with(|| (a.id.slot(), a.id.generation()).cmp(&(b.id.slot(), b.id.generation())))
    };
    // Only the first `end` rows need ordering: partition them out, then sort those.
    if end < rows.len() {
        rows.select_nth_unstable_by(end, order);
        rows.truncate(end);
    }
    rows.sort_unstable_by(order);
    rows.drain(..offset);
    rows
}

/// The number of coops, and the coops of `page` with their ancestors, by id.
fn coops_of(env: &EnvHandle, page: &[Row]) -> (usize, Vec<CoopSnapshot>) {
    let wanted: HashSet<CoopId> = page.iter().map(|r| r.coop).collect();
    let registry = env.inner().registry.lock();
    let mut out = BTreeMap::new();
    for mut coop in wanted {
        while !out.contains_key(&coop.get()) {
            let Some(view) = registry.coop_for_report(coop) else {
                break;
            };
            out.insert(
                coop.get(),
                CoopSnapshot {
                    id: coop,
                    parent: view.parent,
                    agents: view.live_agents,
                    deregistering: view.deregistering,
                    supervisor: view.supervisor.map(|s| s.stats.lock().clone()),
                },
            );
            match view.parent {
                Some(parent) => coop = parent,
                None => break,
            }
        }
    }
    (registry.len(), out.into_values().collect())
}
