//! Which definitions share a layout.

use super::{AgentLayout, share};
use crate::agent::Ctx;
use crate::agent::handlers::HandlerTable;
use crate::agent::handlers::shared::{NewHandler, Sharing};
use crate::agent::state::{State, StateTree};
use crate::ids::MboxId;
use crate::mbox::class::AgentClass;
use crate::stats::EnvCounters;
use std::any::TypeId;
use std::borrow::Cow;
use std::sync::Arc;

struct Agent;
struct Ping;
struct Pong;

/// A layout with states `extra` and one handler per message type in `types`, from the
/// agent's own mbox `own`.
fn layout(own: MboxId, extra: &[&'static str], types: &[TypeId]) -> AgentLayout {
    let declarations: Vec<(TypeId, &[State])> = types
        .iter()
        .map(|&type_id| (type_id, &[State::DEFAULT][..]))
        .collect();
    let (table, states) = declared(own, None, extra, &declarations);
    let (handlers, _) = table.finish(&states);
    AgentLayout::new(states, handlers)
}

/// The class of the agent type `T` in an environment of its own.
fn class<T: 'static>() -> Arc<AgentClass> {
    AgentClass::new::<T>(
        "t",
        Arc::new(EnvCounters::new(None, None)),
        std::sync::Weak::<crate::env::EnvInner>::new(),
    )
}

#[test]
fn agents_of_one_type_with_the_same_definition_share_it_whatever_their_mboxes() {
    let class = class::<Agent>();
    let types = [TypeId::of::<Ping>(), TypeId::of::<Pong>()];
    let first = share(&class, layout(MboxId::next(), &["on"], &types));
    let second = share(&class, layout(MboxId::next(), &["on"], &types));
    assert!(Arc::ptr_eq(&first, &second));
}

#[test]
fn a_different_definition_keeps_its_own_and_the_first_stays_cached() {
    let class = class::<Agent>();
    let own = MboxId::next();
    let ping = [TypeId::of::<Ping>()];
    let first = share(&class, layout(own, &["on"], &ping));
    for other in [
        layout(own, &["off"], &ping),
        layout(own, &["on", "off"], &ping),
        layout(own, &["on"], &[TypeId::of::<Pong>()]),
        layout(own, &["on"], &[]),
    ] {
        let other = share(&class, other);
        assert!(!Arc::ptr_eq(&first, &other));
    }
    let again = share(&class, layout(own, &["on"], &ping));
    assert!(Arc::ptr_eq(&first, &again));
}

#[test]
fn layouts_of_different_agent_types_are_not_mixed() {
    let ping = [TypeId::of::<Ping>()];
    let a = share(&class::<Agent>(), layout(MboxId::next(), &[], &ping));
    let b = share(&class::<Ping>(), layout(MboxId::next(), &[], &ping));
    assert!(!Arc::ptr_eq(&a, &b));
}

/// A table of `Agent` whose own mbox is `own`, expecting `expected` if given, with one
/// handler per `(type, states)` declaration, in order; and the tree it was declared in (the
/// default state, plus `extra`).
fn declared(
    own: MboxId,
    expected: Option<&Arc<AgentLayout>>,
    extra: &[&'static str],
    declarations: &[(TypeId, &[State])],
) -> (HandlerTable<Agent>, StateTree) {
    let mut states = StateTree::new();
    for name in extra {
        states.add(Cow::Borrowed(*name), None).expect("state");
    }
    let mut table = match expected {
        Some(layout) => HandlerTable::expecting(own, Arc::clone(layout), Sharing::Never),
        None => HandlerTable::new(own),
    };
    for &(type_id, in_states) in declarations {
        let handler = NewHandler::typed(|_: &mut Agent, _: &mut Ctx<Agent>, _: Ping| {});
        table
            .add(own, type_id, "message", in_states, handler, &states)
            .expect("subscribe");
    }
    (table, states)
}

/// Handler declarations, in order: a message type and the states it is handled in.
type Declarations<'a> = &'a [(TypeId, &'a [State])];

/// The layout `declarations` build without expecting anything.
fn built(extra: &[&'static str], declarations: &[(TypeId, &[State])]) -> Arc<AgentLayout> {
    let (table, states) = declared(MboxId::next(), None, extra, declarations);
    let (handlers, _) = table.finish(&states);
    Arc::new(AgentLayout::new(states, handlers))
}

#[test]
fn a_definition_that_declares_the_expected_layout_gets_it_without_building_one() {
    let (ping, pong) = (TypeId::of::<Ping>(), TypeId::of::<Pong>());
    let on = State(1);
    let decls: &[(TypeId, &[State])] = &[(ping, &[State::DEFAULT, on]), (pong, &[on])];
    let expected = built(&["on"], decls);
    // Another agent of the type (another own mbox: `Source::Own` in both).
    let own = MboxId::next();
    let (mut table, states) = declared(own, Some(&expected), &["on"], decls);
    assert_eq!(table.subscriptions(), 2);
    let layout = table.take_expected(&states).expect("the same declarations");
    assert!(Arc::ptr_eq(&layout, &expected));
    // Its handlers are indexed as the layout says.
    let handlers = table.into_handlers(&class::<Agent>(), false);
    let found = |t, s| handlers.lookup(&layout.handlers, own, own, t, s).is_some();
    assert!(found(ping, State::DEFAULT) && found(ping, on) && found(pong, on));
    assert!(!found(pong, State::DEFAULT));
    // Another mbox's message of a subscribed type is not the own mbox's.
    assert!(
        handlers
            .lookup(&layout.handlers, own, MboxId::next(), ping, on)
            .is_none()
    );
}

#[test]
fn a_definition_that_departs_from_the_expected_layout_builds_its_own_equal_to_a_fresh_one() {
    let (ping, pong) = (TypeId::of::<Ping>(), TypeId::of::<Pong>());
    let on = State(1);
    let expected = built(&["on"], &[(ping, &[State::DEFAULT]), (pong, &[on])]);
    let cases: [(&[&'static str], Declarations); 5] = [
        // A prefix only.
        (&["on"], &[(ping, &[State::DEFAULT])]),
        // One more subscription.
        (
            &["on"],
            &[
                (ping, &[State::DEFAULT]),
                (pong, &[on]),
                (pong, &[State::DEFAULT]),
            ],
        ),
        // Another state for the second handler.
        (
            &["on"],
            &[(ping, &[State::DEFAULT]), (pong, &[State::DEFAULT])],
        ),
        // The other order.
        (&["on"], &[(pong, &[on]), (ping, &[State::DEFAULT])]),
        // The same declarations in another tree.
        (&["on", "off"], &[(ping, &[State::DEFAULT]), (pong, &[on])]),
    ];
    for (extra, decls) in cases {
        let (mut table, states) = declared(MboxId::next(), Some(&expected), extra, decls);
        assert!(
            table.take_expected(&states).is_none(),
            "{decls:?} in {extra:?}"
        );
        let (handlers, _) = table.finish(&states);
        let own = AgentLayout::new(states, handlers);
        assert!(own.same_as(&built(extra, decls)), "{decls:?} in {extra:?}");
        assert!(!own.same_as(&expected));
    }
}
