//! Coop registration is transactional: every agent is defined, bound and started, or none is,
//! and the error says which agent failed and why.

mod common;

use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    MultiMbox, RegisterError, SendError, UserError,
};
use common::{EXPECTED, gate, quiet_expected_panics, recv, run_env};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};

struct Ping;

/// How an agent's `define` behaves.
#[derive(Clone, Copy)]
enum Defines {
    Fine,
    DuplicateSubscription,
    Panics,
    /// Refuses with its own reason (`DefineError::user`).
    Refuses,
}

/// The reason a `Refuses` member gives.
#[derive(Debug, PartialEq, Eq)]
struct NotConfigured(u32);

impl std::fmt::Display for NotConfigured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "member {} is not configured", self.0)
    }
}

impl std::error::Error for NotConfigured {}

/// Counts its starts; subscribes to a multi mbox; answers `Ping` with its tag.
struct Member {
    tag: u32,
    defines: Defines,
    started: Arc<AtomicU64>,
    topic: MultiMbox,
    started_tx: Sender<u32>,
}

impl Agent for Member {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|m: &mut Member, _: &mut Ctx<Member>, _: Ping| m.tag)?;
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|_: &mut Member, _: &mut Ctx<Member>, _: Arc<Ping>| {})?;
        match self.defines {
            Defines::Fine => {}
            Defines::DuplicateSubscription => {
                def.on_request(|m: &mut Member, _: &mut Ctx<Member>, _: Ping| m.tag)?;
            }
            Defines::Panics => panic!("{EXPECTED}: define"),
            Defines::Refuses => return Err(DefineError::user(NotConfigured(self.tag))),
        }
        Ok(())
    }
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let _ = self.started_tx.send(self.tag);
        Ok(())
    }
}

struct Fixture {
    h: EnvHandle,
    started: Arc<AtomicU64>,
    started_tx: Sender<u32>,
    started_rx: mpsc::Receiver<u32>,
    topic: MultiMbox,
}

/// An environment without autoshutdown (it must outlive failed and short-lived coops).
fn fixture() -> (Env, Fixture) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let (started_tx, started_rx) = mpsc::channel();
    let f = Fixture {
        topic: h.create_mbox(),
        h,
        started: Arc::new(AtomicU64::new(0)),
        started_tx,
        started_rx,
    };
    (env, f)
}

impl Fixture {
    fn member(&self, tag: u32, defines: Defines) -> Member {
        Member {
            tag,
            defines,
            started: self.started.clone(),
            topic: self.topic.clone(),
            started_tx: self.started_tx.clone(),
        }
    }

    /// Registers a coop of good agents and waits until they have started: since the test
    /// thread pushed any earlier start demand before theirs, every earlier registration has
    /// had its chance to start too.
    fn register_good_and_wait(&self, tags: &[u32]) -> Vec<Mbox> {
        let mut coop = self.h.new_coop();
        let mboxes = tags
            .iter()
            .map(|&t| coop.add(self.member(t, Defines::Fine)))
            .collect();
        self.h.register_coop(coop).expect("register good coop");
        for _ in tags {
            recv(&self.started_rx);
        }
        mboxes
    }
}

fn assert_never_registered(f: &Fixture, mboxes: &[Mbox]) {
    for m in mboxes {
        assert!(
            m.agent_id().is_none(),
            "an agent of a failed coop got an id"
        );
        assert!(!m.is_alive());
        assert!(matches!(m.try_send(Ping), Err(SendError::AgentGone(Ping))));
    }
    let stats = f.h.stats();
    assert_eq!((stats.coops, stats.agents), (0, 0));
    assert_eq!(f.topic.subscriber_count::<Ping>(), 0);
    assert_eq!(f.started.load(Ordering::SeqCst), 0);
}

#[test]
fn a_define_error_registers_nothing() {
    let (env, f) = fixture();
    let mut coop = f.h.new_coop();
    let mboxes = vec![
        coop.add(f.member(1, Defines::Fine)),
        coop.add(f.member(2, Defines::DuplicateSubscription)),
        coop.add(f.member(3, Defines::Fine)),
    ];
    match f.h.register_coop(coop) {
        Err(RegisterError::Define {
            index,
            agent_type,
            source: DefineError::DuplicateSubscription { .. },
        }) => {
            assert_eq!(index, 1);
            assert!(agent_type.ends_with("Member"), "{agent_type}");
        }
        other => panic!("expected a Define error, got {other:?}"),
    }
    assert_never_registered(&f, &mboxes);

    // The positive path: the same agents, well defined, do start and subscribe.
    let good = f.register_good_and_wait(&[4, 5]);
    assert_eq!(
        f.started.load(Ordering::SeqCst),
        2,
        "the failed coop started"
    );
    assert_eq!(f.topic.subscriber_count::<Ping>(), 2);
    assert_eq!(good[1].request::<Ping, u32>(Ping, common::DEADLINE), Ok(5));
    for m in &mboxes {
        assert!(m.try_send(Ping).is_err());
    }
    assert_eq!(f.h.stats().coops, 1);
    assert_eq!(f.h.stats().agents, 2);
    drop(env);
}

#[test]
fn a_panicking_define_registers_nothing() {
    quiet_expected_panics();
    let (env, f) = fixture();
    let mut coop = f.h.new_coop();
    let mboxes = vec![
        coop.add(f.member(1, Defines::Fine)),
        coop.add(f.member(2, Defines::Fine)),
        coop.add(f.member(3, Defines::Panics)),
    ];
    match f.h.register_coop(coop) {
        Err(RegisterError::DefinePanicked { index, message, .. }) => {
            assert_eq!(index, 2);
            assert_eq!(
                message,
                format!("{EXPECTED}: define"),
                "the panic's message is kept"
            );
        }
        other => panic!("expected DefinePanicked, got {other:?}"),
    }
    assert_never_registered(&f, &mboxes);
    f.register_good_and_wait(&[4]);
    assert_eq!(
        f.started.load(Ordering::SeqCst),
        1,
        "the failed coop started"
    );
    drop(env);
}

#[test]
fn an_agents_own_reason_not_to_register_is_returned() {
    let (env, f) = fixture();
    let mut coop = f.h.new_coop();
    let mboxes = vec![
        coop.add(f.member(1, Defines::Fine)),
        coop.add(f.member(2, Defines::Refuses)),
    ];
    match f.h.register_coop(coop) {
        Err(RegisterError::Define {
            index: 1,
            source: DefineError::User(e),
            ..
        }) => {
            assert_eq!(e.downcast_ref::<NotConfigured>(), Some(&NotConfigured(2)));
            assert_eq!(e.to_string(), "member 2 is not configured");
        }
        other => panic!("expected the member's own reason, got {other:?}"),
    }
    assert_never_registered(&f, &mboxes);
    drop(env);
}

#[test]
fn an_mbox_from_add_has_no_id_and_refuses_sends_until_its_coop_is_registered() {
    let (env, f) = fixture();
    let mut coop = f.h.new_coop();
    let m = coop.add(f.member(7, Defines::Fine));
    assert_eq!(m.agent_id(), None, "no id before the commit");
    assert!(matches!(m.try_send(Ping), Err(SendError::AgentGone(Ping))));
    assert_eq!(m.stats().refused, 1);
    f.h.register_coop(coop).expect("registered");
    assert!(m.agent_id().is_some(), "an id once registered");
    assert_eq!(m.request::<Ping, u32>(Ping, common::DEADLINE), Ok(7));
    drop(env);
}

#[test]
fn registering_into_a_stopped_env_fails() {
    let (env, f) = fixture();
    let live = f.register_good_and_wait(&[1]);
    f.h.stop();
    let h = f.h.clone();
    run_env(env);
    assert!(h.is_stopped());
    let mut coop = h.new_coop();
    let late = coop.add(f.member(2, Defines::Fine));
    assert!(matches!(
        h.register_coop(coop),
        Err(RegisterError::EnvStopped)
    ));
    assert!(matches!(
        h.register_agent(f.member(3, Defines::Fine)),
        Err(RegisterError::EnvStopped)
    ));
    assert!(late.try_send(Ping).is_err());
    assert!(
        live[0].try_send(Ping).is_err(),
        "agents of a stopped env are gone"
    );
    assert_eq!(f.started.load(Ordering::SeqCst), 1);
}

#[test]
fn a_coop_of_another_env_is_refused() {
    let (_env, f) = fixture();
    let other = Env::new().expect("other env");
    let mut coop = other.handle().new_coop();
    let m = coop.add(f.member(1, Defines::Fine));
    assert!(matches!(
        f.h.register_coop(coop),
        Err(RegisterError::WrongEnv)
    ));
    assert!(m.try_send(Ping).is_err());
    assert_eq!(f.h.stats().coops, 0);
    assert_eq!(other.handle().stats().coops, 0);
    // The same agent in a coop of the right env registers.
    let mut coop = f.h.new_coop();
    coop.add(f.member(2, Defines::Fine));
    f.h.register_coop(coop).expect("register in its own env");
    assert_eq!(recv(&f.started_rx), 2);
    assert_eq!(f.started.load(Ordering::SeqCst), 1);
}

#[test]
fn a_missing_parent_is_refused() {
    let (_env, f) = fixture();
    let (gone_tx, gone_rx) = mpsc::channel::<CoopDeregistered>();
    let mut parent = f.h.new_coop();
    parent.add(f.member(1, Defines::Fine));
    parent.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let parent_id = f.h.register_coop(parent).expect("register parent");
    recv(&f.started_rx);

    // While the parent lives, a child registers.
    let mut child = f.h.new_coop();
    child.set_parent(parent_id).add(f.member(2, Defines::Fine));
    f.h.register_coop(child).expect("register child");
    recv(&f.started_rx);

    f.h.deregister_coop(parent_id, DeregReason::Normal)
        .expect("deregister");
    recv(&gone_rx);
    let mut orphan = f.h.new_coop();
    let m = orphan.set_parent(parent_id).add(f.member(3, Defines::Fine));
    match f.h.register_coop(orphan) {
        Err(RegisterError::ParentNotFound(id)) => assert_eq!(id, parent_id),
        other => panic!("expected ParentNotFound, got {other:?}"),
    }
    assert!(m.try_send(Ping).is_err());
    assert_eq!(f.h.stats().coops, 0);
    assert_eq!(f.started.load(Ordering::SeqCst), 2);
}

/// Holds the default dispatcher inside a handler, so that a deregistration stays pending.
struct Holder {
    gate: common::Gate,
}
struct Hold;

impl Agent for Holder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|h: &mut Holder, _: &mut Ctx<Holder>, _: Hold| h.gate.pass())?;
        Ok(())
    }
}

#[test]
fn a_deregistering_parent_is_refused() {
    let (_env, f) = fixture();
    let (gate, key) = gate();
    let (gone_tx, gone_rx) = mpsc::channel::<CoopDeregistered>();
    let mut parent = f.h.new_coop();
    let holder = parent.add(Holder { gate });
    parent.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let parent_id = f.h.register_coop(parent).expect("register parent");
    holder.send(Hold);
    key.wait_entered();
    // The holder's finish demand waits behind the held handler: the parent stays deregistering.
    f.h.deregister_coop(parent_id, DeregReason::Normal)
        .expect("deregister");
    let mut child = f.h.new_coop();
    let m = child.set_parent(parent_id).add(f.member(1, Defines::Fine));
    match f.h.register_coop(child) {
        Err(RegisterError::ParentDeregistering(id)) => assert_eq!(id, parent_id),
        other => panic!("expected ParentDeregistering, got {other:?}"),
    }
    key.open();
    assert_eq!(recv(&gone_rx).coop, parent_id);
    assert!(m.try_send(Ping).is_err());
    assert_eq!(f.started.load(Ordering::SeqCst), 0);
    assert_eq!(f.h.stats().coops, 0);
}

/// Holds a clone of its `Arc` (the `Arc`'s count tells how many are alive); with `N` words of
/// ballast: `Held<0>` is small enough to wait for its definition inline, `Held<8>` waits in
/// its cell's allocation.
struct Held<const N: usize> {
    _alive: Arc<()>,
    _ballast: [u64; N],
    fails: bool,
}

impl<const N: usize> Agent for Held<N> {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Held<N>, _: &mut Ctx<Held<N>>, _: Ping| {})?;
        if self.fails {
            return Err(DefineError::user(NotConfigured(0)));
        }
        Ok(())
    }
}

fn held<const N: usize>(alive: &Arc<()>, fails: bool) -> Held<N> {
    Held {
        _alive: Arc::clone(alive),
        _ballast: [7; N],
        fails,
    }
}

#[test]
fn a_failed_registration_drops_every_agent_it_was_given_once() {
    let (env, f) = fixture();
    let alive = Arc::new(());
    // Small and large agents defined before the failing one, the failing one, and small and
    // large ones never defined.
    let mut coop = f.h.new_coop();
    coop.add(held::<0>(&alive, false));
    coop.add(held::<8>(&alive, false));
    coop.add(held::<8>(&alive, true));
    coop.add(held::<0>(&alive, false));
    coop.add(held::<8>(&alive, false));
    assert_eq!(Arc::strong_count(&alive), 6);
    let failed = f.h.register_coop(coop);
    assert!(
        matches!(failed, Err(RegisterError::Define { index: 2, .. })),
        "{failed:?}"
    );
    assert_eq!(
        Arc::strong_count(&alive),
        1,
        "every agent of the failed coop was dropped"
    );

    // The same shapes register and run, and go when their coop does.
    let mut coop = f.h.new_coop();
    let mboxes = [
        coop.add(held::<0>(&alive, false)),
        coop.add(held::<8>(&alive, false)),
    ];
    let (tx, rx) = mpsc::channel();
    coop.on_dereg(move |_: CoopDeregistered| {
        let _ = tx.send(());
    });
    let id = f.h.register_coop(coop).expect("register");
    for m in &mboxes {
        m.send(Ping);
    }
    assert_eq!(Arc::strong_count(&alive), 3);
    f.h.deregister_coop(id, DeregReason::Normal)
        .expect("deregister");
    recv(&rx);
    for m in &mboxes {
        assert_eq!(m.stats().handled, 1);
    }
    assert_eq!(
        Arc::strong_count(&alive),
        1,
        "the agents left with their coop"
    );
    drop(env);
}
