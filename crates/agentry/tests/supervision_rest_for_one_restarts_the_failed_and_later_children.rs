//! Rest-for-one: when a child fails, it and the children added after it are restarted (the
//! later ones stopped first, then started in order); the children added before it keep
//! running, in their first incarnation.

mod common;

use agentry::Env;
use agentry::supervision::{Strategy, Supervision};
use common::supervised::{Boom, which, worker};
use common::{Log, quiet_expected_panics, wait_until};

#[test]
fn the_failed_child_and_those_after_it_restart() {
    quiet_expected_panics();
    let env = Env::new().expect("env");
    let log = Log::default();
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::RestForOne));
    let a = coop.add_supervised(worker("a", &log));
    let b = coop.add_supervised(worker("b", &log));
    let c = coop.add_supervised(worker("c", &log));
    let d = coop.add_supervised(worker("d", &log));
    env.handle().register_coop(coop).expect("registered");
    wait_until("every child started", || log.snapshot().len() == 4);
    log.take();

    c.send(Boom);
    // d is the last to start (a healthy child handles what was queued before its stop in its
    // old incarnation, so wait for the log rather than ask d).
    wait_until("d started again", || {
        log.snapshot().iter().any(|e| e == "start d#2")
    });
    assert_eq!(
        log.take(),
        ["finish d#1", "finish c#1", "start c#2", "start d#2"]
    );
    assert_eq!((which(&a), which(&b), which(&c)), (1, 1, 2));
    assert_eq!(
        [
            a.stats().restarts,
            b.stats().restarts,
            c.stats().restarts,
            d.stats().restarts
        ],
        [0, 0, 1, 1]
    );

    b.send(Boom);
    wait_until("d started a third time", || {
        log.snapshot().iter().any(|e| e == "start d#3")
    });
    assert_eq!(
        log.take(),
        [
            "finish d#2",
            "finish c#2",
            "finish b#1",
            "start b#2",
            "start c#3",
            "start d#3"
        ]
    );
    assert_eq!(which(&a), 1, "a was added before both failures");
    env.handle().stop();
    env.run();
}
