//! Coop ids: a coop's place in its environment's registry is reused once it is gone, but its
//! id never reaches the coop that takes the place, nor a coop of another environment.

mod common;

use agentry::{
    Agent, CoopDeregistered, CoopId, DeregReason, DeregisterError, Env, EnvHandle, Mbox,
};
use common::recv;
use std::sync::mpsc;

struct Idle;
impl Agent for Idle {}

/// Registers one idle agent in a coop of its own; returns the coop and a receiver of its end.
fn register(h: &EnvHandle) -> (CoopId, Mbox, mpsc::Receiver<CoopDeregistered>) {
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    let mbox = coop.add(Idle);
    coop.on_dereg(move |gone| {
        let _ = tx.send(gone);
    });
    let id = h.register_coop(coop).expect("registered");
    (id, mbox, rx)
}

fn env() -> Env {
    Env::builder().autoshutdown(false).build().expect("env")
}

#[test]
fn the_id_of_a_gone_coop_never_reaches_the_coop_that_reuses_its_place() {
    let env = env();
    let h = env.handle().clone();
    let (old, _, old_gone) = register(&h);
    h.deregister_coop(old, DeregReason::Normal)
        .expect("registered");
    assert_eq!(recv(&old_gone).coop, old);
    // The next coops take the freed place first: none of them answers to the old id.
    let later: Vec<_> = (0..3).map(|_| register(&h)).collect();
    assert!(later.iter().all(|(id, _, _)| *id != old));
    assert_eq!(
        h.deregister_coop(old, DeregReason::Normal),
        Err(DeregisterError::NotFound(old))
    );
    assert!(later.iter().all(|(_, mbox, _)| mbox.is_alive()));
    assert_eq!(h.stats().coops, 3);
    // Ids stay unique and ordered as the coops were registered.
    assert!(later.windows(2).all(|w| w[0].0 < w[1].0) && old < later[0].0);
    for (id, _, gone) in later {
        h.deregister_coop(id, DeregReason::User(7))
            .expect("registered");
        assert_eq!(recv(&gone).reason, DeregReason::User(7));
    }
    h.stop();
    common::run_env(env);
}

#[test]
fn a_coop_id_of_another_environment_finds_nothing_here() {
    let (one, other) = (env(), env());
    let (mine, mine_mbox, _) = register(one.handle());
    let (theirs, _, _) = register(other.handle());
    // Both are the first coop of their environment, in the same place of its registry.
    assert_ne!(mine, theirs);
    assert_eq!(
        one.handle().deregister_coop(theirs, DeregReason::Normal),
        Err(DeregisterError::NotFound(theirs))
    );
    assert!(mine_mbox.is_alive());
    assert_eq!(one.handle().stats().coops, 1);
    for env in [one, other] {
        env.handle().stop();
        common::run_env(env);
    }
}
