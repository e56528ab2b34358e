//! An agent registered with its typed address must subscribe a handler — queued in some
//! state, or insend — on its own mbox for every type of its protocol; otherwise its
//! registration fails with `DefineError::UnhandledProtocolMessage` and nothing is registered.
//! What the check does not promise: a handler in *some* state is enough, so a declared type
//! sent while the agent is in another state is still counted as unhandled; and an agent
//! added untyped is not checked.

mod common;

use agentry::{
    Agent, Ctx, Define, DefineError, Env, InsendCtx, Protocol, RegisterError, State, UserError,
};
use common::DEADLINE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

struct Ping;
struct Pong;

/// How the agent subscribes `Pong` (it always handles `Ping` in the default state).
#[derive(Clone, Copy)]
enum PongIs {
    Missing,
    InAnotherState,
    Insend,
}

struct Player {
    pong: PongIs,
    other: State,
    insend: Arc<AtomicU64>,
}

impl Player {
    fn new(pong: PongIs) -> Self {
        Player {
            pong,
            other: State::DEFAULT,
            insend: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Agent for Player {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.other = def.state("other")?;
        def.on(|_: &mut Player, _: &mut Ctx<Player>, _: Ping| {})?;
        match self.pong {
            PongIs::Missing => {}
            PongIs::InAnotherState => {
                def.in_state(self.other)
                    .on(|_: &mut Player, _: &mut Ctx<Player>, _: Pong| {})?;
            }
            PongIs::Insend => {
                let count = Arc::clone(&self.insend);
                def.insend(move |_: &InsendCtx<'_>, _: Pong| {
                    count.fetch_add(1, Ordering::Relaxed);
                })?;
            }
        }
        Ok(())
    }
}

impl Protocol for Player {
    type Messages = (Ping, Pong);
}

#[test]
fn a_declared_type_without_a_handler_fails_the_registration_with_a_typed_error() {
    let env = Env::new().expect("env");
    let h = env.handle();
    let mut coop = h.new_coop();
    coop.add_addr(Player::new(PongIs::InAnotherState));
    let missing = coop.add_addr(Player::new(PongIs::Missing));
    match h.register_coop(coop) {
        Err(RegisterError::Define {
            index: 1,
            source: DefineError::UnhandledProtocolMessage(message),
            ..
        }) => assert!(message.ends_with("Pong"), "{message}"),
        other => panic!("the second agent does not handle Pong: {other:?}"),
    }
    // Nothing was registered: the first agent's coop is gone with the second.
    assert_eq!(missing.mbox().agent_id(), None);
    assert_eq!(h.stats().coops, 0);
    h.stop();
    common::run_env(env);
}

#[test]
fn the_same_definition_registered_untyped_is_not_checked() {
    let env = Env::new().expect("env");
    let mbox = env
        .handle()
        .register_agent(Player::new(PongIs::Missing))
        .expect("registered: an untyped registration does not check the protocol");
    mbox.send(Pong);
    env.handle().stop();
    common::run_env(env);
    assert_eq!(mbox.stats().unhandled, 1);
}

#[test]
fn a_handler_in_another_state_passes_but_the_current_state_decides_at_run_time() {
    let env = Env::new().expect("env");
    let player = env
        .handle()
        .register_agent_addr(Player::new(PongIs::InAnotherState))
        .expect("registered: Pong has a handler in some state");
    player.send(Ping);
    player.send(Pong); // the agent is in the default state, which has no Pong handler
    env.handle().stop();
    common::run_env(env);
    let stats = player.mbox().stats();
    assert_eq!((stats.handled, stats.unhandled), (1, 1));
}

#[test]
fn an_insend_handler_counts_as_a_handler() {
    let env = Env::new().expect("env");
    let agent = Player::new(PongIs::Insend);
    let insend = Arc::clone(&agent.insend);
    let player = env.handle().register_agent_addr(agent).expect("registered");
    player.send(Pong);
    assert_eq!(insend.load(Ordering::Relaxed), 1, "ran inside send");
    env.handle().stop();
    common::run_env(env);
}

/// Spawns a child that does not handle its protocol, and reports the error it got.
struct Spawner(std::sync::mpsc::Sender<Result<(), RegisterError>>);

impl Agent for Spawner {
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let spawned = ctx.spawn_addr(Player::new(PongIs::Missing)).map(|_| ());
        let _ = self.0.send(spawned);
        Ok(())
    }
}

#[test]
fn spawning_a_typed_child_is_checked_too() {
    let env = Env::new().expect("env");
    let (tx, rx) = std::sync::mpsc::channel();
    env.handle()
        .register_agent(Spawner(tx))
        .expect("the spawner registers");
    match rx.recv_timeout(DEADLINE).expect("reported") {
        Err(RegisterError::Define {
            source: DefineError::UnhandledProtocolMessage(message),
            ..
        }) => assert!(message.ends_with("Pong"), "{message}"),
        other => panic!("the child does not handle Pong: {other:?}"),
    }
    env.handle().stop();
    common::run_env(env);
}
