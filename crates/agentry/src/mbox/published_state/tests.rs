use super::{PublishedState, StateNames, StateNamesOf};
use crate::ids::MboxId;
use std::sync::Arc;

struct Names(&'static [&'static str]);

impl StateNames for Names {
    fn state_name(&self, index: u16) -> &str {
        self.0[usize::from(index)]
    }
}

fn name(state: &PublishedState, names: &StateNamesOf, me: MboxId) -> Option<String> {
    state.with_name(names, me, |n| n.map(str::to_owned))
}

#[test]
fn agents_of_a_class_name_their_states_through_its_layout_and_keep_no_copy_of_it() {
    let names = StateNamesOf::default();
    let layout = Arc::new(Names(&["idle", "busy"]));
    let (a, b) = (PublishedState::default(), PublishedState::default());
    let (ma, mb) = (MboxId::next(), MboxId::next());
    assert_eq!(name(&a, &names, ma), None, "not started");
    a.started(&names, ma, &layout, 0);
    b.started(&names, mb, &layout, 1);
    assert_eq!(name(&a, &names, ma).as_deref(), Some("idle"));
    assert_eq!(name(&b, &names, mb).as_deref(), Some("busy"));
    a.set(1);
    assert_eq!(name(&a, &names, ma).as_deref(), Some("busy"));
    // The class keeps the layout once; no agent keeps its own.
    assert_eq!(Arc::strong_count(&layout), 2);
    assert!(names.own.lock().is_empty());
}

#[test]
fn an_agent_whose_layout_differs_keeps_it_beside_its_class_until_it_is_gone_or_restarts() {
    let names = StateNamesOf::default();
    let class = Arc::new(Names(&["a"]));
    let other = Arc::new(Names(&["x", "y"]));
    let (first, odd) = (PublishedState::default(), PublishedState::default());
    let (mf, mo) = (MboxId::next(), MboxId::next());
    first.started(&names, mf, &class, 0);
    odd.started(&names, mo, &other, 1);
    assert_eq!(name(&odd, &names, mo).as_deref(), Some("y"));
    odd.set(0);
    assert_eq!(name(&odd, &names, mo).as_deref(), Some("x"));
    assert_eq!(names.own.lock().len(), 1);
    // A next incarnation with the class's layout: the own one goes.
    odd.started(&names, mo, &class, 0);
    assert_eq!(name(&odd, &names, mo).as_deref(), Some("a"));
    assert!(names.own.lock().is_empty());
    // And back; then the agent is gone for good.
    odd.started(&names, mo, &other, 1);
    assert_eq!(names.own.lock().len(), 1);
    odd.forget(&names, mo);
    assert!(names.own.lock().is_empty());
    assert_eq!(Arc::strong_count(&other), 1);
}
