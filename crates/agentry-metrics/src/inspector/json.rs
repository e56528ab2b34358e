//! A snapshot as the JSON object the page reads (one per event).
//!
//! Ids are strings as the runtime displays them (`agent#3.1`), so the page never loses precision
//! on a 64-bit id; counters are numbers (exact up to 2^53 in the browser); a measurement that
//! is not tracked is `null`, never `0`.

use crate::family::{Families, Value};
use crate::metrics::Source;
use agentry::snapshot::{AgentSnapshot, CoopSnapshot, EnvSnapshot, SnapshotQuery};
use serde_json::{Map, Value as Json, json};
use std::time::Duration;

/// The JSON text of `snapshot`, taken `at` after the inspector was made.
pub(super) fn render(
    snapshot: &EnvSnapshot,
    query: &SnapshotQuery,
    extra: &[Source],
    at: Duration,
) -> String {
    let s = &snapshot.stats;
    let (offset, limit) = query.page();
    let value = json!({
        "t_ms": at.as_secs_f64() * 1000.0,
        "query": {
            "filter": query.filter_text(),
            "sort": query.sort_by().name(),
            "offset": offset,
            "limit": limit,
        },
        "env": {
            "coops": s.coops,
            "agents": s.agents,
            "timers": s.timers,
            "watches": s.watches,
            "dead_letters": s.dead_letters,
            "unhandled": s.unhandled,
            "limit_dropped": s.limit_dropped,
            "limit_redirected": s.limit_redirected,
            "panics": s.panics,
            "no_subscribers": s.no_subscribers,
            "dropped_on_shutdown": s.dropped_on_shutdown,
            "timers_revoked": s.timers_revoked,
            "restarts": s.restarts,
            "escalations": s.escalations,
        },
        "dispatchers": snapshot.dispatchers.iter().map(|d| json!({
            "name": d.name,
            "kind": d.kind,
            "threads": d.threads,
            "agents": d.agents,
            "handled": d.handled,
            "queued": d.queued,
        })).collect::<Vec<_>>(),
        "agents_total": snapshot.agents_total,
        "matched": snapshot.matched,
        "agents": snapshot.agents.iter().map(agent).collect::<Vec<_>>(),
        "coops_total": snapshot.coops_total,
        "coops": snapshot.coops.iter().map(coop).collect::<Vec<_>>(),
        "links": extra.iter().map(link).collect::<Vec<_>>(),
    });
    value.to_string()
}

fn agent(a: &AgentSnapshot) -> Json {
    let s = &a.stats;
    json!({
        "id": a.id.to_string(),
        "coop": a.coop.to_string(),
        "type": a.agent_type,
        "state": a.state,
        "accepting": a.accepting,
        "handled": s.handled + s.insend_handled,
        "unhandled": s.unhandled,
        "dropped": s.dropped,
        "refused": s.refused,
        "redirected": s.redirected,
        "panics": s.panics,
        "restarts": s.restarts,
        "queue_depth": tracked(s.queue_depth.value()),
        "handler_mean_us": match s.handler_time.value().and_then(|t| t.mean()) {
            Some(mean) => json!(mean.as_secs_f64() * 1e6),
            None => Json::Null,
        },
    })
}

fn tracked(v: Option<u64>) -> Json {
    v.map_or(Json::Null, |v| json!(v))
}

fn coop(c: &CoopSnapshot) -> Json {
    json!({
        "id": c.id.to_string(),
        "parent": c.parent.map(|p| p.to_string()),
        "agents": c.agents,
        "deregistering": c.deregistering,
        "supervisor": c.supervisor.as_ref().map(|s| json!({
            "children": s.children.len(),
            "restarts": s.restarts,
            "escalations": s.escalations,
        })),
    })
}

/// An extra source: its kind, its name and its metrics, read now (as a scrape reads them).
fn link(source: &Source) -> Json {
    let (kind, name) = source.key();
    let mut families = Families::default();
    source.collect(&mut families);
    let mut values = Map::new();
    families.for_each_sample(|family, labels, value| {
        let mut key = family.to_owned();
        for (k, v) in labels {
            key.push_str(&format!("{{{k}={v}}}"));
        }
        let value = match value {
            Value::Int(v) => json!(v),
            Value::Histogram(h) => {
                json!({ "sum_seconds": h.total.as_secs_f64(), "count": h.count() })
            }
        };
        values.insert(key, value);
    });
    json!({ "kind": kind, "name": name, "values": values })
}
