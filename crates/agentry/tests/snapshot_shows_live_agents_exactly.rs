//! `EnvHandle::snapshot` shows every live agent with its type, its current state and its exact
//! counters once the environment is quiet; the coop tree of the agents it returns; a filter
//! (type, state, id), an order and a page; and a deregistered coop's agents vanish from it.

mod common;

use agentry::snapshot::{EnvSnapshot, SnapshotQuery, SortBy};
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox};
use common::{run_env, wait_until};

/// Handles `Tick`; `Sleep` moves it to state "sleeping", where it handles nothing.
struct Counter;
struct Tick;
struct Sleep;

impl Agent for Counter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let sleeping = def.state("sleeping")?;
        def.on(|_: &mut Counter, _: &mut Ctx<Counter>, _: Tick| {})?;
        def.on(move |_: &mut Counter, ctx: &mut Ctx<Counter>, _: Sleep| {
            ctx.change_state(sleeping)
                .expect("invariant: sleeping is one of its states");
        })?;
        Ok(())
    }
}

/// Handles nothing: every message it gets is unhandled.
struct Deaf;
impl Agent for Deaf {}

/// Polls snapshots until `done` holds for one; returns it.
fn wait_snapshot(
    env: &EnvHandle,
    query: &SnapshotQuery,
    done: impl Fn(&EnvSnapshot) -> bool,
) -> EnvSnapshot {
    let mut last = env.snapshot(query);
    wait_until("the snapshot shows the expected counts", || {
        last = env.snapshot(query);
        done(&last)
    });
    last
}

struct World {
    env: Env,
    counters: Vec<Mbox>,
    deaf: Vec<Mbox>,
    parent: agentry::CoopId,
    child: agentry::CoopId,
}

/// A parent coop with three counters (handled 1, 2 and 3 ticks; the third then sleeps) and a
/// child coop with two deaf agents (each given one message).
fn world() -> World {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let mut parent = h.new_coop();
    let counters: Vec<Mbox> = (0..3).map(|_| parent.add(Counter)).collect();
    let parent = h.register_coop(parent).expect("parent");
    let mut child = h.new_coop();
    child.set_parent(parent);
    let deaf: Vec<Mbox> = (0..2).map(|_| child.add(Deaf)).collect();
    let child = h.register_coop(child).expect("child");
    for (i, c) in counters.iter().enumerate() {
        for _ in 0..=i {
            c.send(Tick);
        }
    }
    counters[2].send(Sleep);
    for d in &deaf {
        d.send(7_u32);
    }
    World {
        env,
        counters,
        deaf,
        parent,
        child,
    }
}

fn quiet(s: &EnvSnapshot) -> bool {
    let handled: u64 = s.agents.iter().map(|a| a.stats.handled).sum();
    let unhandled: u64 = s.agents.iter().map(|a| a.stats.unhandled).sum();
    handled == 1 + 2 + 4
        && unhandled == 2
        && s.agents
            .iter()
            .any(|a| a.state.as_deref() == Some("sleeping"))
}

#[test]
fn every_live_agent_with_its_type_state_and_exact_counts() {
    let w = world();
    let h = w.env.handle();
    let s = wait_snapshot(h, &SnapshotQuery::new(), quiet);
    assert_eq!((s.agents_total, s.matched, s.agents.len()), (5, 5, 5));
    assert_eq!((s.stats.agents, s.coops_total), (5, 2));
    // By id: the registration order.
    let ids: Vec<_> = s.agents.iter().map(|a| Some(a.id)).collect();
    let expected: Vec<_> = w
        .counters
        .iter()
        .chain(&w.deaf)
        .map(Mbox::agent_id)
        .collect();
    assert_eq!(ids, expected);
    for (i, a) in s.agents[..3].iter().enumerate() {
        assert!(a.agent_type.ends_with("::Counter"), "{}", a.agent_type);
        assert_eq!(a.coop, w.parent);
        assert!(a.accepting);
        // The third counter also handled `Sleep`.
        assert_eq!(a.stats.handled, i as u64 + 1 + u64::from(i == 2));
        assert_eq!((a.stats.unhandled, a.stats.dropped), (0, 0));
        let state = if i == 2 { "sleeping" } else { "default" };
        assert_eq!(a.state.as_deref(), Some(state));
    }
    for a in &s.agents[3..] {
        assert!(a.agent_type.ends_with("::Deaf"));
        assert_eq!(a.coop, w.child);
        assert_eq!((a.stats.handled, a.stats.unhandled), (0, 1));
        assert_eq!(a.state.as_deref(), Some("default"));
    }
    // The coop tree: the child names its parent; the parent has none.
    let coops: Vec<_> = s
        .coops
        .iter()
        .map(|c| (c.id, c.parent, c.agents, c.deregistering))
        .collect();
    assert_eq!(
        coops,
        vec![
            (w.parent, None, 3, false),
            (w.child, Some(w.parent), 2, false)
        ]
    );
    h.stop();
    run_env(w.env);
}

#[test]
fn filter_order_and_page() {
    let w = world();
    let h = w.env.handle();
    wait_snapshot(h, &SnapshotQuery::new(), quiet);

    // By type: only the deaf agents, and only their coop and its ancestor.
    let s = h.snapshot(&SnapshotQuery::new().filter("Deaf"));
    assert_eq!((s.agents_total, s.matched), (5, 2));
    assert!(s.agents.iter().all(|a| a.agent_type.ends_with("::Deaf")));
    assert_eq!(
        s.coops.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![w.parent, w.child]
    );

    // By state.
    let s = h.snapshot(&SnapshotQuery::new().filter("sleep"));
    assert_eq!(s.matched, 1);
    assert_eq!(Some(s.agents[0].id), w.counters[2].agent_id());

    // By displayed id.
    let id = w.deaf[1].agent_id().expect("registered");
    let s = h.snapshot(&SnapshotQuery::new().filter(&id.to_string()));
    assert!(s.agents.iter().any(|a| a.id == id));

    // Nothing matches: an empty page, no coops.
    let s = h.snapshot(&SnapshotQuery::new().filter("no such agent"));
    assert_eq!((s.matched, s.agents.len(), s.coops.len()), (0, 0, 0));

    // Most handled first, ties by id; a page of two from offset 1.
    let by_handled = |q: SnapshotQuery| {
        h.snapshot(&q.sort(SortBy::Handled))
            .agents
            .iter()
            .map(|a| a.stats.handled)
            .collect::<Vec<_>>()
    };
    assert_eq!(by_handled(SnapshotQuery::new()), vec![4, 2, 1, 0, 0]);
    assert_eq!(
        by_handled(SnapshotQuery::new().offset(1).limit(2)),
        vec![2, 1]
    );
    assert_eq!(
        by_handled(SnapshotQuery::new().offset(4).limit(10)),
        vec![0]
    );
    assert_eq!(
        by_handled(SnapshotQuery::new().offset(9)),
        Vec::<u64>::new()
    );
    let s = h.snapshot(&SnapshotQuery::new().sort(SortBy::Unhandled).limit(2));
    assert_eq!(s.matched, 5);
    let deaf: Vec<_> = w.deaf.iter().map(Mbox::agent_id).collect();
    assert_eq!(
        s.agents.iter().map(|a| Some(a.id)).collect::<Vec<_>>(),
        deaf
    );
    h.stop();
    run_env(w.env);
}

#[test]
fn a_deregistered_coops_agents_vanish() {
    let w = world();
    let h = w.env.handle();
    wait_snapshot(h, &SnapshotQuery::new(), quiet);
    h.deregister_coop(w.child, DeregReason::Normal)
        .expect("registered");
    let s = wait_snapshot(h, &SnapshotQuery::new(), |s| s.agents_total == 3);
    assert_eq!((s.matched, s.coops_total), (3, 1));
    assert!(s.agents.iter().all(|a| a.coop == w.parent));
    assert_eq!(
        s.coops.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![w.parent]
    );
    // Their mboxes still answer for their counters; the snapshot only shows live agents.
    assert_eq!(w.deaf[0].stats().unhandled, 1);
    assert!(
        h.snapshot(&SnapshotQuery::new().filter("Deaf"))
            .agents
            .is_empty()
    );
    h.stop();
    run_env(w.env);
}

#[test]
fn a_state_change_is_published() {
    let env = Env::new().expect("env");
    let h = env.handle();
    let c = h.register_agent(Counter).expect("registered");
    let query = SnapshotQuery::new().filter("Counter");
    wait_snapshot(h, &query, |s| {
        s.agents
            .first()
            .is_some_and(|a| a.state.as_deref() == Some("default"))
    });
    c.send(Sleep);
    wait_snapshot(h, &query, |s| {
        s.agents
            .first()
            .is_some_and(|a| a.state.as_deref() == Some("sleeping"))
    });
    h.stop();
    run_env(env);
}
