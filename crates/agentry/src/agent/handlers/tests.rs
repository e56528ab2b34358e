//! The handler table's type-erased calls, driven through a test environment (the demand path
//! of `agent/cell.rs` and `disp/execute.rs` on the test's thread). Also run under miri.

use crate::testing::TestEnv;
use crate::{Agent, Ctx, Define, DefineError, MultiMbox, PanicReaction, State};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Inline (one word).
struct Small(u32);
/// Boxed (larger than the inline bytes).
struct Big([u64; 8]);
/// Zero-sized.
struct Ping;
/// Boxed because over-aligned.
#[repr(align(32))]
struct Wide(u64);
/// Dropped exactly once whichever way it goes (handled, unhandled, panicked over).
struct Noted(Arc<AtomicUsize>);
impl Drop for Noted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
/// Its handler panics.
struct Boom(#[allow(dead_code)] Noted);
/// No handler anywhere.
struct Unknown(#[allow(dead_code)] Noted);
/// Moves the agent to state `0` base, `1` child (of base), `2` other.
struct Go(u8);

#[derive(Default)]
struct Table {
    states: Vec<State>,
    log: Arc<Mutex<Vec<String>>>,
    calls: Arc<AtomicUsize>,
    multi: Option<MultiMbox>,
}

impl Table {
    fn note(&self, what: String) {
        self.log.lock().push(what);
    }
}

impl Agent for Table {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let base = def.state("base")?;
        let child = def.substate(base, "child")?;
        let other = def.state("other")?;
        self.states = vec![base, child, other];
        def.start_in(base)?.panic_reaction(PanicReaction::Ignore);
        // A handler with state of its own (reached through the table's shared pointer).
        let calls = Arc::clone(&self.calls);
        def.in_state(base)
            .on(move |t: &mut Table, _: &mut Ctx<Table>, Small(n)| {
                calls.fetch_add(1, Ordering::SeqCst);
                t.note(format!("small {n}"));
            })?;
        def.in_state(child)
            .on(|t: &mut Table, _: &mut Ctx<Table>, Big(a)| {
                t.note(format!("big {}", a.iter().sum::<u64>()));
            })?;
        def.in_state(base)
            .on(|t: &mut Table, _: &mut Ctx<Table>, Ping| t.note("ping".into()))?;
        def.in_state(child)
            .on(|t: &mut Table, _: &mut Ctx<Table>, Ping| t.note("child ping".into()))?;
        def.in_states(&[base, other])
            .on(|t: &mut Table, _: &mut Ctx<Table>, Wide(w)| t.note(format!("wide {w}")))?;
        def.in_states(&[base, other])
            .on(|t: &mut Table, ctx: &mut Ctx<Table>, s: String| {
                t.note(format!("string {s}"));
                // A send from a handler: the worker's local queue.
                ctx.mbox().send(Small(s.len() as u32));
            })?;
        def.in_states(&[base, other])
            .on(|t: &mut Table, ctx: &mut Ctx<Table>, Go(to)| {
                let to = t.states[usize::from(to)];
                ctx.change_state(to).expect("a state of this agent");
            })?;
        def.in_state(base)
            .on(|_: &mut Table, _: &mut Ctx<Table>, _: Boom| panic!("boom (expected)"))?;
        if let Some(multi) = &self.multi {
            // The same message type from another source: a different table entry.
            def.from(multi).in_state(base).on(
                |t: &mut Table, _: &mut Ctx<Table>, s: Arc<Small>| {
                    t.note(format!("multi {}", s.0));
                },
            )?;
        }
        Ok(())
    }
}

#[test]
fn each_message_reaches_its_typed_handler_across_states_and_sources() {
    let mut env = TestEnv::new().expect("test env");
    let multi = env.handle().create_mbox();
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = env
        .handle()
        .register_agent(Table {
            log: Arc::clone(&log),
            calls: Arc::clone(&calls),
            multi: Some(multi.clone()),
            ..Table::default()
        })
        .expect("registered");
    let drops = Arc::new(AtomicUsize::new(0));
    // Three types in turn, each found in the shared layout.
    for n in 0..3 {
        agent.send(Small(n));
        agent.send(Ping);
        agent.send(Wide(n.into()));
    }
    agent.send(String::from("abc"));
    multi.send(Small(7));
    agent.send(Unknown(Noted(drops.clone())));
    env.run_until_idle().expect("idle");
    assert_eq!(env.state_of(&agent), Some("base"));
    // In the substate: an inherited handler, an overriding one, and one of its own.
    agent.send(Go(1));
    agent.send(Small(10));
    agent.send(Ping);
    agent.send(Big([1; 8]));
    multi.send(Small(8));
    env.run_until_idle().expect("idle");
    assert_eq!(env.state_of(&agent), Some("child"));
    // Another state: `Small` and `Ping` have no handler there.
    agent.send(Go(2));
    agent.send(Small(11));
    agent.send(Ping);
    agent.send(Wide(12));
    agent.send(Go(0));
    agent.send(Boom(Noted(drops.clone())));
    agent.send(Ping);
    env.run_until_idle().expect("idle");
    let expected = [
        "small 0",
        "ping",
        "wide 0",
        "small 1",
        "ping",
        "wide 1",
        "small 2",
        "ping",
        "wide 2",
        "string abc",
        "multi 7",
        "small 3",
        "small 10",
        "child ping",
        "big 8",
        "multi 8",
        "wide 12",
        "ping",
    ];
    assert_eq!(*log.lock(), expected);
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "unhandled and panicked-over: dropped once"
    );
    let stats = env.shutdown().expect("shut down");
    // `Unknown`, and `Small` and `Ping` in state `other`.
    assert_eq!(stats.unhandled, 3);
    assert_eq!(stats.panics, 1);
}

#[test]
fn timer_messages_take_the_typed_path_and_a_cancelled_one_is_dropped_once() {
    let mut env = TestEnv::new().expect("test env");
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = env
        .handle()
        .register_agent(Table {
            log: Arc::clone(&log),
            ..Table::default()
        })
        .expect("registered");
    env.run_until_idle().expect("started");
    env.handle()
        .send_delayed(&agent, Duration::from_millis(10), Small(1))
        .detach();
    // Due, queued, then cancelled before it runs: revoked, never handled.
    let cancelled = env
        .handle()
        .send_delayed(&agent, Duration::from_millis(20), Big([1; 8]));
    env.advance(Duration::from_millis(10)).expect("first timer");
    env.jump(Duration::from_millis(10));
    cancelled.cancel();
    env.run_until_idle().expect("idle");
    assert_eq!(*log.lock(), ["small 1"]);
    let stats = env.shutdown().expect("shut down");
    assert_eq!(stats.timers_revoked, 1);
}

/// An agent for the table-level tests below (its handlers are never called).
struct Tabled;
impl Agent for Tabled {}

/// A table of `Tabled` whose handlers are for the types `types`, in the default state, on the
/// agent's own mbox `own`.
fn table_of(own: crate::ids::MboxId, types: &[std::any::TypeId]) -> super::HandlerTable<Tabled> {
    let tree = crate::agent::state::StateTree::new();
    let mut table = super::HandlerTable::new(own);
    for &t in types {
        let handler =
            super::TypedHandler::<Small, _>::new(|_: &mut Tabled, _: &mut Ctx<Tabled>, _| {});
        table
            .add(own, t, "t", &[State::DEFAULT], Box::new(handler), &tree)
            .expect("a first subscription of each type");
    }
    table
}

#[test]
fn a_single_handler_is_kept_inline_and_any_other_count_in_a_slice_both_found_by_index() {
    use super::Stored;
    use std::any::TypeId;
    let own = crate::ids::MboxId::next();
    let tree = crate::agent::state::StateTree::new();
    let (small, big, ping) = (
        TypeId::of::<Small>(),
        TypeId::of::<Big>(),
        TypeId::of::<Ping>(),
    );

    let (layout, one) = table_of(own, &[small]).finish(&tree);
    assert!(matches!(one.handlers, Stored::One(_)));
    assert!(one.lookup(&layout, own, small, State::DEFAULT).is_some());
    assert!(one.lookup(&layout, own, ping, State::DEFAULT).is_none());
    // Another mbox's message of the same type is not the own mbox's.
    let other = crate::ids::MboxId::next();
    assert!(one.lookup(&layout, other, small, State::DEFAULT).is_none());

    let (layout, two) = table_of(own, &[small, big]).finish(&tree);
    assert!(matches!(&two.handlers, Stored::Many(many) if many.len() == 2));
    assert!(two.lookup(&layout, own, small, State::DEFAULT).is_some());
    assert!(two.lookup(&layout, own, big, State::DEFAULT).is_some());
    assert!(two.lookup(&layout, own, ping, State::DEFAULT).is_none());

    let (layout, none) = table_of(own, &[]).finish(&tree);
    assert!(matches!(&none.handlers, Stored::Many(many) if many.is_empty()));
    assert!(none.lookup(&layout, own, small, State::DEFAULT).is_none());
}
