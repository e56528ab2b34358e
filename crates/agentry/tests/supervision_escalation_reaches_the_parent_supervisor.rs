//! Escalation goes up the supervision tree: a supervised child coop whose own supervisor gives
//! up is deregistered with `DeregReason::Escalation`; its parent's supervisor sees a failed
//! child and applies its own policy — here, it registers a fresh child coop (a new `CoopId`).

mod common;

use agentry::supervision::{Child, Strategy, Supervision};
use agentry::{
    Agent, Coop, CoopDeregistered, CoopId, Ctx, Define, DefineError, DeregReason, Env, Mbox,
};
use common::{EXPECTED, quiet_expected_panics, recv, wait_until};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Boom;

struct Fragile;

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Boom| panic!("{EXPECTED}: boom"))?;
        Ok(())
    }
}

fn current_child(env: &Env, parent: CoopId) -> Option<CoopId> {
    match &env.handle().supervisor_stats(parent)?.children[0].child {
        Child::Coop(id) => *id,
        _ => None,
    }
}

#[test]
fn the_parent_restarts_a_child_coop_that_escalated() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let worker: Arc<Mutex<Option<Mbox>>> = Arc::default();
    let (tx, gone) = mpsc::channel::<CoopDeregistered>();
    let made = Arc::new(Mutex::new(0));
    let mut parent = env.handle().new_coop();
    parent.supervise(Supervision::new(Strategy::OneForOne));
    {
        let worker = Arc::clone(&worker);
        let made = Arc::clone(&made);
        parent.add_supervised_coop(move |child: &mut Coop| {
            *made.lock().expect("lock") += 1;
            // The child gives up at its first failure.
            child.supervise(
                Supervision::new(Strategy::OneForOne).intensity(0, Duration::from_secs(1)),
            );
            let tx = tx.clone();
            child.on_dereg(move |g| {
                let _ = tx.send(g);
            });
            *worker.lock().expect("lock") = Some(child.add_supervised(|| Fragile));
        });
    }
    let parent = env.handle().register_coop(parent).expect("registered");
    wait_until("the child coop is registered", || {
        current_child(&env, parent).is_some()
    });
    let first = current_child(&env, parent).expect("registered");
    let first_worker = worker.lock().expect("lock").clone().expect("made");

    first_worker.send(Boom);
    let escalated = recv(&gone);
    assert_eq!(escalated.coop, first);
    assert_eq!(escalated.reason, DeregReason::Escalation);
    wait_until("the parent registered a fresh child coop", || {
        current_child(&env, parent).is_some_and(|id| id != first)
    });
    assert_eq!(*made.lock().expect("lock"), 2);
    let stats = env.handle().stats();
    assert_eq!(
        stats.escalations, 1,
        "the child escalated; the parent did not"
    );
    assert_eq!(
        stats.restarts, 1,
        "the parent restarted its child coop once"
    );
    let parent_stats = env.handle().supervisor_stats(parent).expect("alive");
    assert_eq!(parent_stats.children[0].restarts, 1);
    assert_eq!(parent_stats.escalations, 0);
    let second_worker = worker.lock().expect("lock").clone().expect("made");
    assert_ne!(first_worker, second_worker, "a fresh coop has fresh agents");
    assert!(second_worker.is_alive());
    env.handle().stop();
    env.run();
}
