//! Three node processes over a 2-server NATS cluster; one is killed with SIGKILL:
//! membership, the registry, remote death watch, remote spawn and supervision across nodes.

mod support;

use agentry::supervision::{Strategy, Supervision};
use agentry::{Agent, watch::ExitReason};
use agentry_cluster::{
    AgentRef, Cluster, DownReason, RegistryError, RemoteChildSpec, RemoteExit, SpawnError,
    remote_child,
};
use support::*;

#[test]
fn node_process() {
    if child_role().is_some() {
        run_node();
    }
}

struct Idle;
impl Agent for Idle {}

fn add(
    gw: &agentry_remote::Gateway,
    r: &AgentRef,
    a: i64,
) -> Result<Sum, agentry_remote::RequestError> {
    r.mbox(gw)
        .expect("address")
        .request::<Add, Sum>(Add { a, b: 1 }, WAIT)
}

#[test]
fn a_killed_node_is_down_once_its_names_vanish_and_its_children_restart_elsewhere() {
    if child_role().is_some() {
        return;
    }
    let Some(bin) = jetstream_or_skip("cluster_node_killed") else {
        return;
    };
    let (s1, s2) = nats_pair(&bin);
    let both = format!("{},{}", s1.url, s2.url);
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
    let b = Node::spawn("b", &both);
    let mut c = Node::spawn("c", &s2.url);
    for child in [&a, &b, &c] {
        assert!(child.wait_line("READY").starts_with("READY "));
    }
    assert!(
        eventually(|| cluster.members().len() == 3),
        "members: {:?}",
        cluster.members()
    );
    let ids: Vec<String> = cluster.members().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["a", "b", "c"]);

    // Registry: names resolve from any node to a working address; typed errors.
    let mut refs = Vec::new();
    for id in ["a", "b", "c"] {
        let r = cluster
            .lookup(&format!("svc.{id}"))
            .expect("registered name");
        assert_eq!(r.node.id, id);
        assert!(eventually(|| add(&gw, &r, 41) == Ok(Sum(42))));
        refs.push(r);
    }
    let (ra, rb, rc) = (refs[0].clone(), refs[1].clone(), refs[2].clone());
    assert_eq!(
        cluster.lookup("svc.nobody"),
        Err(RegistryError::UnknownName("svc.nobody".into()))
    );
    let mine = cluster.expose(&register(h, Idle), "", None);
    assert_eq!(
        cluster.register("svc.a", &mine),
        Err(RegistryError::NameTaken {
            name: "svc.a".into(),
            owner: ra.node.clone()
        })
    );
    assert_eq!(
        cluster.register("bad name", &mine),
        Err(RegistryError::InvalidName("bad name".into()))
    );
    assert_eq!(
        cluster.register("svc.parent", &ra),
        Err(RegistryError::NotLocal)
    );
    cluster.register("svc.parent", &mine).expect("a free name");
    assert_eq!(cluster.lookup("svc.parent"), Ok(mine.clone()));
    let instances = cluster.lookup_service("adders").expect("service");
    assert_eq!(instances, {
        let mut v = vec![ra.clone(), rb.clone(), rc.clone()];
        v.sort_by(|x, y| (&x.node, x.key).cmp(&(&y.node, y.key)));
        v
    });

    // Remote spawn: typed errors, a working child, stop → Exited(Normal) exactly once, and a
    // watch made after it is gone fires at once with the real reason.
    assert_eq!(
        cluster.spawn("b", "nosuch", b""),
        Err(SpawnError::UnknownFactory {
            node: "b".into(),
            factory: "nosuch".into()
        })
    );
    assert_eq!(
        cluster.spawn("zz", "adder", b""),
        Err(SpawnError::NoNode("zz".into()))
    );
    let spawned = cluster.spawn("b", "adder", b"").expect("spawned on b");
    assert_eq!(spawned.node, rb.node);
    assert!(eventually(|| add(&gw, &spawned, 1) == Ok(Sum(2))));
    let w_spawned = cluster.watch(&log, &spawned);
    cluster.stop_remote(&spawned);
    let fired = |w: agentry_cluster::RemoteWatchId| {
        seen(&seen_log)
            .into_iter()
            .filter(|s| matches!(s, Seen::Terminated(id, _) if *id == w.get()))
            .collect::<Vec<_>>()
    };
    assert!(eventually(|| !fired(w_spawned).is_empty()));
    assert_eq!(
        fired(w_spawned),
        [Seen::Terminated(
            w_spawned.get(),
            RemoteExit::Exited(ExitReason::Normal)
        )]
    );
    let late = cluster.watch(&log, &spawned);
    assert!(eventually(|| !fired(late).is_empty()));
    assert_eq!(
        fired(late),
        [Seen::Terminated(
            late.get(),
            RemoteExit::Exited(ExitReason::Normal)
        )]
    );
    let bogus = AgentRef {
        key: 999_999,
        ..rb.clone()
    };
    let w_bogus = cluster.watch(&log, &bogus);
    assert!(eventually(|| !fired(w_bogus).is_empty()));
    assert_eq!(
        fired(w_bogus),
        [Seen::Terminated(w_bogus.get(), RemoteExit::Unknown)]
    );

    // Supervision across nodes: a child on c (preference c, then b).
    assert!(eventually(|| cluster
        .members()
        .iter()
        .all(|m| m.factories == ["adder"])));
    let (factory, child) = remote_child(
        &cluster,
        RemoteChildSpec {
            nodes: vec!["c".into(), "b".into()],
            ..RemoteChildSpec::new("adder", b"")
        },
    );
    let mut sup = h.new_coop();
    sup.supervise(Supervision::new(Strategy::OneForOne));
    sup.add_supervised_coop(factory);
    h.register_coop(sup).expect("supervisor");
    assert!(eventually(|| child.current().is_some()));
    let first = child.current().expect("started");
    assert_eq!(first.node, rc.node);
    assert!(eventually(|| add(&gw, &first, 9) == Ok(Sum(10))));

    // Watches of a's and c's agents, then SIGKILL c.
    let w_a = cluster.watch(&log, &ra);
    let w_c = cluster.watch(&log, &rc);
    // The survivors have seen c up (else they could not see it go down).
    a.wait_lines(&["UP b", "UP c", "UP parent"]);
    b.wait_lines(&["UP a", "UP c", "UP parent"]);
    c.kill();
    let down_c = Seen::Down("c".into(), rc.node.incarnation, "Timeout".into());
    assert!(
        eventually(|| seen(&seen_log).contains(&down_c)),
        "{:?}",
        seen(&seen_log)
    );
    // Watchers hear NodeDown, before the NodeDown event (same log agent, same sender).
    let log_now = seen(&seen_log);
    let t_c = log_now
        .iter()
        .position(|s| *s == Seen::Terminated(w_c.get(), RemoteExit::NodeDown(DownReason::Timeout)))
        .expect("watch of c fired with NodeDown(Timeout)");
    assert!(t_c < log_now.iter().position(|s| *s == down_c).expect("down"));
    // Survivors see it down too.
    for child in [&a, &b] {
        assert_eq!(child.wait_line("DOWN c"), "DOWN c Timeout");
    }
    // Its names vanish (at once for lookups, and from the bucket).
    assert_eq!(
        cluster.lookup("svc.c"),
        Err(RegistryError::UnknownName("svc.c".into()))
    );
    let left = cluster.lookup_service("adders").expect("service");
    assert_eq!(
        left.iter().map(|r| r.node.id.as_str()).collect::<Vec<_>>(),
        ["a", "b"],
        "{left:?} {:?} {:?}",
        cluster.stats(),
        seen(&seen_log)
    );
    // Its supervised child restarts on b and serves.
    assert!(eventually(|| child
        .current()
        .is_some_and(|r| r.node == rb.node)));
    let second = child.current().expect("restarted");
    assert!(eventually(|| add(&gw, &second, 99) == Ok(Sum(100))));
    assert_eq!(child.history().len(), 2);

    // a leaves gracefully: Left, and its watch fires NodeDown(Left).
    gw.mbox("stop-a").expect("name").send(Stop).expect("sent");
    let down_a = Seen::Down("a".into(), ra.node.incarnation, "Left".into());
    assert!(eventually(|| seen(&seen_log).contains(&down_a)));
    assert_eq!(b.wait_line("DOWN a"), "DOWN a Left");
    assert!(a.wait_success());

    // Exactly once: every watch fired once; c and a went down once each.
    for (w, want) in [
        (w_c, RemoteExit::NodeDown(DownReason::Timeout)),
        (w_a, RemoteExit::NodeDown(DownReason::Left)),
    ] {
        assert_eq!(fired(w), [Seen::Terminated(w.get(), want)]);
    }
    // A watch made after the node went down fires at once, with the node's reason.
    let w_late_c = cluster.watch(&log, &rc);
    assert!(eventually(|| !fired(w_late_c).is_empty()));
    assert_eq!(
        fired(w_late_c),
        [Seen::Terminated(
            w_late_c.get(),
            RemoteExit::NodeDown(DownReason::Timeout)
        )]
    );
    let all = seen(&seen_log);
    let downs = |id: &str| {
        all.iter()
            .filter(|s| matches!(s, Seen::Down(n, ..) if n == id))
            .count()
    };
    assert_eq!((downs("a"), downs("b"), downs("c")), (1, 0, 1));
    assert_eq!(cluster.stats().malformed, 0);
    gw.mbox("stop-b").expect("name").send(Stop).expect("sent");
    assert!(b.wait_success());
    cluster.leave();
    h.stop();
    env.run();
}
