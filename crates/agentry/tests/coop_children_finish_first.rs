//! Deregistration goes children first: a coop's agents finish only after all its descendants
//! are gone, and they keep handling messages meanwhile — on every dispatcher.

mod common;

use agentry::disp::Binder;
use agentry::disp::OneThreadDispatcher;
use agentry::{Agent, CoopDeregistered, CoopId, Ctx, Define, DefineError, DeregReason, Env, Mbox};
use common::{Gate, Log, gate, recv};
use std::sync::mpsc;

struct Ping;

/// Records its finish; optionally holds inside `on_finish` until the test lets it go.
struct Node {
    name: &'static str,
    log: Log,
    hold_finish: Option<Gate>,
}

impl Agent for Node {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|n: &mut Node, _: &mut Ctx<Node>, _: Ping| n.name)?;
        Ok(())
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        if let Some(g) = &self.hold_finish {
            g.pass();
        }
        self.log.push(self.name);
    }
}

fn node(name: &'static str, log: &Log) -> Node {
    Node {
        name,
        log: log.clone(),
        hold_finish: None,
    }
}

#[test]
fn grandchild_then_child_then_parent() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let log = Log::default();
    let (events_tx, events_rx) = mpsc::channel::<CoopDeregistered>();
    let listen = |coop: &mut agentry::Coop| {
        let tx = events_tx.clone();
        coop.on_dereg(move |e| {
            let _ = tx.send(e);
        });
    };

    let mut parent = h.new_coop();
    let parent_mbox = parent.add(node("parent", &log));
    listen(&mut parent);
    let parent_id = h.register_coop(parent).expect("parent");

    let mut child = h.new_coop();
    child.set_parent(parent_id);
    let child_mbox = child.add(node("child", &log));
    listen(&mut child);
    let child_id = h.register_coop(child).expect("child");

    // The grandchild runs on its own dispatcher and holds inside on_finish.
    let slow = OneThreadDispatcher::new(&h, "slow").expect("dispatcher");
    let (finish_gate, finish_key) = gate();
    let mut grandchild = h.new_coop();
    grandchild.set_parent(child_id).set_binder(&slow.binder());
    grandchild.add(Node {
        hold_finish: Some(finish_gate),
        ..node("grandchild", &log)
    });
    listen(&mut grandchild);
    let grandchild_id = h.register_coop(grandchild).expect("grandchild");
    assert_eq!(h.stats().coops, 3);

    h.deregister_coop(parent_id, DeregReason::Normal)
        .expect("deregister");
    finish_key.wait_entered();

    // The grandchild is finishing: its ancestors still handle messages.
    let ask = |m: &Mbox| m.request::<Ping, &'static str>(Ping, common::DEADLINE);
    assert_eq!(ask(&parent_mbox), Ok("parent"));
    assert_eq!(ask(&child_mbox), Ok("child"));
    assert!(
        log.snapshot().is_empty(),
        "someone finished before the grandchild"
    );
    assert_eq!(h.stats().coops, 3);

    finish_key.open();
    let order: Vec<(CoopId, DeregReason)> = (0..3)
        .map(|_| {
            let e = recv(&events_rx);
            (e.coop, e.reason)
        })
        .collect();
    assert_eq!(
        order,
        vec![
            (grandchild_id, DeregReason::ParentDeregistered),
            (child_id, DeregReason::ParentDeregistered),
            (parent_id, DeregReason::Normal),
        ]
    );
    assert_eq!(log.take(), vec!["grandchild", "child", "parent"]);
    assert_eq!(h.stats().coops, 0);
    assert_eq!(h.stats().agents, 0);
}

/// Registers `children` child coops from its own handler (`Ctx::child_coop`), binding child
/// `i` with `binders[i % len]` (the default binder if there are none).
struct Spawner {
    log: Log,
    binders: Vec<Binder>,
    done: mpsc::Sender<Vec<CoopId>>,
}
struct SpawnChildren(usize);

impl Agent for Spawner {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |s: &mut Spawner, ctx: &mut Ctx<Spawner>, SpawnChildren(n): SpawnChildren| {
                let ids = (0..n)
                    .map(|i| {
                        let mut coop = ctx.child_coop();
                        let n = node(if i % 2 == 0 { "even" } else { "odd" }, &s.log);
                        match s.binders.get(i % s.binders.len().max(1)) {
                            Some(b) => coop.add_with(n, b),
                            None => coop.add(n),
                        };
                        ctx.register_coop(coop).expect("child coop")
                    })
                    .collect();
                let _ = s.done.send(ids);
            },
        )?;
        Ok(())
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log.push("spawner");
    }
}

#[test]
fn every_child_finishes_before_the_parent() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let log = Log::default();
    let (ids_tx, ids_rx) = mpsc::channel();
    let (gone_tx, gone_rx) = mpsc::channel();
    let mut parent = h.new_coop();
    let spawner = parent.add(Spawner {
        log: log.clone(),
        binders: Vec::new(),
        done: ids_tx,
    });
    parent.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let parent_id = h.register_coop(parent).expect("parent");
    spawner.send(SpawnChildren(6));
    let children = recv(&ids_rx);
    assert_eq!(children.len(), 6);
    assert_eq!(h.stats().coops, 7);

    h.deregister_coop(parent_id, DeregReason::User(1))
        .expect("deregister");
    let e: CoopDeregistered = recv(&gone_rx);
    assert_eq!((e.coop, e.reason), (parent_id, DeregReason::User(1)));
    let finished = log.take();
    assert_eq!(finished.len(), 7);
    assert_eq!(finished.last().map(String::as_str), Some("spawner"));
    common::run_env(env);
}

/// The parent coop (a node and a spawner), its child, and the spawner's two children run on
/// the dispatcher under test; the grandchild holds in `on_finish` on a dispatcher of its own
/// while the test gets replies from the parent and the child.
#[test]
fn children_finish_before_parents_on_every_dispatcher() {
    let make_env = || Env::builder().autoshutdown(false).build().expect("env");
    common::on_every_dispatcher(make_env, |env, disp| {
        let (h, name) = (env.handle(), disp.name);
        let log = Log::default();
        let (events_tx, events_rx) = mpsc::channel::<CoopDeregistered>();
        let listen = |coop: &mut agentry::Coop| {
            let tx = events_tx.clone();
            coop.on_dereg(move |e| {
                let _ = tx.send(e);
            });
        };

        let (ids_tx, ids_rx) = mpsc::channel();
        let mut parent = h.new_coop();
        let parent_mbox = parent.add_with(node("parent", &log), &disp.binder(0));
        let spawner = parent.add_with(
            Spawner {
                log: log.clone(),
                binders: vec![disp.binder(2), disp.binder(3)],
                done: ids_tx,
            },
            &disp.binder(1),
        );
        listen(&mut parent);
        let parent_id = h.register_coop(parent).expect("parent");
        spawner.send(SpawnChildren(2));
        assert_eq!(recv(&ids_rx).len(), 2, "{name}");

        let mut child = h.new_coop();
        child.set_parent(parent_id);
        let child_mbox = child.add_with(node("child", &log), &disp.binder(4));
        listen(&mut child);
        let child_id = h.register_coop(child).expect("child");

        let slow = OneThreadDispatcher::new(h, "slow").expect("dispatcher");
        let (finish_gate, finish_key) = gate();
        let mut grandchild = h.new_coop();
        grandchild.set_parent(child_id).set_binder(&slow.binder());
        grandchild.add(Node {
            hold_finish: Some(finish_gate),
            ..node("grandchild", &log)
        });
        listen(&mut grandchild);
        let grandchild_id = h.register_coop(grandchild).expect("grandchild");
        assert_eq!(h.stats().coops, 5, "{name}");

        h.deregister_coop(parent_id, DeregReason::Normal)
            .expect("deregister");
        finish_key.wait_entered();
        let ask = |m: &Mbox| m.request::<Ping, &'static str>(Ping, common::DEADLINE);
        assert_eq!(ask(&parent_mbox), Ok("parent"), "{name}");
        assert_eq!(ask(&child_mbox), Ok("child"), "{name}");
        let early = log.snapshot();
        assert!(
            early.iter().all(|n| n == "even" || n == "odd"),
            "an ancestor of the grandchild finished before it on {name}: {early:?}"
        );

        finish_key.open();
        // The order of the notifications is not checked here: see
        // `a_coops_listeners_run_before_its_parent_is_told_to_finish`.
        let mut events: Vec<(CoopId, DeregReason)> = (0..3)
            .map(|_| {
                let e = recv(&events_rx);
                (e.coop, e.reason)
            })
            .collect();
        events.sort_by_key(|(id, _)| *id);
        assert_eq!(
            events,
            vec![
                (parent_id, DeregReason::Normal),
                (child_id, DeregReason::ParentDeregistered),
                (grandchild_id, DeregReason::ParentDeregistered),
            ],
            "{name}"
        );
        let finished = log.take();
        assert_eq!(finished.len(), 6, "{name}: {finished:?}");
        let mut children = finished[..4].to_vec();
        children.sort();
        assert_eq!(
            children,
            ["child", "even", "grandchild", "odd"],
            "{name}: {finished:?}"
        );
        let position = |n: &str| finished.iter().position(|f| f == n);
        assert!(
            position("grandchild") < position("child"),
            "{name}: {finished:?}"
        );
        let mut parents = finished[4..].to_vec();
        parents.sort();
        assert_eq!(parents, ["parent", "spawner"], "{name}: {finished:?}");
        assert_eq!(h.stats().coops, 0, "{name}");
        assert_eq!(h.stats().agents, 0, "{name}");
    });
}

/// A child's deregistration listeners run on the thread where its last agent finished, after
/// the registry has already pushed the finish demands of a parent that was waiting for it
/// (`EnvInner::perform` pushes `actions.finish` before it calls `actions.notify`). So the
/// parent can finish, and its listeners be told, while the child's listeners are still
/// running: a consumer of both notifications may see the parent's first.
#[test]
fn a_coops_listeners_run_before_its_parent_is_told_to_finish() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let log = Log::default();
    let (events_tx, events_rx) = mpsc::channel::<&str>();
    let mut parent = h.new_coop();
    parent.add(node("parent", &log));
    let tx = events_tx.clone();
    parent.on_dereg(move |_| {
        let _ = tx.send("parent");
    });
    let parent_id = h.register_coop(parent).expect("parent");

    // The child runs on a thread of its own; its listener holds there until the test opens it.
    let (listener_gate, listener_key) = gate();
    let own = OneThreadDispatcher::new(&h, "own").expect("dispatcher");
    let mut child = h.new_coop();
    child.set_parent(parent_id).set_binder(&own.binder());
    child.add(node("child", &log));
    child.on_dereg(move |_| {
        listener_gate.pass();
        let _ = events_tx.send("child");
    });
    h.register_coop(child).expect("child");

    h.deregister_coop(parent_id, DeregReason::Normal)
        .expect("deregister");
    listener_key.wait_entered();
    let early = events_rx.recv_timeout(common::SHORT).ok();
    listener_key.open();
    assert_eq!(
        early, None,
        "the parent finished while its child's listener was running"
    );
    assert_eq!(recv(&events_rx), "child");
    assert_eq!(recv(&events_rx), "parent");
}
