//! A panic in a handler is caught and counted (`EnvStats::panics`, `AgentStats::panics`), never
//! takes other agents down, and meets the agent's panic reaction: `Ignore` (the agent goes on),
//! `DeregisterCoop` (the default: its coop leaves with `DeregReason::Panic`), `ShutdownEnv`, or
//! `Abort` (the process dies).

mod common;

use agentry::{
    Agent, Coop, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    PanicReaction, RequestError,
};
use common::{
    EXPECTED, assert_aborted, child_mode, quiet_expected_panics, recv, run_child, run_env,
};
use std::sync::mpsc::{self, Receiver};

struct Boom;
struct Count;

/// Panics on `Boom`; answers `Count` with the number of booms it survived.
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

fn with_reaction(r: PanicReaction) -> Fragile {
    Fragile {
        booms: 0,
        own_reaction: Some(r),
    }
}

fn listen(coop: &mut Coop) -> Receiver<CoopDeregistered> {
    let (tx, rx) = mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    rx
}

fn count(m: &Mbox) -> Result<u32, RequestError> {
    m.request(Count, common::DEADLINE)
}

fn env() -> (Env, EnvHandle) {
    quiet_expected_panics();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

#[test]
fn ignore_keeps_the_agent_handling() {
    let (_env, h) = env();
    let m = h
        .register_agent(with_reaction(PanicReaction::Ignore))
        .expect("register");
    for _ in 0..3 {
        m.send(Boom);
    }
    assert_eq!(count(&m), Ok(3));
    assert_eq!(h.stats().panics, 3);
    assert_eq!(m.stats().panics, 3);
    assert_eq!(h.stats().coops, 1);
    assert!(m.is_alive());
}

#[test]
fn deregister_coop_is_the_default_and_spares_other_coops() {
    let (_env, h) = env();
    let mut victim = h.new_coop();
    let fragile = victim.add(Fragile::default());
    let sibling = victim.add(Fragile::default());
    let gone = listen(&mut victim);
    let victim_id = h.register_coop(victim).expect("victim");
    let mut bystander = h.new_coop();
    let other = bystander.add(Fragile::default());
    let bystander_gone = listen(&mut bystander);
    h.register_coop(bystander).expect("bystander");

    fragile.send(Boom);
    assert_eq!(
        recv(&gone),
        CoopDeregistered {
            coop: victim_id,
            reason: DeregReason::Panic
        }
    );
    assert!(!fragile.is_alive());
    assert!(!sibling.is_alive(), "the whole coop leaves");
    assert_eq!(count(&other), Ok(0));
    assert!(bystander_gone.try_recv().is_err());
    assert_eq!(h.stats().coops, 1);
    assert_eq!(h.stats().panics, 1);
    assert_eq!(fragile.stats().panics, 1);
    assert_eq!(other.stats().panics, 0);
}

#[test]
fn shutdown_env_stops_everything() {
    let (env, h) = env();
    let mut coop = h.new_coop();
    let fragile = coop.add(with_reaction(PanicReaction::ShutdownEnv));
    h.register_coop(coop).expect("register");
    let mut bystander = h.new_coop();
    bystander.add(Fragile::default());
    let bystander_gone = listen(&mut bystander);
    h.register_coop(bystander).expect("bystander");
    fragile.send(Boom);
    run_env(env);
    assert!(h.is_stopped());
    assert_eq!(recv(&bystander_gone).reason, DeregReason::Shutdown);
    assert_eq!(h.stats().panics, 1);
}

#[test]
fn abort_kills_the_process() {
    const TEST: &str = "abort_kills_the_process";
    if child_mode().as_deref() == Some("panic_abort") {
        let env = Env::new().expect("env");
        let m = env
            .handle()
            .register_agent(with_reaction(PanicReaction::Abort))
            .expect("register");
        m.send(Boom);
        // Never answered: the process aborts while handling Boom.
        let _ = count(&m);
        return;
    }
    let outcome = run_child(TEST, "panic_abort");
    assert_aborted(
        &outcome,
        "agentry: a handler panicked and the panic reaction is Abort",
    );
}
