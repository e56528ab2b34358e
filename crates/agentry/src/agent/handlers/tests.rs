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
            super::NewHandler::typed::<Small, _>(|_: &mut Tabled, _: &mut Ctx<Tabled>, _| {});
        table
            .add(own, t, "t", &[State::DEFAULT], handler, &tree)
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
    assert!(
        one.lookup(&layout, own, own, small, State::DEFAULT)
            .is_some()
    );
    assert!(
        one.lookup(&layout, own, own, ping, State::DEFAULT)
            .is_none()
    );
    // Another mbox's message of the same type is not the own mbox's.
    let other = crate::ids::MboxId::next();
    assert!(
        one.lookup(&layout, own, other, small, State::DEFAULT)
            .is_none()
    );

    let (layout, two) = table_of(own, &[small, big]).finish(&tree);
    assert!(matches!(&two.handlers, Stored::Many(many) if many.len() == 2));
    assert!(
        two.lookup(&layout, own, own, small, State::DEFAULT)
            .is_some()
    );
    assert!(two.lookup(&layout, own, own, big, State::DEFAULT).is_some());
    assert!(
        two.lookup(&layout, own, own, ping, State::DEFAULT)
            .is_none()
    );

    let (layout, none) = table_of(own, &[]).finish(&tree);
    assert!(matches!(&none.handlers, Stored::Many(many) if many.is_empty()));
    assert!(
        none.lookup(&layout, own, own, small, State::DEFAULT)
            .is_none()
    );
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
    let handler = super::NewHandler::typed(|_: &mut Table, _: &mut Ctx<Table>, _: Msg<N>| {});
    table
        .add(
            source,
            std::any::TypeId::of::<Msg<N>>(),
            "Msg",
            states,
            handler,
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

/// The handlers of an agent of `class`'s type (`Tabled`) whose definition declares the cached
/// `layout` (one handler per type in `types`, in the default state), each made by `handler`,
/// by the agent whose own mbox is `own`.
fn declared_as_cached(
    own: crate::ids::MboxId,
    class: &crate::mbox::class::AgentClass,
    layout: &Arc<crate::agent::layout::AgentLayout>,
    types: &[std::any::TypeId],
    handler: impl Fn() -> super::NewHandler<Tabled>,
) -> super::Handlers<Tabled> {
    let tree = crate::agent::state::StateTree::new();
    let sharing = super::Sharing::of(class);
    let mut table = super::HandlerTable::expecting(own, Arc::clone(layout), sharing);
    for &t in types {
        table
            .add(own, t, "t", &[State::DEFAULT], handler(), &tree)
            .expect("a first subscription of each type");
    }
    assert!(table.take_expected(&tree).is_some(), "the cached layout");
    table.into_handlers(class, false)
}

#[test]
fn capture_free_handlers_are_shared_by_the_agents_of_a_type_that_declare_the_same_ones() {
    use super::Stored;
    use crate::mbox::class::AgentClass;
    use std::any::TypeId;
    let class = || {
        AgentClass::new::<Tabled>(
            "Tabled",
            Arc::new(crate::stats::EnvCounters::new(None, None)),
            std::sync::Weak::<crate::env::EnvInner>::new(),
        )
    };
    let tree = crate::agent::state::StateTree::new();
    let layout_of = |types: &[TypeId]| {
        let (handlers, _) = table_of(crate::ids::MboxId::next(), types).finish(&tree);
        Arc::new(crate::agent::layout::AgentLayout::new(
            crate::agent::state::StateTree::new(),
            handlers,
        ))
    };
    let types = [TypeId::of::<Small>(), TypeId::of::<Big>()];
    let layout = layout_of(&types);
    let plain =
        || super::NewHandler::typed::<Small, _>(|_: &mut Tabled, _: &mut Ctx<Tabled>, _| {});
    let other =
        || super::NewHandler::typed::<Small, _>(|_: &mut Tabled, _: &mut Ctx<Tabled>, _| {});
    let own = crate::ids::MboxId::next();
    let set = |h: &super::Handlers<Tabled>| match &h.handlers {
        Stored::Shared(set) => Some(Arc::clone(set)),
        _ => None,
    };

    // The first agent that declares the cached layout publishes its handlers; the next ones
    // with the same closure types use the same set.
    let shares = class();
    let first = declared_as_cached(own, &shares, &layout, &types, plain);
    let second = declared_as_cached(own, &shares, &layout, &types, plain);
    let (a, b) = (set(&first).expect("shared"), set(&second).expect("shared"));
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.len(), 2);
    for (handlers, t) in [(&first, types[0]), (&second, types[1])] {
        assert!(
            handlers
                .lookup(&layout.handlers, own, own, t, State::DEFAULT)
                .is_some()
        );
    }
    // Another closure type at the same index, in the same layout: its own handlers.
    let differs = declared_as_cached(own, &shares, &layout, &types, other);
    assert!(matches!(&differs.handlers, Stored::Many(many) if many.len() == 2));

    // A handler that captures something: the type shares none, from then on.
    let captures = class();
    let data = Arc::new(AtomicUsize::new(0));
    let capturing = || {
        let data = Arc::clone(&data);
        super::NewHandler::typed::<Small, _>(move |_: &mut Tabled, _: &mut Ctx<Tabled>, _| {
            data.fetch_add(1, Ordering::SeqCst);
        })
    };
    let its_own = declared_as_cached(own, &captures, &layout, &types, capturing);
    assert!(matches!(&its_own.handlers, Stored::Many(many) if many.len() == 2));
    let later = declared_as_cached(own, &captures, &layout, &types, plain);
    assert!(set(&later).is_none());

    // One handler: kept inline, never shared.
    let single = class();
    let layout = layout_of(&types[..1]);
    for _ in 0..2 {
        let one = declared_as_cached(own, &single, &layout, &types[..1], plain);
        assert!(matches!(&one.handlers, Stored::One(_)));
    }
}

/// An agent whose handlers capture nothing (variants 0 and 1: functions and a closure) or
/// something (variant 2), each declaring the same layout: `Ping`, then `Go`; variant 3
/// declares variant 0's first handler only (another layout).
struct Twin {
    variant: u8,
    log: Arc<Mutex<Vec<String>>>,
}

impl Agent for Twin {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        match self.variant {
            0 => {
                def.on(Twin::on_ping)?.on(Twin::on_go)?;
            }
            1 => {
                // The same first handler as variant 0's, then another.
                def.on(Twin::on_ping)?
                    .on(|t: &mut Twin, _: &mut Ctx<Twin>, Go(_)| t.note("own go"))?;
            }
            3 => {
                def.on(Twin::on_ping)?;
            }
            _ => {
                let tag = format!("captured {}", self.variant);
                def.on(move |t: &mut Twin, _: &mut Ctx<Twin>, Ping| t.note(&tag))?
                    .on(Twin::on_go)?;
            }
        }
        Ok(())
    }
}

impl Twin {
    fn note(&self, what: &str) {
        self.log.lock().push(format!("{} {what}", self.variant));
    }

    fn on_ping(&mut self, _: &mut Ctx<Self>, _: Ping) {
        self.note("ping");
    }

    fn on_go(&mut self, _: &mut Ctx<Self>, _: Go) {
        self.note("go");
    }
}

#[test]
fn agents_sharing_their_types_handlers_or_reviving_their_own_each_run_what_they_declared() {
    let mut env = TestEnv::new().expect("test env");
    let log = Arc::new(Mutex::new(Vec::new()));
    // The first builds the layout, the second decides (variant 0's handlers are shared), the
    // next variant-0 agents use the set; variant 1 folds its first handler, then reads it
    // back at its second; variant 2 captures; variant 3 folds its only handler, then reads
    // it back as it ends with another layout.
    let agents: Vec<_> = [0, 0, 0, 1, 2, 3, 0]
        .into_iter()
        .map(|variant| {
            let twin = Twin {
                variant,
                log: Arc::clone(&log),
            };
            env.handle().register_agent(twin).expect("registered")
        })
        .collect();
    for agent in &agents {
        agent.send(Ping);
        agent.send(Go(0));
    }
    env.run_until_idle().expect("idle");
    let expected = [
        "0 ping",
        "0 go",
        "0 ping",
        "0 go",
        "0 ping",
        "0 go",
        "1 ping",
        "1 own go",
        "2 captured 2",
        "2 go",
        "3 ping",
        "0 ping",
        "0 go",
    ];
    assert_eq!(*log.lock(), expected);
    let stats = env.shutdown().expect("shut down");
    // Variant 3's `Go`.
    assert_eq!(stats.unhandled, 1);
}
