//! Starting is the last step of a coop's registration: a coop whose agent fails to start
//! (`on_start` returns an error or panics) is rolled back — no agent of it handles a message,
//! the agents that had started finish, the failed one does not — and the registration error
//! names the agent and the reason. Until every agent has started, the started ones hold what
//! they receive, and handle it in order once the coop has started.

mod common;

use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    RegisterError, StartFailure, UserError,
};
use common::{EXPECTED, Gate, Log, gate, on_every_dispatcher, quiet_expected_panics, recv};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, OnceLock};

/// A note from the agent with this tag.
struct Note(usize);

/// The error a refusing agent returns from `on_start`.
#[derive(Debug, PartialEq, Eq)]
struct Refused(usize);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "agent {} refuses to start", self.0)
    }
}

impl std::error::Error for Refused {}

/// How an agent's start goes.
enum Starts {
    Fine,
    Refuses,
    Panics,
    /// Waits at a gate in `on_start`, then succeeds.
    Waits(Gate),
    /// Waits at a gate in `on_start`, then refuses.
    WaitsThenRefuses(Gate),
}

/// Sends a note to each sibling in `on_start`, then starts as told; logs its start, the notes
/// it handles and its finish.
struct Member {
    tag: usize,
    starts: Starts,
    siblings: Arc<OnceLock<Vec<Mbox>>>,
    log: Log,
}

impl Agent for Member {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|m: &mut Member, _: &mut Ctx<Member>, Note(from): Note| {
            m.log.push(format!("{} handled {from}", m.tag));
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.log.push(format!("start {}", self.tag));
        let siblings = self.siblings.get().expect("siblings are known");
        for sibling in siblings.iter().filter(|s| *s != ctx.mbox()) {
            sibling.send(Note(self.tag));
        }
        match &self.starts {
            Starts::Fine => Ok(()),
            Starts::Refuses => Err(Refused(self.tag).into()),
            Starts::Panics => panic!("{EXPECTED}: agent {} cannot start", self.tag),
            Starts::Waits(gate) => {
                gate.pass();
                Ok(())
            }
            Starts::WaitsThenRefuses(gate) => {
                gate.pass();
                Err(Refused(self.tag).into())
            }
        }
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log.push(format!("finish {}", self.tag));
    }
}

/// A coop of `members`, the n-th bound by `binder(n)`, with a listener; returns the coop, the
/// members' mboxes and the listener.
fn coop_of(
    h: &EnvHandle,
    members: Vec<Starts>,
    binder: impl Fn(usize) -> agentry::disp::Binder,
    log: &Log,
) -> (agentry::Coop, Vec<Mbox>, Receiver<CoopDeregistered>) {
    let siblings = Arc::new(OnceLock::new());
    let mut coop = h.new_coop();
    let mboxes: Vec<Mbox> = members
        .into_iter()
        .enumerate()
        .map(|(tag, starts)| {
            let member = Member {
                tag,
                starts,
                siblings: Arc::clone(&siblings),
                log: log.clone(),
            };
            coop.add_with(member, &binder(tag))
        })
        .collect();
    siblings.set(mboxes.clone()).expect("set once");
    let (tx, rx) = mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    (coop, mboxes, rx)
}

fn env() -> Env {
    quiet_expected_panics();
    Env::builder().autoshutdown(false).build().expect("env")
}

/// Checks a rolled-back coop of `n` members whose member `failed` failed to start: nobody
/// handled a note, exactly the members that started finished, and every note sent was
/// dropped and counted — per agent and in the environment.
fn assert_rolled_back(h: &EnvHandle, mboxes: &[Mbox], failed: usize, log: &Log, what: &str) {
    let events = log.snapshot();
    assert!(
        !events.iter().any(|e| e.contains("handled")),
        "{what}: no agent of a coop that failed to start handles a message: {events:?}"
    );
    let has = |e: String| events.contains(&e);
    let mut started = 0;
    for tag in 0..mboxes.len() {
        let did_start = has(format!("start {tag}"));
        started += usize::from(did_start);
        if tag == failed {
            assert!(did_start, "{what}: the failing agent ran on_start");
            assert!(!has(format!("finish {tag}")), "{what}: it does not finish");
        } else {
            assert_eq!(
                has(format!("finish {tag}")),
                did_start,
                "{what}: agent {tag} finishes exactly if it started: {events:?}"
            );
        }
    }
    // Every agent that ran on_start sent a note to each sibling; each was dropped and counted.
    let sent = (started * (mboxes.len() - 1)) as u64;
    let dropped: u64 = mboxes.iter().map(|m| m.stats().dropped).sum();
    let refused: u64 = mboxes.iter().map(|m| m.stats().refused).sum();
    let handled: u64 = mboxes.iter().map(|m| m.stats().handled).sum();
    assert_eq!(
        (handled, dropped, refused),
        (0, sent, sent),
        "{what}: per-agent accounting"
    );
    let stats = h.stats();
    assert_eq!(stats.dead_letters, sent, "{what}: dead letters");
    assert_eq!((stats.coops, stats.agents), (0, 0), "{what}: nothing left");
}

#[test]
fn an_error_in_on_start_rolls_the_coop_back_on_every_dispatcher() {
    on_every_dispatcher(env, |env, disp| {
        let h = env.handle().clone();
        let log = Log::default();
        let members = vec![Starts::Fine, Starts::Refuses, Starts::Fine];
        let (coop, mboxes, gone) = coop_of(&h, members, |n| disp.binder(n), &log);
        let err = h
            .register_coop(coop)
            .expect_err("a coop whose agent refuses to start is not registered");
        let RegisterError::Start {
            index,
            agent_type,
            failure: StartFailure::Error(e),
        } = &err
        else {
            panic!("{}: wrong error {err:?}", disp.name);
        };
        assert_eq!(*index, 1, "{}", disp.name);
        assert!(agent_type.ends_with("Member"), "{}", disp.name);
        assert_eq!(
            e.downcast_ref::<Refused>(),
            Some(&Refused(1)),
            "{}",
            disp.name
        );
        assert_eq!(
            err.to_string(),
            format!(
                "agent #1 ({agent_type}) failed to start: on_start failed: agent 1 refuses to start"
            ),
            "{}",
            disp.name
        );
        assert!(
            std::error::Error::source(&err)
                .and_then(std::error::Error::source)
                .is_some_and(|s| s.to_string() == "agent 1 refuses to start"),
            "{}: the user's error is the source of the failure",
            disp.name
        );
        // The coop is gone by the time the error is returned: its listener was told.
        assert_eq!(
            gone.try_recv().map(|e| e.reason),
            Ok(DeregReason::StartFailed),
            "{}",
            disp.name
        );
        assert_rolled_back(&h, &mboxes, 1, &log, disp.name);
    });
}

#[test]
fn a_panic_in_on_start_rolls_the_coop_back_and_keeps_its_message() {
    let env = env();
    let h = env.handle().clone();
    let log = Log::default();
    let members = vec![Starts::Fine, Starts::Fine, Starts::Panics];
    let (coop, mboxes, _gone) = coop_of(&h, members, |_| h.default_binder(), &log);
    let Err(RegisterError::Start {
        index: 2,
        failure: StartFailure::Panicked(message),
        ..
    }) = h.register_coop(coop)
    else {
        panic!("the start must fail with the panic");
    };
    assert_eq!(message, format!("{EXPECTED}: agent 2 cannot start"));
    assert_eq!(h.stats().panics, 1);
    assert_rolled_back(&h, &mboxes, 2, &log, "panic");
}

#[test]
fn started_agents_hold_messages_until_the_coop_has_started_then_handle_them_in_order() {
    let env = env();
    let h = env.handle().clone();
    let log = Log::default();
    let (waiting, key) = gate();
    let a = agentry::disp::OneThreadDispatcher::new(&h, "a").expect("a");
    let b = agentry::disp::OneThreadDispatcher::new(&h, "b").expect("b");
    let binders = [a.binder(), b.binder()];
    let members = vec![Starts::Fine, Starts::Waits(waiting)];
    let (coop, mboxes, _gone) = coop_of(&h, members, |n| binders[n].clone(), &log);
    let registering = {
        let h = h.clone();
        std::thread::spawn(move || h.register_coop(coop))
    };
    // Member 1 is inside on_start (it has sent its note to member 0); member 0 has started.
    key.wait_entered();
    common::wait_until("member 0 started", || {
        log.snapshot().contains(&"start 0".to_owned())
    });
    for n in 100..103 {
        mboxes[0].send(Note(n));
    }
    std::thread::sleep(common::SHORT);
    assert!(
        !log.snapshot().iter().any(|e| e.contains("handled")),
        "member 0 handles nothing while its sibling is starting: {:?}",
        log.snapshot()
    );
    assert!(
        !registering.is_finished(),
        "registration waits for every start"
    );
    key.open();
    registering
        .join()
        .expect("registering thread")
        .expect("every member started");
    common::wait_until("member 0 handled the four notes", || {
        mboxes[0].stats().handled == 4
    });
    let handled: Vec<String> = log
        .snapshot()
        .into_iter()
        .filter(|e| e.starts_with("0 handled"))
        .collect();
    assert_eq!(
        handled,
        [
            "0 handled 1",
            "0 handled 100",
            "0 handled 101",
            "0 handled 102"
        ],
        "held messages are handled in the order they came"
    );
    common::wait_until("member 1 handled member 0's note", || {
        mboxes[1].stats().handled == 1
    });
}

#[test]
fn what_a_started_agent_held_is_dropped_and_counted_when_a_sibling_fails() {
    let env = env();
    let h = env.handle().clone();
    let log = Log::default();
    let (waiting, key) = gate();
    let a = agentry::disp::OneThreadDispatcher::new(&h, "a").expect("a");
    let b = agentry::disp::OneThreadDispatcher::new(&h, "b").expect("b");
    let binders = [a.binder(), b.binder()];
    let members = vec![Starts::Fine, Starts::WaitsThenRefuses(waiting)];
    let (coop, mboxes, gone) = coop_of(&h, members, |n| binders[n].clone(), &log);
    let registering = {
        let h = h.clone();
        std::thread::spawn(move || h.register_coop(coop))
    };
    key.wait_entered();
    common::wait_until("member 0 started", || {
        log.snapshot().contains(&"start 0".to_owned())
    });
    for n in 100..103 {
        mboxes[0].send(Note(n));
    }
    key.open();
    let result = registering.join().expect("registering thread");
    assert!(
        matches!(result, Err(RegisterError::Start { index: 1, .. })),
        "{result:?}"
    );
    assert_eq!(recv(&gone).reason, DeregReason::StartFailed);
    // Member 0 held its sibling's note and the test's three: all dropped, none handled.
    assert_eq!(mboxes[0].stats().dropped, 4);
    assert_eq!(mboxes[0].stats().handled, 0);
    let events = log.snapshot();
    assert!(events.contains(&"finish 0".to_owned()), "{events:?}");
    assert!(!events.contains(&"finish 1".to_owned()), "{events:?}");
    assert!(!events.iter().any(|e| e.contains("handled")), "{events:?}");
    assert_eq!(
        h.stats().dead_letters,
        5,
        "4 held + member 0's note to member 1"
    );
}

/// Registers a coop with a refusing member from its handler.
struct Registrar {
    log: Log,
    /// The registration's result and the coop's deregistration listener.
    result: mpsc::Sender<(Result<agentry::CoopId, String>, Receiver<CoopDeregistered>)>,
}

struct Go;

impl Agent for Registrar {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|r: &mut Registrar, ctx: &mut Ctx<Registrar>, _: Go| {
            let members = vec![Starts::Fine, Starts::Refuses];
            let h = ctx.env();
            let (mut coop, _, gone) = coop_of(&h, members, |_| h.default_binder(), &r.log);
            coop.set_parent(ctx.coop());
            let result = ctx.register_coop(coop).map_err(|e| e.to_string());
            let _ = r.result.send((result, gone));
        })?;
        Ok(())
    }
}

#[test]
fn registered_from_a_handler_a_failed_start_is_the_coops_deregistration_reason() {
    let env = env();
    let h = env.handle().clone();
    let log = Log::default();
    let (tx, rx) = mpsc::channel();
    let registrar = h
        .register_agent(Registrar {
            log: log.clone(),
            result: tx,
        })
        .expect("registrar");
    registrar.send(Go);
    // A handler cannot wait for starts that may need its own thread: the registration
    // returns once the coop is committed, and the failure arrives as its deregistration.
    let (result, gone) = recv(&rx);
    let id = result.expect("committed");
    let event = recv(&gone);
    assert_eq!(
        event,
        CoopDeregistered {
            coop: id,
            reason: DeregReason::StartFailed
        }
    );
    let events = log.snapshot();
    assert!(!events.iter().any(|e| e.contains("handled")), "{events:?}");
    assert!(!events.contains(&"finish 1".to_owned()), "{events:?}");
    assert_eq!(
        events.contains(&"finish 0".to_owned()),
        events.contains(&"start 0".to_owned()),
        "{events:?}"
    );
}

#[test]
fn a_registration_returns_once_every_agent_has_started_on_every_dispatcher() {
    on_every_dispatcher(env, |env, disp| {
        let h = env.handle().clone();
        let log = Log::default();
        let members = (0..5).map(|_| Starts::Fine).collect();
        let (coop, mboxes, _gone) = coop_of(&h, members, |n| disp.binder(n), &log);
        h.register_coop(coop).expect("registered");
        let events = log.snapshot();
        for tag in 0..mboxes.len() {
            assert!(
                events.contains(&format!("start {tag}")),
                "{}: on_start of agent {tag} ran before register_coop returned: {events:?}",
                disp.name
            );
        }
        // And the notes the agents sent each other are all handled.
        common::wait_until("every note handled", || {
            mboxes.iter().map(|m| m.stats().handled).sum::<u64>() == 20
        });
    });
}
