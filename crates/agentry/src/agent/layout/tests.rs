//! Which definitions share a layout.

use super::{AgentLayout, LayoutCache};
use crate::agent::Ctx;
use crate::agent::handlers::{HandlerTable, TypedHandler};
use crate::agent::state::{State, StateTree};
use crate::ids::MboxId;
use std::any::TypeId;
use std::borrow::Cow;
use std::sync::Arc;

struct Agent;
struct Ping;
struct Pong;

/// A layout with states `extra` and one handler per message type in `types`, from the
/// agent's own mbox `own`.
fn layout(own: MboxId, extra: &[&'static str], types: &[TypeId]) -> AgentLayout {
    let mut states = StateTree::new();
    for name in extra {
        states.add(Cow::Borrowed(*name), None).expect("state");
    }
    let mut table = HandlerTable::<Agent>::new(own);
    for &type_id in types {
        let handler = TypedHandler::new(|_: &mut Agent, _: &mut Ctx<Agent>, _: Ping| {});
        table
            .add(
                own,
                type_id,
                "message",
                &[State::DEFAULT],
                Box::new(handler),
                &states,
            )
            .expect("subscribe");
    }
    let (handlers, _) = table.finish(&states);
    AgentLayout::new(states, handlers)
}

#[test]
fn agents_of_one_type_with_the_same_definition_share_it_whatever_their_mboxes() {
    let cache = LayoutCache::default();
    let types = [TypeId::of::<Ping>(), TypeId::of::<Pong>()];
    let first = cache.share(
        TypeId::of::<Agent>(),
        layout(MboxId::next(), &["on"], &types),
    );
    let second = cache.share(
        TypeId::of::<Agent>(),
        layout(MboxId::next(), &["on"], &types),
    );
    assert!(Arc::ptr_eq(&first, &second));
}

#[test]
fn a_different_definition_keeps_its_own_and_the_first_stays_cached() {
    let cache = LayoutCache::default();
    let own = MboxId::next();
    let ping = [TypeId::of::<Ping>()];
    let first = cache.share(TypeId::of::<Agent>(), layout(own, &["on"], &ping));
    for other in [
        layout(own, &["off"], &ping),
        layout(own, &["on", "off"], &ping),
        layout(own, &["on"], &[TypeId::of::<Pong>()]),
        layout(own, &["on"], &[]),
    ] {
        let other = cache.share(TypeId::of::<Agent>(), other);
        assert!(!Arc::ptr_eq(&first, &other));
    }
    let again = cache.share(TypeId::of::<Agent>(), layout(own, &["on"], &ping));
    assert!(Arc::ptr_eq(&first, &again));
}

#[test]
fn layouts_of_different_agent_types_are_not_mixed() {
    let cache = LayoutCache::default();
    let ping = [TypeId::of::<Ping>()];
    let a = cache.share(TypeId::of::<Agent>(), layout(MboxId::next(), &[], &ping));
    let b = cache.share(TypeId::of::<Ping>(), layout(MboxId::next(), &[], &ping));
    assert!(!Arc::ptr_eq(&a, &b));
}
