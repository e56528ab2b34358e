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

/// A distinct message type per `N`.
struct Msg<const N: usize>;

/// Adds a handler for `Msg<N>` from `source` in `states`.
fn add_kind<const N: usize>(
    table: &mut super::HandlerTable<Table>,
    source: crate::ids::MboxId,
    states: &[State],
    tree: &super::super::state::StateTree,
) {
    let handler = super::TypedHandler::new(|_: &mut Table, _: &mut Ctx<Table>, _: Msg<N>| {});
    table
        .add(
            source,
            std::any::TypeId::of::<Msg<N>>(),
            "Msg",
            states,
            Box::new(handler),
            tree,
        )
        .expect("added");
}

/// The index of the handler for `Msg<N>` from `source` in `state`, if any, in the layout of
/// an agent whose own mbox is `own`.
fn index_of<const N: usize>(
    layout: &super::HandlerLayout,
    own: crate::ids::MboxId,
    source: crate::ids::MboxId,
    state: State,
) -> Option<usize> {
    layout.find(
        super::Source::of(source, own),
        std::any::TypeId::of::<Msg<N>>(),
        state,
    )
}

#[test]
fn the_type_index_finds_every_subscribed_pair_and_nothing_else() {
    use super::super::state::StateTree;
    use crate::ids::MboxId;
    let mut tree = StateTree::new();
    let root = State(0);
    let a = tree.add("a".into(), None).expect("state a");
    let a1 = tree.add("a1".into(), Some(a)).expect("state a1");
    let (own, multi) = (MboxId::next(), MboxId::next());
    let mut table = super::HandlerTable::new(own);
    // 24 types (several table slots), one of them from two sources, one declared only in a
    // parent state (inherited by its substate), one overridden in a substate.
    macro_rules! kinds {
        ($($n:literal)*) => { $( add_kind::<$n>(&mut table, own, &[root, a], &tree); )* };
    }
    kinds!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20);
    add_kind::<21>(&mut table, multi, &[root], &tree);
    add_kind::<21>(&mut table, own, &[a], &tree);
    add_kind::<22>(&mut table, own, &[a], &tree);
    add_kind::<23>(&mut table, own, &[a1], &tree);
    add_kind::<23>(&mut table, own, &[a], &tree);
    let (layout, _) = table.finish(&tree);
    let layout = &layout;
    // Every plain pair, in every state that declares or inherits it; handlers are numbered
    // in declaration order, so `Msg<N>`'s is `N` for the first 21.
    macro_rules! found {
        ($($n:literal)*) => { $(
            assert_eq!(index_of::<$n>(layout, own, own, root), Some($n));
            assert_eq!(index_of::<$n>(layout, own, own, a1), Some($n));
            assert_eq!(index_of::<$n>(layout, own, multi, root), None, "wrong source");
        )* };
    }
    found!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20);
    // One type from two sources: each source's own handler, in its own states.
    assert_eq!(index_of::<21>(layout, own, multi, root), Some(21));
    assert_eq!(index_of::<21>(layout, own, multi, a), None);
    assert_eq!(index_of::<21>(layout, own, own, a1), Some(22));
    assert_eq!(index_of::<21>(layout, own, own, root), None);
    // Declared in a parent only: none in the root, inherited in the substate.
    assert_eq!(index_of::<22>(layout, own, own, root), None);
    assert_eq!(index_of::<22>(layout, own, own, a1), Some(23));
    // Overridden in the substate.
    assert_eq!(index_of::<23>(layout, own, own, a1), Some(24));
    assert_eq!(index_of::<23>(layout, own, own, a), Some(25));
    // Types nobody subscribed to, and a state the layout does not have.
    macro_rules! absent {
        ($($n:literal)*) => { $( assert_eq!(index_of::<$n>(layout, own, own, root), None); )* };
    }
    absent!(24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49);
    assert_eq!(index_of::<0>(layout, own, own, State(9)), None);
}

#[test]
fn the_chosen_multiplier_keeps_keys_apart_in_a_small_table() {
    // Keys as a type id's hash gives them: spread over 64 bits (a splitmix sequence), and a
    // run of keys that differ in a few middle bits only.
    let mut x = 0_u64;
    let mut spread = || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for n in [1_usize, 2, 3, 5, 8, 13, 40, 100, 300] {
        for keys in [
            (0..n).map(|_| spread()).collect::<Vec<u64>>(),
            (0..n as u64).map(|k| k << 20).collect(),
        ] {
            let (mul, bits) = super::choose_hash(&keys);
            let mut slots: Vec<usize> =
                keys.iter().map(|&k| super::slot_of(k, mul, bits)).collect();
            assert!(slots.iter().all(|&s| s < 1 << bits));
            assert!(
                1 << bits <= 16 * (4 * n).next_power_of_two().max(2) / 4,
                "{n} keys in 2^{bits} slots"
            );
            slots.sort_unstable();
            slots.dedup();
            let shared = n - slots.len();
            if n <= 13 {
                assert_eq!(shared, 0, "{n} keys: a collision-free table");
            } else {
                assert!(shared <= n / 16, "{n} keys: {shared} share a slot");
            }
        }
    }
}
