use super::{State, StateTree, Transition};
use std::borrow::Cow;

fn tree() -> (StateTree, [State; 5]) {
    // default
    // work ── idle
    //      └─ busy ── deep
    // off
    let mut t = StateTree::new();
    let work = t.add(Cow::Borrowed("work"), None).expect("work");
    let idle = t.add(Cow::Borrowed("idle"), Some(work)).expect("idle");
    let busy = t.add(Cow::Borrowed("busy"), Some(work)).expect("busy");
    let deep = t.add(Cow::Borrowed("deep"), Some(busy)).expect("deep");
    let off = t.add(Cow::Borrowed("off"), None).expect("off");
    (t, [work, idle, busy, deep, off])
}

#[test]
fn sibling_transition_exits_and_enters_below_the_common_parent() {
    let (t, [work, idle, busy, deep, _]) = tree();
    assert_eq!(
        t.transition(deep, idle),
        Transition {
            exits: vec![deep, busy],
            enters: vec![idle],
            target: idle
        }
    );
    assert_eq!(t.transition(idle, deep).enters, vec![busy, deep]);
    assert!(t.transition(idle, deep).exits == vec![idle]);
    let _ = work;
}

#[test]
fn transition_across_top_level_subtrees() {
    let (t, [work, _, busy, deep, off]) = tree();
    assert_eq!(
        t.transition(deep, off),
        Transition {
            exits: vec![deep, busy, work],
            enters: vec![off],
            target: off
        }
    );
    assert_eq!(
        t.transition(State::DEFAULT, deep).enters,
        vec![work, busy, deep]
    );
}

#[test]
fn transition_to_self_or_ancestor() {
    let (t, [work, _, busy, deep, _]) = tree();
    assert_eq!(
        t.transition(deep, deep),
        Transition {
            exits: vec![],
            enters: vec![],
            target: deep
        }
    );
    assert_eq!(t.transition(deep, work).exits, vec![deep, busy]);
    assert!(t.transition(deep, work).enters.is_empty());
}

#[test]
fn initial_substates_are_followed() {
    let (mut t, [work, idle, busy, _, off]) = tree();
    t.set_initial_substate(work, idle).expect("direct child");
    assert!(t.set_initial_substate(off, busy).is_err());
    assert_eq!(
        t.transition(off, work),
        Transition {
            exits: vec![off],
            enters: vec![work, idle],
            target: idle
        }
    );
    assert_eq!(t.entry_path(work).enters, vec![work, idle]);
    assert_eq!(t.entry_path(State::DEFAULT).enters, vec![State::DEFAULT]);
}
