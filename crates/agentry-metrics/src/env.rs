//! The core's families: the environment's counters ([`EnvStats`]), each dispatcher's
//! ([`DispatcherStats`](agentry::disp::DispatcherStats)) and each agent type's
//! ([`AgentTypeStats`](agentry::AgentTypeStats)), all read when scraped.

use crate::family::{Families, Kind, Spec, Value};
use agentry::{AgentStats, EnvHandle, EnvStats};
use std::collections::BTreeMap;

const fn counter(name: &'static str, help: &'static str) -> Spec {
    Spec {
        name,
        help,
        kind: Kind::Counter,
        labels: &[],
    }
}

const fn gauge(name: &'static str, help: &'static str) -> Spec {
    Spec {
        name,
        help,
        kind: Kind::Gauge,
        labels: &[],
    }
}

type EnvField = fn(&EnvStats) -> u64;

/// The environment's gauges.
pub(crate) const ENV_GAUGES: &[(Spec, EnvField)] = &[
    (gauge("agentry_coops", "Coops registered now."), |s| {
        s.coops as u64
    }),
    (gauge("agentry_agents", "Agents registered now."), |s| {
        s.agents as u64
    }),
    (gauge("agentry_timers", "Timers scheduled now."), |s| {
        s.timers as u64
    }),
    (
        gauge("agentry_watches", "Death watches registered now."),
        |s| s.watches as u64,
    ),
    (
        gauge(
            "agentry_agent_memory_reserved_bytes",
            "Bytes the process's store of agent memory holds for agents' cells and queues.",
        ),
        |s| s.agent_memory_reserved,
    ),
    (
        gauge(
            "agentry_agent_memory_idle_bytes",
            "Bytes of the store of agent memory free for reuse outside the threads' own caches.",
        ),
        |s| s.agent_memory_idle,
    ),
];

/// The environment's counters.
pub(crate) const ENV_COUNTERS: &[(Spec, EnvField)] = &[
    (
        counter(
            "agentry_dead_letters",
            "Messages refused or discarded because their receiver was not running.",
        ),
        |s| s.dead_letters,
    ),
    (
        counter(
            "agentry_messages_unhandled",
            "Messages whose receiver had no handler in its current state.",
        ),
        |s| s.unhandled,
    ),
    (
        counter(
            "agentry_messages_limit_dropped",
            "Messages a message limit dropped.",
        ),
        |s| s.limit_dropped,
    ),
    (
        counter(
            "agentry_messages_limit_redirected",
            "Messages a message limit redirected.",
        ),
        |s| s.limit_redirected,
    ),
    (
        counter(
            "agentry_messages_limit_transformed",
            "Messages a message limit transformed.",
        ),
        |s| s.limit_transformed,
    ),
    (
        counter(
            "agentry_redirect_loops",
            "Messages dropped because a redirect or transform chain was too long.",
        ),
        |s| s.redirect_loops,
    ),
    (
        counter(
            "agentry_panics",
            "Panics caught in handlers, hooks, insend handlers, filters, transforms and drops.",
        ),
        |s| s.panics,
    ),
    (
        counter(
            "agentry_messages_no_subscribers",
            "Messages sent to a multi mbox with no subscriber for their type.",
        ),
        |s| s.no_subscribers,
    ),
    (
        counter(
            "agentry_deliveries_filtered_out",
            "Deliveries a subscriber's delivery filter declined.",
        ),
        |s| s.filtered_out,
    ),
    (
        counter(
            "agentry_messages_dropped_on_shutdown",
            "Messages still queued when their dispatcher shut down.",
        ),
        |s| s.dropped_on_shutdown,
    ),
    (
        counter(
            "agentry_replies_discarded",
            "Replies that arrived after the requester stopped waiting.",
        ),
        |s| s.replies_discarded,
    ),
    (
        counter(
            "agentry_timers_revoked",
            "Timer messages discarded because their timer was cancelled after they were queued.",
        ),
        |s| s.timers_revoked,
    ),
    (
        counter(
            "agentry_restarts",
            "Children (agents and coops) restarted by their supervisors.",
        ),
        |s| s.restarts,
    ),
    (
        counter(
            "agentry_escalations",
            "Supervisors that gave up (restart intensity exceeded) and escalated.",
        ),
        |s| s.escalations,
    ),
];

const DISPATCHER: &[&str] = &["dispatcher", "kind"];

pub(crate) const DISPATCHER_THREADS: Spec = Spec {
    name: "agentry_dispatcher_threads",
    help: "Worker threads of the dispatcher.",
    kind: Kind::Gauge,
    labels: DISPATCHER,
};
pub(crate) const DISPATCHER_AGENTS: Spec = Spec {
    name: "agentry_dispatcher_agents",
    help: "Agents bound to the dispatcher now.",
    kind: Kind::Gauge,
    labels: DISPATCHER,
};
pub(crate) const DISPATCHER_HANDLED: Spec = Spec {
    name: "agentry_dispatcher_demands_handled",
    help: "Demands the dispatcher's threads have handled.",
    kind: Kind::Counter,
    labels: DISPATCHER,
};
pub(crate) const DISPATCHER_QUEUED: Spec = Spec {
    name: "agentry_dispatcher_demands_queued",
    help: "Demands waiting in the dispatcher's queues (approximate while senders are active).",
    kind: Kind::Gauge,
    labels: DISPATCHER,
};

const AGENT_TYPE: &[&str] = &["agent_type"];

pub(crate) const TYPE_AGENTS: Spec = Spec {
    name: "agentry_agent_type_agents",
    help: "Agents of the type registered now.",
    kind: Kind::Gauge,
    labels: AGENT_TYPE,
};
pub(crate) const TYPE_MESSAGES: Spec = Spec {
    name: "agentry_agent_messages",
    help: "Messages sent to agents of the type, by outcome; the outcomes add up to every message sent to them.",
    kind: Kind::Counter,
    labels: &["agent_type", "outcome"],
};
type AgentField = fn(&AgentStats) -> u64;

/// The outcomes of [`TYPE_MESSAGES`]: every message sent to an agent ends in exactly one.
pub(crate) const OUTCOMES: &[(&str, AgentField)] = &[
    ("handled", |s| s.handled),
    ("unhandled", |s| s.unhandled),
    ("insend_handled", |s| s.insend_handled),
    ("redirected", |s| s.redirected),
    ("dropped", |s| s.dropped),
];

/// Agent-type counters besides the outcomes.
pub(crate) const TYPE_COUNTERS: &[(Spec, AgentField)] = &[
    (
        Spec {
            name: "agentry_agent_refused",
            help: "Messages for agents of the type refused because the agent was not running (part of outcome=\"dropped\").",
            kind: Kind::Counter,
            labels: AGENT_TYPE,
        },
        |s| s.refused,
    ),
    (
        Spec {
            name: "agentry_agent_limit_dropped",
            help: "Messages for agents of the type their message limits dropped (part of outcome=\"dropped\").",
            kind: Kind::Counter,
            labels: AGENT_TYPE,
        },
        |s| s.limit_dropped,
    ),
    (
        Spec {
            name: "agentry_agent_panics",
            help: "Panics in the handlers, hooks, insend handlers, filters and transforms of agents of the type.",
            kind: Kind::Counter,
            labels: AGENT_TYPE,
        },
        |s| s.panics,
    ),
    (
        Spec {
            name: "agentry_agent_restarts",
            help: "Times agents of the type were restarted by their supervisors.",
            kind: Kind::Counter,
            labels: AGENT_TYPE,
        },
        |s| s.restarts,
    ),
];

pub(crate) const TYPE_QUEUE_DEPTH: Spec = Spec {
    name: "agentry_agent_queue_depth",
    help: "Messages waiting in the queues of the agents of the type that track their depth.",
    kind: Kind::Gauge,
    labels: AGENT_TYPE,
};
pub(crate) const TYPE_HANDLER_SECONDS: Spec = Spec {
    name: "agentry_agent_handler_seconds",
    help: "Time the timed handler runs of the agents of the type took (a sample, 1 in 256 runs by default; buckets 1 us x 4^i).",
    kind: Kind::Histogram,
    labels: AGENT_TYPE,
};

/// Every family this module may report (for the documented list's test).
#[cfg(all(test, feature = "net", feature = "remote"))]
pub(crate) fn specs() -> Vec<Spec> {
    let mut all: Vec<Spec> = ENV_GAUGES
        .iter()
        .chain(ENV_COUNTERS)
        .map(|(s, _)| *s)
        .collect();
    all.extend([
        DISPATCHER_THREADS,
        DISPATCHER_AGENTS,
        DISPATCHER_HANDLED,
        DISPATCHER_QUEUED,
        TYPE_AGENTS,
        TYPE_MESSAGES,
    ]);
    all.extend(TYPE_COUNTERS.iter().map(|(s, _)| *s));
    all.extend([TYPE_QUEUE_DEPTH, TYPE_HANDLER_SECONDS]);
    all
}

/// Adds the environment's, its dispatchers' and its agent types' samples.
pub(crate) fn collect(env: &EnvHandle, out: &mut Families) {
    let stats = env.stats();
    for (spec, field) in ENV_GAUGES.iter().chain(ENV_COUNTERS) {
        out.int(spec, &[], field(&stats));
    }

    // Two live dispatchers may share a name and kind: one series, summed.
    let mut dispatchers: BTreeMap<(String, &'static str), [u64; 4]> = BTreeMap::new();
    for d in env.dispatcher_stats() {
        let sum = dispatchers.entry((d.name.clone(), d.kind)).or_default();
        sum[0] += d.threads as u64;
        sum[1] += d.agents as u64;
        sum[2] += d.handled;
        sum[3] += d.queued as u64;
    }
    for ((name, kind), [threads, agents, handled, queued]) in &dispatchers {
        let labels = [name.as_str(), kind];
        out.int(&DISPATCHER_THREADS, &labels, *threads);
        out.int(&DISPATCHER_AGENTS, &labels, *agents);
        out.int(&DISPATCHER_HANDLED, &labels, *handled);
        out.int(&DISPATCHER_QUEUED, &labels, *queued);
    }

    for t in env.agent_type_stats() {
        let labels = [t.agent_type];
        out.int(&TYPE_AGENTS, &labels, t.agents as u64);
        for (outcome, field) in OUTCOMES {
            out.int(&TYPE_MESSAGES, &[t.agent_type, outcome], field(&t.totals));
        }
        for (spec, field) in TYPE_COUNTERS {
            out.int(spec, &labels, field(&t.totals));
        }
        if let Some(depth) = t.totals.queue_depth.value() {
            out.int(&TYPE_QUEUE_DEPTH, &labels, depth);
        }
        if let Some(times) = t.totals.handler_time.value() {
            out.add(&TYPE_HANDLER_SECONDS, &labels, Value::Histogram(times));
        }
    }
}
