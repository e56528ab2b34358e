//! A supervised child coop is made by its factory when the supervising coop starts, and made
//! again (a new coop, new id) when it fails — deregistered with `Panic` (an agent of it
//! panicked with the default reaction), `Escalation` or `Restart`. Deregistered with `Normal`
//! or `User`, it has ended: it is not restarted.

mod common;

use agentry::supervision::{Child, Strategy, Supervision};
use agentry::{Agent, Coop, CoopId, Ctx, Define, DefineError, DeregReason, Env};
use common::{DEADLINE, EXPECTED, quiet_expected_panics, wait_until};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

struct Boom;

struct Fragile;

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Boom| panic!("{EXPECTED}: boom"))?;
        Ok(())
    }
}

struct Ping;

struct Probe;

impl Agent for Probe {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Probe, _: &mut Ctx<Probe>, _: Ping| ())?;
        Ok(())
    }
}

fn child_coop(env: &Env, parent: CoopId) -> Option<CoopId> {
    match &env.handle().supervisor_stats(parent)?.children[0].child {
        Child::Coop(id) => *id,
        _ => None,
    }
}

#[test]
fn a_failed_child_coop_is_made_again_an_ended_one_is_not() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let made = Arc::new(AtomicU32::new(0));
    let worker = Arc::new(std::sync::Mutex::new(None));
    let mut parent = env.handle().new_coop();
    parent.supervise(Supervision::new(Strategy::OneForOne));
    {
        let made = Arc::clone(&made);
        let worker = Arc::clone(&worker);
        parent.add_supervised_coop(move |child: &mut Coop| {
            made.fetch_add(1, Ordering::SeqCst);
            *worker.lock().expect("lock") = Some(child.add(Fragile));
        });
    }
    let parent = env.handle().register_coop(parent).expect("registered");
    wait_until("the child coop is made", || {
        child_coop(&env, parent).is_some()
    });
    let first = child_coop(&env, parent).expect("made");

    // An agent of the child panics; the child's reaction (inherited) deregisters it: a failure.
    worker
        .lock()
        .expect("lock")
        .clone()
        .expect("made")
        .send(Boom);
    wait_until("the child coop is made again", || {
        child_coop(&env, parent).is_some_and(|id| id != first)
    });
    assert_eq!(made.load(Ordering::SeqCst), 2);
    let second = child_coop(&env, parent).expect("made");

    // Deregistered on request: it has ended.
    env.handle()
        .deregister_coop(second, DeregReason::Normal)
        .expect("registered");
    wait_until("the child coop is gone", || {
        child_coop(&env, parent).is_none()
    });
    // The supervisor runs on the default dispatcher: a request to another agent there is
    // answered after the supervisor's handler for the child's departure has returned.
    let probe = env.handle().register_agent(Probe).expect("registered");
    assert_eq!(probe.request::<Ping, ()>(Ping, DEADLINE), Ok(()));
    assert_eq!(child_coop(&env, parent), None, "an ended child stays ended");
    assert_eq!(made.load(Ordering::SeqCst), 2);
    let stats = env.handle().supervisor_stats(parent).expect("alive");
    assert_eq!(stats.children[0].restarts, 1);
    env.handle().stop();
    env.run();
}
