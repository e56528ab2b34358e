//! Which panic reaction applies: the agent's own (`Define::panic_reaction`), else its coop's
//! (`Coop::set_panic_reaction`), else the parent coop's (inherited down the tree), else the
//! environment's (`EnvBuilder::panic_reaction`, default `DeregisterCoop`).

mod common;

use agentry::{
    Agent, Coop, CoopDeregistered, CoopId, Ctx, Define, DefineError, DeregReason, Env, EnvHandle,
    Mbox, PanicReaction,
};
use common::{EXPECTED, quiet_expected_panics, recv};
use std::sync::mpsc::{self, Receiver};

struct Boom;
struct Count;

#[derive(Default)]
struct Fragile {
    booms: u32,
    own_reaction: Option<PanicReaction>,
}

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        if let Some(r) = self.own_reaction {
            def.panic_reaction(r);
        }
        def.on(|f: &mut Fragile, _: &mut Ctx<Fragile>, _: Boom| {
            f.booms += 1;
            panic!("{EXPECTED}: boom");
        })?;
        def.on_request(|f: &mut Fragile, _: &mut Ctx<Fragile>, _: Count| f.booms)?;
        Ok(())
    }
}

fn env(reaction: Option<PanicReaction>) -> (Env, EnvHandle) {
    quiet_expected_panics();
    let mut b = Env::builder();
    b.autoshutdown(false);
    if let Some(r) = reaction {
        b.panic_reaction(r);
    }
    let env = b.build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

struct Registered {
    id: CoopId,
    agent: Mbox,
    gone: Receiver<CoopDeregistered>,
}

/// Registers a coop of one `Fragile` with the given agent and coop reactions and parent.
fn register(
    h: &EnvHandle,
    agent: Option<PanicReaction>,
    coop: Option<PanicReaction>,
    parent: Option<CoopId>,
) -> Registered {
    let mut c: Coop = h.new_coop();
    if let Some(r) = coop {
        c.set_panic_reaction(r);
    }
    if let Some(p) = parent {
        c.set_parent(p);
    }
    let m = c.add(Fragile {
        booms: 0,
        own_reaction: agent,
    });
    let (tx, rx) = mpsc::channel();
    c.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    Registered {
        id: h.register_coop(c).expect("register"),
        agent: m,
        gone: rx,
    }
}

/// The reaction was `Ignore`: the agent survives its panic and still answers.
fn assert_ignored(r: &Registered) {
    r.agent.send(Boom);
    assert_eq!(
        r.agent.request::<Count, u32>(Count, common::DEADLINE),
        Ok(1)
    );
    assert!(r.gone.try_recv().is_err());
}

/// The reaction was `DeregisterCoop`: the coop leaves with `Panic`.
fn assert_deregistered(r: &Registered) {
    r.agent.send(Boom);
    assert_eq!(
        recv(&r.gone),
        CoopDeregistered {
            coop: r.id,
            reason: DeregReason::Panic
        }
    );
}

#[test]
fn the_env_reaction_applies_by_default() {
    let (_env, h) = env(None);
    assert_deregistered(&register(&h, None, None, None));
    let (_env, h) = env(Some(PanicReaction::Ignore));
    assert_ignored(&register(&h, None, None, None));
}

#[test]
fn the_coop_reaction_overrides_the_env() {
    let (_env, h) = env(Some(PanicReaction::ShutdownEnv));
    assert_ignored(&register(&h, None, Some(PanicReaction::Ignore), None));
    assert!(!h.is_stopped());
    let (_env, h) = env(Some(PanicReaction::Ignore));
    assert_deregistered(&register(
        &h,
        None,
        Some(PanicReaction::DeregisterCoop),
        None,
    ));
}

#[test]
fn the_agent_reaction_overrides_the_coop() {
    let (_env, h) = env(Some(PanicReaction::ShutdownEnv));
    let r = register(
        &h,
        Some(PanicReaction::Ignore),
        Some(PanicReaction::DeregisterCoop),
        None,
    );
    assert_ignored(&r);
    assert!(!h.is_stopped());
    let (_env, h) = env(Some(PanicReaction::Ignore));
    assert_deregistered(&register(
        &h,
        Some(PanicReaction::DeregisterCoop),
        Some(PanicReaction::Ignore),
        None,
    ));
}

#[test]
fn a_child_coop_inherits_its_parents_reaction() {
    let (_env, h) = env(Some(PanicReaction::DeregisterCoop));
    let parent = register(&h, None, Some(PanicReaction::Ignore), None);
    let child = register(&h, None, None, Some(parent.id));
    let grandchild = register(&h, None, None, Some(child.id));
    assert_ignored(&child);
    assert_ignored(&grandchild);

    let (_env, h) = env(Some(PanicReaction::Ignore));
    let parent = register(&h, None, Some(PanicReaction::DeregisterCoop), None);
    let child = register(&h, None, None, Some(parent.id));
    assert_deregistered(&child);
    // Only the panicking agent's coop leaves, not its parent.
    assert_ignored_parent_alive(&parent);

    // A child's own reaction overrides the inherited one.
    let (_env, h) = env(None);
    let parent = register(&h, None, Some(PanicReaction::Ignore), None);
    let child = register(
        &h,
        None,
        Some(PanicReaction::DeregisterCoop),
        Some(parent.id),
    );
    assert_deregistered(&child);
}

fn assert_ignored_parent_alive(parent: &Registered) {
    assert_eq!(
        parent.agent.request::<Count, u32>(Count, common::DEADLINE),
        Ok(0)
    );
    assert!(parent.gone.try_recv().is_err());
}
