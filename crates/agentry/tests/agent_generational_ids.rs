//! Generational ids: an agent's slot is reused after it is gone, but a stale mbox or id never
//! reaches the agent that reuses the slot; sends through it are refused and counted — on every
//! dispatcher.

mod common;

use agentry::disp::Binder;
use agentry::{
    Agent, AgentId, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    RequestError, SendError,
};
use common::recv;
use std::sync::mpsc;

struct Tagged(u32);
struct Received;

#[derive(Default)]
struct Recorder {
    got: Vec<u32>,
}

impl Agent for Recorder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|r: &mut Recorder, _: &mut Ctx<Recorder>, Tagged(n): Tagged| r.got.push(n))?;
        def.on_request(|r: &mut Recorder, _: &mut Ctx<Recorder>, _: Received| r.got.clone())?;
        Ok(())
    }
}

/// Registers a recorder in its own coop; returns its mbox and a receiver of its deregistration.
fn register(h: &EnvHandle) -> (Mbox, agentry::CoopId, mpsc::Receiver<CoopDeregistered>) {
    register_with(h, &h.default_binder())
}

fn register_with(
    h: &EnvHandle,
    binder: &Binder,
) -> (Mbox, agentry::CoopId, mpsc::Receiver<CoopDeregistered>) {
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    let mbox = coop.add_with(Recorder::default(), binder);
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    let id = h.register_coop(coop).expect("register");
    (mbox, id, rx)
}

fn received(mbox: &Mbox) -> Vec<u32> {
    mbox.request(Received, common::DEADLINE).expect("request")
}

#[test]
fn stale_mbox_never_reaches_the_agent_reusing_the_slot() {
    // No autoshutdown: the environment must outlive its only coop.
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let (old, old_coop, old_gone) = register(&h);
    let old_id: AgentId = old.agent_id().expect("registered agents have an id");
    old.send(Tagged(1));
    assert_eq!(received(&old), vec![1]);

    h.deregister_coop(old_coop, DeregReason::Normal)
        .expect("deregister");
    recv(&old_gone);
    assert!(!old.is_alive());
    assert!(h.mbox_of(old_id).is_none(), "a gone agent's id resolves");

    // The slot is free again: the next agent takes it with a new generation.
    let (new, _new_coop, _new_gone) = register(&h);
    let new_id = new.agent_id().expect("id");
    assert_eq!(new_id.slot(), old_id.slot(), "the slot was not reused");
    assert_ne!(new_id.generation(), old_id.generation());
    assert_ne!(new_id, old_id);

    let before = h.stats().dead_letters;
    match old.try_send(Tagged(2)) {
        Err(SendError::AgentGone(Tagged(n))) => assert_eq!(n, 2, "message given back"),
        other => panic!("expected AgentGone, got {other:?}"),
    }
    old.send(Tagged(3));
    assert_eq!(
        old.request::<Received, Vec<u32>>(Received, common::DEADLINE)
            .expect_err("a gone agent answered"),
        RequestError::AgentGone
    );
    new.send(Tagged(4));

    assert_eq!(
        received(&new),
        vec![4],
        "a stale send reached the new agent"
    );
    assert_eq!(h.stats().dead_letters, before + 3);
    assert_eq!(old.stats().refused, 3);
    assert_eq!(new.stats().refused, 0);
    assert!(h.mbox_of(old_id).is_none());
    assert_eq!(h.mbox_of(new_id), Some(new.clone()));
    assert!(new.is_alive());
}

#[test]
fn a_reused_slot_never_repeats_a_generation() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let mut ids: Vec<AgentId> = Vec::new();
    let mut stale: Vec<Mbox> = Vec::new();
    for round in 0..20u32 {
        let (mbox, coop, gone) = register(&h);
        mbox.send(Tagged(round));
        assert_eq!(received(&mbox), vec![round]);
        ids.push(mbox.agent_id().expect("id"));
        h.deregister_coop(coop, DeregReason::Normal)
            .expect("deregister");
        recv(&gone);
        stale.push(mbox);
    }
    let slot = ids[0].slot();
    for pair in ids.windows(2) {
        assert_eq!(pair[1].slot(), slot, "one free slot, reused every round");
        assert!(pair[1].generation() > pair[0].generation());
    }
    for m in &stale {
        assert!(m.try_send(Tagged(99)).is_err());
    }
    assert_eq!(h.stats().dead_letters, stale.len() as u64);
    assert!(ids.iter().all(|id| h.mbox_of(*id).is_none()));
}

#[test]
fn stale_mboxes_are_refused_and_counted_on_every_dispatcher() {
    let make_env = || Env::builder().autoshutdown(false).build().expect("env");
    common::on_every_dispatcher(make_env, |env, disp| {
        let (h, name) = (env.handle(), disp.name);
        let (old, old_coop, old_gone) = register_with(h, &disp.binder(0));
        let old_id = old.agent_id().expect("id");
        old.send(Tagged(1));
        assert_eq!(received(&old), vec![1], "{name}");
        h.deregister_coop(old_coop, DeregReason::Normal)
            .expect("deregister");
        recv(&old_gone);

        let (new, _, _) = register_with(h, &disp.binder(0));
        let new_id = new.agent_id().expect("id");
        assert_eq!(
            new_id.slot(),
            old_id.slot(),
            "the slot was not reused on {name}"
        );
        assert_ne!(new_id.generation(), old_id.generation(), "{name}");
        assert!(
            matches!(
                old.try_send(Tagged(2)),
                Err(SendError::AgentGone(Tagged(2)))
            ),
            "{name}"
        );
        old.send(Tagged(3));
        assert_eq!(
            old.request::<Received, Vec<u32>>(Received, common::DEADLINE),
            Err(RequestError::AgentGone),
            "{name}"
        );
        new.send(Tagged(4));
        assert_eq!(received(&new), vec![4], "a stale send arrived on {name}");
        assert_eq!(h.stats().dead_letters, 3, "{name}");
        assert_eq!(old.stats().refused, 3, "{name}");
        assert!(h.mbox_of(old_id).is_none(), "{name}");
        assert_eq!(h.mbox_of(new_id), Some(new.clone()), "{name}");
    });
}
