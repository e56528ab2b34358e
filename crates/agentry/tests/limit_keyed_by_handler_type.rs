//! A limit is keyed by the handler's parameter type: `M` for messages through the agent's own
//! mbox, `Arc<T>` for messages `T` through a multi mbox. A limit on one does not apply to the
//! other.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox, MultiMbox, limit::Overload};
use common::{Gate, GateKey, gate};
use std::sync::Arc;

struct Job;
struct Hold;
struct Seen;

#[derive(Clone, Copy)]
enum Limit {
    Direct,
    Shared,
}

/// Handles `Job` from its own mbox and `Arc<Job>` from a multi mbox; one of them is limited.
struct Worker {
    topic: MultiMbox,
    limit: Limit,
    gate: Gate,
    direct: u32,
    shared: u32,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        match self.limit {
            Limit::Direct => def.limit::<Job>(1, Overload::Drop)?,
            Limit::Shared => def.limit::<Arc<Job>>(1, Overload::Drop)?,
        };
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, _: Job| w.direct += 1)?;
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|w: &mut Worker, _: &mut Ctx<Worker>, _: Arc<Job>| w.shared += 1)?;
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, _: Hold| w.gate.pass())?;
        def.on_request(|w: &mut Worker, _: &mut Ctx<Worker>, _: Seen| (w.direct, w.shared))?;
        Ok(())
    }
}

fn held(h: &EnvHandle, topic: &MultiMbox, limit: Limit) -> (Mbox, GateKey) {
    let (g, key) = gate();
    let m = h
        .register_agent(Worker {
            topic: topic.clone(),
            limit,
            gate: g,
            direct: 0,
            shared: 0,
        })
        .expect("register");
    m.send(Hold);
    key.wait_entered();
    (m, key)
}

fn play(limit: Limit) -> ((u32, u32), u64) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let (m, key) = held(&h, &topic, limit);
    for _ in 0..3 {
        m.send(Job);
        topic.send(Job);
    }
    key.open();
    let seen = m
        .request::<Seen, (u32, u32)>(Seen, common::DEADLINE)
        .expect("seen");
    (seen, h.stats().limit_dropped)
}

#[test]
fn a_limit_on_arc_t_applies_to_multi_mbox_deliveries_only() {
    assert_eq!(play(Limit::Shared), ((3, 1), 2));
}

#[test]
fn a_limit_on_m_applies_to_direct_sends_only() {
    assert_eq!(play(Limit::Direct), ((1, 3), 2));
}
