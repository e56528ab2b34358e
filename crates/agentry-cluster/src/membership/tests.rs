use super::*;
use std::collections::BTreeMap;

fn info(id: &str, inc: u64) -> NodeInfo {
    NodeInfo {
        id: id.into(),
        incarnation: inc,
        meta: BTreeMap::new(),
        factories: Vec::new(),
    }
}

const BOUND: Duration = Duration::from_secs(3);

#[test]
fn first_heartbeat_is_up_and_silence_is_down_once() {
    let t0 = Instant::now();
    let mut m = Membership::new("me", BOUND);
    let a = info("a", 1);
    assert_eq!(m.heartbeat(t0, &a).changes, vec![Change::Up(a.clone())]);
    assert!(m.heartbeat(t0 + BOUND / 2, &a).changes.is_empty());
    assert!(m.expire(t0 + BOUND).is_empty(), "heard at bound/2");
    assert_eq!(
        m.expire(t0 + BOUND / 2 + BOUND),
        vec![Change::Down(a.key(), DownReason::Timeout)]
    );
    assert!(m.expire(t0 + BOUND * 10).is_empty());
    assert!(!m.is_up(&a.key()) && m.is_down(&a.key()));
}

#[test]
fn a_down_incarnation_never_comes_back_and_is_evicted() {
    let t0 = Instant::now();
    let mut m = Membership::new("me", BOUND);
    let a = info("a", 1);
    m.heartbeat(t0, &a);
    m.expire(t0 + BOUND);
    let out = m.heartbeat(t0 + BOUND * 2, &a);
    assert!(out.changes.is_empty());
    assert!(out.evict);
    assert!(m.members().is_empty());
}

#[test]
fn a_new_incarnation_replaces_the_old_one() {
    let t0 = Instant::now();
    let mut m = Membership::new("me", BOUND);
    let (a1, a2) = (info("a", 1), info("a", 2));
    m.heartbeat(t0, &a1);
    assert_eq!(
        m.heartbeat(t0, &a2).changes,
        vec![
            Change::Down(a1.key(), DownReason::Restarted),
            Change::Up(a2.clone())
        ]
    );
    // A late heartbeat of the old incarnation changes nothing.
    let late = m.heartbeat(t0, &a1);
    assert!(late.changes.is_empty() && late.evict);
    assert_eq!(m.members(), vec![a2]);
}

#[test]
fn leave_is_down_once_and_own_heartbeats_are_ignored() {
    let t0 = Instant::now();
    let mut m = Membership::new("me", BOUND);
    let a = info("a", 7);
    assert_eq!(m.heartbeat(t0, &info("me", 1)), Outcome::default());
    m.heartbeat(t0, &a);
    assert_eq!(
        m.leave(&a.key()),
        Some(Change::Down(a.key(), DownReason::Left))
    );
    assert_eq!(m.leave(&a.key()), None);
    assert!(m.expire(t0 + BOUND * 2).is_empty());
    // A leave heard before any heartbeat keeps the incarnation from coming up.
    let b = info("b", 1);
    assert_eq!(m.leave(&b.key()), None);
    assert!(m.heartbeat(t0, &b).evict);
}

#[test]
fn rejoin_downs_everyone_and_forgets_tombstones() {
    let t0 = Instant::now();
    let mut m = Membership::new("me", BOUND);
    let (a, b) = (info("a", 1), info("b", 1));
    m.heartbeat(t0, &a);
    m.heartbeat(t0, &b);
    m.expire(t0 + BOUND); // both down
    m.heartbeat(t0 + BOUND, &info("c", 1));
    assert_eq!(
        m.rejoin(),
        vec![Change::Down(info("c", 1).key(), DownReason::LocalRejoin)]
    );
    // The new view hears a again: it is up again.
    assert_eq!(m.heartbeat(t0, &a).changes, vec![Change::Up(a)]);
}

#[test]
fn a_heartbeat_with_new_metadata_updates_the_member_silently() {
    let t0 = Instant::now();
    let mut m = Membership::new("me", BOUND);
    let a = info("a", 1);
    m.heartbeat(t0, &a);
    let mut a2 = a.clone();
    a2.factories.push("f".into());
    assert!(m.heartbeat(t0, &a2).changes.is_empty());
    assert_eq!(m.members(), vec![a2]);
}
