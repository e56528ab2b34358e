//! One-for-all: when one child fails, every child is restarted — stopped one at a time in
//! reverse order (each `on_finish` before the next), then started one at a time in order (each
//! agent's `on_start` before the next child starts) — even with each child on its own thread
//! (`active_obj`). A supervised child coop takes its turn among them: deregistered with
//! `Restart` and waited for, then made afresh (a new id) and registered.

mod common;

use agentry::disp::ActiveObjDispatcher;
use agentry::supervision::{Child, Strategy, Supervision};
use agentry::{Agent, Coop, Ctx, Env, UserError};
use common::supervised::{Boom, which, worker};
use common::{Log, quiet_expected_panics, wait_until};

/// The agent of the supervised child coop.
struct Member {
    incarnation: u32,
    log: Log,
}

impl Agent for Member {
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.log.push(format!("start coop#{}", self.incarnation));
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log.push(format!("finish coop#{}", self.incarnation));
    }
}

#[test]
fn every_child_stops_last_first_then_starts_first_first() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let threads = ActiveObjDispatcher::new(env.handle(), "workers").expect("dispatcher");
    let log = Log::default();
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForAll));
    let a = coop.add_supervised_with(worker("a", &log), &threads.binder());
    let member_log = log.clone();
    let mut made = 0;
    coop.add_supervised_coop(move |child: &mut Coop| {
        made += 1;
        child.add(Member {
            incarnation: made,
            log: member_log.clone(),
        });
    });
    let b = coop.add_supervised_with(worker("b", &log), &threads.binder());
    let c = coop.add_supervised_with(worker("c", &log), &threads.binder());
    let id = env.handle().register_coop(coop).expect("registered");
    wait_until("every child started", || log.snapshot().len() == 4);
    let child_coop = |id| match &env
        .handle()
        .supervisor_stats(id)
        .expect("supervises")
        .children[1]
        .child
    {
        Child::Coop(current) => *current,
        other => panic!("child 1 is the coop, not {other:?}"),
    };
    let first_coop = child_coop(id).expect("registered by the supervisor");
    log.take();

    b.send(Boom);
    wait_until("c and the child coop started again", || {
        let events = log.snapshot();
        ["start c#2", "start coop#2"]
            .iter()
            .all(|e| events.iter().any(|x| x == e))
    });
    let events = log.take();
    // A child coop is stopped when its deregistration is complete (its agents finished); it is
    // started when its fresh coop is registered — its agents' `on_start` then run on their own
    // dispatcher, unordered with the next children's.
    assert_eq!(
        events[..5],
        [
            "finish c#1",
            "finish b#1",
            "finish coop#1",
            "finish a#1",
            "start a#2"
        ]
    );
    let agents: Vec<_> = events[5..]
        .iter()
        .filter(|e| *e != "start coop#2")
        .collect();
    assert_eq!(agents, ["start b#2", "start c#2"]);
    assert_eq!((which(&a), which(&b), which(&c)), (2, 2, 2));
    let second_coop = child_coop(id).expect("registered again");
    assert_ne!(
        first_coop, second_coop,
        "a restarted child coop is a new coop"
    );
    assert_eq!(env.handle().stats().restarts, 4, "four children restarted");
    env.handle().stop();
    env.run();
}
