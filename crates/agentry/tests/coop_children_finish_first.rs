//! Deregistration goes children first: a coop's agents finish only after all its descendants
//! are gone, and they keep handling messages meanwhile.

mod common;

use agentry::disp::one_thread::OneThreadDispatcher;
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

/// Registers `children` child coops from its own handler (`Ctx::child_coop`).
struct Spawner {
    log: Log,
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
                        coop.add(node(if i % 2 == 0 { "even" } else { "odd" }, &s.log));
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
