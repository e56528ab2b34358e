//! Deregistration listeners (`notify_on_dereg`, `notify_multi_on_dereg`, `on_dereg`) learn
//! that a coop is gone, once, with the reason: `Normal`, `User(n)`, `ParentDeregistered`,
//! `Shutdown` or `Panic`.

mod common;

use agentry::{
    Agent, Coop, CoopDeregistered, CoopId, Ctx, Define, DefineError, DeregReason, Env, EnvHandle,
};
use common::{EXPECTED, quiet_expected_panics, recv, run_env};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

struct Idle;
impl Agent for Idle {}

/// Forwards the deregistration events it receives (through its mbox or a multi mbox).
struct Listener {
    out: Sender<CoopDeregistered>,
    topic: agentry::MultiMbox,
}
impl Agent for Listener {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |l: &mut Listener, _: &mut Ctx<Listener>, e: CoopDeregistered| {
                let _ = l.out.send(e);
            },
        )?;
        let topic = self.topic.clone();
        def.from(&topic).on(
            |l: &mut Listener, _: &mut Ctx<Listener>, e: Arc<CoopDeregistered>| {
                let _ = l.out.send(*e);
            },
        )?;
        Ok(())
    }
}

/// Deregisters its own coop with the reason it is sent; panics on `Boom`.
struct SelfEnding;
struct EndWith(DeregReason);
struct Boom;
impl Agent for SelfEnding {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |_: &mut SelfEnding, ctx: &mut Ctx<SelfEnding>, EndWith(r): EndWith| {
                ctx.deregister_coop(r)
            },
        )?;
        def.on(|_: &mut SelfEnding, _: &mut Ctx<SelfEnding>, _: Boom| panic!("{EXPECTED}: boom"))?;
        Ok(())
    }
}

fn callback(coop: &mut Coop) -> Receiver<CoopDeregistered> {
    let (tx, rx) = mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    rx
}

fn env_without_autoshutdown() -> (Env, EnvHandle) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

#[test]
fn every_listener_kind_gets_the_normal_reason() {
    let (env, h) = env_without_autoshutdown();
    let (out_tx, out_rx) = mpsc::channel();
    let topic = h.create_mbox();
    let listener = h
        .register_agent(Listener {
            out: out_tx,
            topic: topic.clone(),
        })
        .expect("listener");

    let mut coop = h.new_coop();
    coop.add(Idle);
    coop.notify_on_dereg(&listener)
        .notify_multi_on_dereg(&topic);
    let cb = callback(&mut coop);
    let id = h.register_coop(coop).expect("register");
    h.deregister_coop(id, DeregReason::Normal)
        .expect("deregister");

    let expected = CoopDeregistered {
        coop: id,
        reason: DeregReason::Normal,
    };
    assert_eq!(recv(&cb), expected);
    assert_eq!(recv(&out_rx), expected);
    assert_eq!(recv(&out_rx), expected);
    h.stop();
    run_env(env);
    assert!(cb.try_recv().is_err(), "notified twice");
    assert!(out_rx.try_recv().is_err(), "notified twice");
}

#[test]
fn a_user_reason_is_passed_through() {
    let (_env, h) = env_without_autoshutdown();
    // From outside.
    let mut coop = h.new_coop();
    coop.add(Idle);
    let cb = callback(&mut coop);
    let id = h.register_coop(coop).expect("register");
    h.deregister_coop(id, DeregReason::User(42))
        .expect("deregister");
    assert_eq!(recv(&cb).reason, DeregReason::User(42));
    // From one of the coop's agents.
    let mut coop = h.new_coop();
    let agent = coop.add(SelfEnding);
    let cb = callback(&mut coop);
    let id = h.register_coop(coop).expect("register");
    agent.send(EndWith(DeregReason::User(7)));
    assert_eq!(
        recv(&cb),
        CoopDeregistered {
            coop: id,
            reason: DeregReason::User(7)
        }
    );
}

#[test]
fn descendants_get_parent_deregistered() {
    let (_env, h) = env_without_autoshutdown();
    let mut parent = h.new_coop();
    parent.add(Idle);
    let parent_cb = callback(&mut parent);
    let parent_id = h.register_coop(parent).expect("parent");
    let mut child = h.new_coop();
    child.set_parent(parent_id).add(Idle);
    let child_cb = callback(&mut child);
    let child_id = h.register_coop(child).expect("child");
    let mut grandchild = h.new_coop();
    grandchild.set_parent(child_id).add(Idle);
    let grandchild_cb = callback(&mut grandchild);
    let grandchild_id = h.register_coop(grandchild).expect("grandchild");

    h.deregister_coop(parent_id, DeregReason::User(3))
        .expect("deregister");
    let got = |rx: &Receiver<CoopDeregistered>| {
        let e = recv(rx);
        (e.coop, e.reason)
    };
    assert_eq!(
        got(&grandchild_cb),
        (grandchild_id, DeregReason::ParentDeregistered)
    );
    assert_eq!(got(&child_cb), (child_id, DeregReason::ParentDeregistered));
    assert_eq!(got(&parent_cb), (parent_id, DeregReason::User(3)));
}

#[test]
fn env_shutdown_gives_shutdown_to_roots() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let mut roots: Vec<(CoopId, Receiver<CoopDeregistered>)> = Vec::new();
    for _ in 0..3 {
        let mut coop = h.new_coop();
        coop.add(Idle);
        let cb = callback(&mut coop);
        roots.push((h.register_coop(coop).expect("root"), cb));
    }
    let mut child = h.new_coop();
    child.set_parent(roots[0].0).add(Idle);
    let child_cb = callback(&mut child);
    let child_id = h.register_coop(child).expect("child");

    h.stop();
    run_env(env);
    for (id, cb) in &roots {
        assert_eq!(
            recv(cb),
            CoopDeregistered {
                coop: *id,
                reason: DeregReason::Shutdown
            }
        );
    }
    assert_eq!(
        recv(&child_cb),
        CoopDeregistered {
            coop: child_id,
            reason: DeregReason::ParentDeregistered
        }
    );
}

#[test]
fn a_panicking_handler_gives_panic() {
    quiet_expected_panics();
    let (_env, h) = env_without_autoshutdown();
    let mut coop = h.new_coop();
    let agent = coop.add(SelfEnding);
    let cb = callback(&mut coop);
    let id = h.register_coop(coop).expect("register");
    agent.send(Boom);
    assert_eq!(
        recv(&cb),
        CoopDeregistered {
            coop: id,
            reason: DeregReason::Panic
        }
    );
    assert_eq!(h.stats().panics, 1);
}
