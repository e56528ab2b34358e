//! A partition simulated by stopping one of the two NATS servers: the node attached to it is
//! reported down on the other side (and sees the others down), rejoins as a new incarnation,
//! and comes back up as that new incarnation when the server returns.

mod support;

use agentry_cluster::{Cluster, DownReason, RegistryError, RemoteExit};
use support::*;

#[test]
fn node_process() {
    if child_role().is_some() {
        run_node();
    }
}

#[test]
fn a_cut_off_node_is_down_on_the_other_side_and_returns_as_a_new_incarnation() {
    if child_role().is_some() {
        return;
    }
    let Some(bin) = jetstream_or_skip("cluster_partition") else {
        return;
    };
    let (s1, mut s2) = nats_pair(&bin);
    let env = env();
    let h = env.handle();
    let gw = nats_gateway(h, &s1.url, "clu");
    let cluster = Cluster::builder("t", "parent")
        .failure_bound(BOUND)
        .timeout(WAIT)
        .join(h, &s1.url)
        .expect("parent joins");
    let (log, seen_log) = Log::start(h, &cluster, false);
    let a = Node::spawn("a", &s1.url);
    let c = Node::spawn("c", &s2.url);
    let c1: u64 = c.wait_line("READY")[6..].parse().expect("incarnation");
    a.wait_line("READY");
    assert!(eventually(|| cluster.members().len() == 2));
    // Everyone has seen everyone before the partition.
    c.wait_lines(&["UP a", "UP parent"]);
    a.wait_lines(&["UP c", "UP parent"]);
    let rc = cluster.lookup("svc.c").expect("c's name");
    assert_eq!(rc.node.incarnation, c1);
    let w = cluster.watch(&log, &rc);

    // Partition: c's only server goes away.
    s2.kill();
    let down_c = Seen::Down("c".into(), c1, "Timeout".into());
    assert!(eventually(|| seen(&seen_log).contains(&down_c)));
    // The other side: c is cut off, sees everyone down for it, rejoins.
    assert_eq!(c.wait_line("REJOINED"), "REJOINED");
    // a, on the parent's side, saw c down too.
    assert_eq!(a.wait_line("DOWN c"), "DOWN c Timeout");

    // Heal: c comes back as a new incarnation; its old one stays down.
    s2.restart();
    let back = || {
        seen(&seen_log).into_iter().find_map(|s| match s {
            Seen::Up(id, inc) if id == "c" && inc != c1 => Some(inc),
            _ => None,
        })
    };
    assert!(eventually(|| back().is_some()), "{:?}", seen(&seen_log));
    c.wait_lines(&["UP a", "UP parent"]);
    let c2 = back().expect("new incarnation");
    assert!(c2 > c1);
    assert!(
        cluster
            .members()
            .iter()
            .any(|m| m.id == "c" && m.incarnation == c2)
    );
    // Names of the old incarnation are gone (and not re-registered: see the Limits).
    assert_eq!(
        cluster.lookup("svc.c"),
        Err(RegistryError::UnknownName("svc.c".into()))
    );

    // Exactly once: c's first incarnation went down once, its watch fired once.
    let all = seen(&seen_log);
    assert_eq!(all.iter().filter(|s| **s == down_c).count(), 1);
    let fired: Vec<_> = all
        .iter()
        .filter(|s| matches!(s, Seen::Terminated(id, _) if *id == w.get()))
        .collect();
    assert_eq!(
        fired,
        [&Seen::Terminated(
            w.get(),
            RemoteExit::NodeDown(DownReason::Timeout)
        )]
    );
    // The parent never rejoined (it was not cut off).
    assert!(!all.contains(&Seen::Rejoined));
    assert_eq!(cluster.stats().rejoins, 0);

    for (id, child) in [("a", a), ("c", c)] {
        gw.mbox(&format!("stop-{id}"))
            .expect("name")
            .send(Stop)
            .expect("sent");
        assert!(child.wait_success(), "{id} exits");
    }
    cluster.leave();
    h.stop();
    env.run();
}
