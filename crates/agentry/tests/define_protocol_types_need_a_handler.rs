//! An agent registered with its typed address must subscribe a handler — queued in some
//! state, or insend — on its own mbox for every type of its protocol; otherwise its
//! registration fails with `DefineError::UnhandledProtocolMessage` and nothing is registered.
//! What the check does not promise: a handler in *some* state is enough, so a declared type
//! sent while the agent is in another state is still counted as unhandled; and an agent
//! added untyped is not checked. A supervised agent added typed has every incarnation's
//! definition checked: a restart whose definition drops a declared type fails to start.

mod common;

use agentry::supervision::{Strategy, Supervision};
use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, InsendCtx, RegisterError,
    Request, RequestError, State, UserError, protocol::Protocol,
};
use common::{DEADLINE, EXPECTED, quiet_expected_panics, recv, wait_until};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

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
struct Spawner(mpsc::Sender<Result<(), RegisterError>>);

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
    let (tx, rx) = mpsc::channel();
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

struct Boom;
struct Which;

/// A supervised agent whose later incarnations may forget to answer `Which`.
struct Phoenix {
    incarnation: u32,
    answers: bool,
}

impl Agent for Phoenix {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Phoenix, _: &mut Ctx<Phoenix>, _: Boom| panic!("{EXPECTED}: boom"))?;
        if self.answers {
            def.on_request(|p: &mut Phoenix, _: &mut Ctx<Phoenix>, _: Which| p.incarnation)?;
        }
        Ok(())
    }
}

impl Protocol for Phoenix {
    type Messages = (Boom, Request<Which, u32>);
}

/// Incarnations numbered from 1; those after the first answer `Which` if `later_answer`.
fn phoenix(later_answer: bool) -> impl FnMut() -> Phoenix + Send + 'static {
    let mut made = 0;
    move || {
        made += 1;
        Phoenix {
            incarnation: made,
            answers: made == 1 || later_answer,
        }
    }
}

/// A coop supervising nothing yet (at most one restart a minute), and its deregistration.
fn supervisor(env: &Env) -> (agentry::Coop, mpsc::Receiver<CoopDeregistered>) {
    let (tx, rx) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne).intensity(1, Duration::from_secs(60)))
        .on_dereg(move |gone| {
            let _ = tx.send(gone);
        });
    (coop, rx)
}

#[test]
fn a_supervised_typed_agent_keeps_its_address_across_restarts() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let (mut coop, _gone) = supervisor(&env);
    let addr = coop.add_supervised_addr(phoenix(true));
    env.handle().register_coop(coop).expect("registered");
    assert_eq!(addr.request(Which, DEADLINE), Ok(1));
    addr.send(Boom);
    wait_until("the restart", || addr.mbox().stats().restarts == 1);
    assert_eq!(addr.request(Which, DEADLINE), Ok(2));
    env.handle().stop();
    common::run_env(env);
}

#[test]
fn a_supervised_typed_agent_is_checked_at_registration() {
    let env = Env::new().expect("env");
    let (mut coop, _gone) = supervisor(&env);
    coop.add_supervised_addr(|| Phoenix {
        incarnation: 1,
        answers: false,
    });
    match env.handle().register_coop(coop) {
        Err(RegisterError::Define {
            source: DefineError::UnhandledProtocolMessage(message),
            ..
        }) => assert!(message.contains("Which"), "{message}"),
        other => panic!("the first incarnation does not answer Which: {other:?}"),
    }
    env.handle().stop();
    common::run_env(env);
}

#[test]
fn a_restart_whose_definition_drops_a_declared_type_fails_to_start() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let (mut coop, gone) = supervisor(&env);
    let addr = coop.add_supervised_addr(phoenix(false));
    env.handle()
        .register_coop(coop)
        .expect("the first incarnation handles its protocol");
    assert_eq!(addr.request(Which, DEADLINE), Ok(1));
    addr.send(Boom);
    // The second incarnation fails its start: a second failure within the minute escalates.
    assert_eq!(recv(&gone).reason, DeregReason::Escalation);
    assert!(!addr.mbox().is_alive());
    env.handle().stop();
    common::run_env(env);
}

#[test]
fn the_same_factory_supervised_untyped_restarts_unchecked() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let (mut coop, _gone) = supervisor(&env);
    let mbox = coop.add_supervised(phoenix(false));
    env.handle().register_coop(coop).expect("registered");
    mbox.send(Boom);
    wait_until("the restart", || mbox.stats().restarts == 1);
    assert_eq!(
        mbox.request::<Which, u32>(Which, DEADLINE),
        Err(RequestError::NoHandler)
    );
    env.handle().stop();
    common::run_env(env);
}
