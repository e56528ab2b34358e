use super::{DropReason, Outcome, OutcomeKind, TraceFilter, TraceRecord};
use crate::ids::{AgentId, MboxId};
use std::any::TypeId;
use std::sync::Arc;

struct Ping;
struct Pong;

fn record(outcome: Outcome<'static>, message_type: TypeId) -> TraceRecord<'static> {
    TraceRecord {
        agent: Some(AgentId::new(3, 1)),
        agent_type: Some("app::Worker"),
        mbox: Some(MboxId::next()),
        message: "app::Ping",
        message_type,
        outcome,
    }
}

#[test]
fn an_empty_filter_accepts_everything() {
    let r = record(Outcome::Handled, TypeId::of::<Ping>());
    assert!(TraceFilter::new().accepts(&r));
}

#[test]
fn criteria_of_one_kind_are_alternatives_and_kinds_combine() {
    let ping = record(Outcome::Handled, TypeId::of::<Ping>());
    let shared_ping = record(
        Outcome::Dropped(DropReason::FilteredOut),
        TypeId::of::<Arc<Ping>>(),
    );
    let pong = record(Outcome::Handled, TypeId::of::<Pong>());
    let messages = TraceFilter::new().message::<Ping>();
    assert!(messages.accepts(&ping));
    assert!(
        messages.accepts(&shared_ping),
        "Arc<Ping> from a multi mbox"
    );
    assert!(!messages.accepts(&pong));

    let both = TraceFilter::new().message::<Ping>().message::<Pong>();
    assert!(both.accepts(&pong));

    let dropped_pings = messages.clone().outcome(OutcomeKind::Dropped);
    assert!(!dropped_pings.accepts(&ping));
    assert!(dropped_pings.accepts(&shared_ping));
}

#[test]
fn agent_mbox_type_and_custom_criteria() {
    let r = record(Outcome::Ignored { state: "idle" }, TypeId::of::<Ping>());
    let mbox = r.mbox.expect("set");
    assert!(TraceFilter::new().agent(AgentId::new(3, 1)).accepts(&r));
    assert!(!TraceFilter::new().agent(AgentId::new(3, 3)).accepts(&r));
    assert!(TraceFilter::new().mbox(mbox).accepts(&r));
    assert!(!TraceFilter::new().mbox(MboxId::next()).accepts(&r));
    assert!(!TraceFilter::new().agent_type::<Pong>().accepts(&r));
    let in_idle =
        TraceFilter::new().custom(|r| matches!(r.outcome, Outcome::Ignored { state: "idle" }));
    assert!(in_idle.accepts(&r));
    assert!(!in_idle.accepts(&record(Outcome::Handled, TypeId::of::<Ping>())));
}

#[test]
fn records_read_as_one_line() {
    let r = record(Outcome::Ignored { state: "idle" }, TypeId::of::<Ping>());
    let line = r.to_string();
    assert!(
        line.starts_with("agent#3.1 (app::Worker) <- mbox#"),
        "{line}"
    );
    assert!(
        line.ends_with(": app::Ping: ignored (no handler in state `idle`)"),
        "{line}"
    );
}
