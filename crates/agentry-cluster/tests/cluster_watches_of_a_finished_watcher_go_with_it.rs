//! A watcher of remote agents that finishes takes its watches with it: nothing is kept for a
//! mbox nobody reads, and the watches of a watcher still running are untouched.

mod support;

use agentry::{Agent, DeregReason};
use agentry_cluster::Cluster;
use support::*;

struct Idle;
impl Agent for Idle {}

#[test]
fn a_finished_watchers_watches_are_dropped_unfired() {
    let Some(bin) = nats_or_skip("cluster_watches_of_a_finished_watcher_go_with_it") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let n = Cluster::builder("w", "n")
        .registry(false)
        .timeout(WAIT)
        .join(h, &server.url)
        .expect("joins");
    let target = h.register_agent(Idle).expect("registered");
    let target_ref = n.expose(&target, "", None);

    // Two watchers, each in its own coop; the first watches twice.
    let mut coop = h.new_coop();
    let first = coop.add(Idle);
    let first_coop = h.register_coop(coop).expect("registered");
    let second = h.register_agent(Idle).expect("registered");
    n.watch(&first, &target_ref);
    n.watch(&first, &target_ref);
    let kept = n.watch(&second, &target_ref);
    assert_eq!(n.watch_count(), 3);

    h.deregister_coop(first_coop, DeregReason::Normal)
        .expect("deregistered");
    assert!(eventually(|| n.watch_count() == 1));
    // The second watcher's watch is the one left, still waiting: removing it works once.
    assert!(n.unwatch(kept));
    assert!(!n.unwatch(kept));
    assert_eq!(n.watch_count(), 0);
    h.stop();
    env.run();
}
