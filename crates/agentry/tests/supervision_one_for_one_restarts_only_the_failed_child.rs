//! One-for-one: when a supervised agent fails, only it is restarted — its incarnation finishes,
//! a fresh one from the factory starts on the same mbox with a new `AgentId` — and its
//! siblings keep running untouched. The restart is counted per child and in total.

mod common;

use agentry::Env;
use agentry::supervision::{Child, Strategy, Supervision};
use common::supervised::{Boom, which, worker};
use common::{Log, quiet_expected_panics, wait_until};

#[test]
fn only_the_failed_child_is_restarted_on_the_same_mbox() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let log = Log::default();
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne));
    let a = coop.add_supervised(worker("a", &log));
    let b = coop.add_supervised(worker("b", &log));
    let c = coop.add_supervised(worker("c", &log));
    let id = env.handle().register_coop(coop).expect("registered");
    wait_until("the three workers started", || log.snapshot().len() == 3);
    let first_b = b.agent_id().expect("registered");

    b.send(Boom);
    // Sent while b has failed or is being restarted: kept for, and answered by, incarnation 2.
    assert_eq!(which(&b), 2);
    assert_eq!(which(&a), 1);
    assert_eq!(which(&c), 1);

    let events = log.take();
    assert_eq!(events[..3], ["start a#1", "start b#1", "start c#1"]);
    assert_eq!(events[3..], ["finish b#1", "start b#2"]);

    let second_b = b.agent_id().expect("registered");
    assert_ne!(first_b, second_b, "a new incarnation has a new id");
    assert_eq!(first_b.slot(), second_b.slot(), "restarted in place");
    assert!(env.handle().mbox_of(first_b).is_none());
    assert_eq!(env.handle().mbox_of(second_b), Some(b.clone()));

    assert_eq!(a.stats().restarts, 0);
    assert_eq!(b.stats().restarts, 1);
    assert_eq!(b.stats().panics, 1);
    assert_eq!(env.handle().stats().restarts, 1);
    // The supervisor counts a child's restart when the child acknowledges it (after the
    // deferred messages ran).
    let mut stats = env
        .handle()
        .supervisor_stats(id)
        .expect("a supervising coop");
    wait_until("the supervisor counted b's restart", || {
        stats = env
            .handle()
            .supervisor_stats(id)
            .expect("a supervising coop");
        stats.children[1].restarts == 1
    });
    assert_eq!(stats.restarts, 1);
    assert_eq!(stats.escalations, 0);
    let children: Vec<_> = stats
        .children
        .iter()
        .map(|c| (c.child.clone(), c.restarts))
        .collect();
    assert_eq!(
        children,
        [
            (Child::Agent(a.clone()), 0),
            (Child::Agent(b.clone()), 1),
            (Child::Agent(c.clone()), 0)
        ]
    );
    env.handle().stop();
    env.run();
    let events = log.take();
    assert_eq!(
        events.len(),
        3,
        "each live incarnation finishes once: {events:?}"
    );
}
