//! Multi-mbox subscriptions follow the subscriber: they can be limited to states (a message
//! arriving in another state is unhandled and counted), they start when the coop is
//! registered, and they end when the agent finishes (later sends find no subscriber).

mod common;

use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, Mbox, MultiMbox, State,
};
use common::recv;
use std::sync::Arc;
use std::sync::mpsc;

struct Tick(u32);
struct Toggle;
struct Seen;

/// Handles `Tick` from the topic only in its "on" state.
struct Switchable {
    topic: MultiMbox,
    on: State,
    seen: Vec<u32>,
}

impl Agent for Switchable {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.on = def.state("on")?;
        let topic = self.topic.clone();
        def.from(&topic)
            .in_state(self.on)
            .on(|s: &mut Switchable, _: &mut Ctx<Switchable>, t: Arc<Tick>| s.seen.push(t.0))?;
        def.in_states(&[State::DEFAULT, self.on]).on(
            |s: &mut Switchable, ctx: &mut Ctx<Switchable>, _: Toggle| {
                let to = if ctx.state() == s.on {
                    State::DEFAULT
                } else {
                    s.on
                };
                ctx.change_state(to).expect("known");
            },
        )?;
        def.in_states(&[State::DEFAULT, self.on])
            .on_request(|s: &mut Switchable, _: &mut Ctx<Switchable>, _: Seen| s.seen.clone())?;
        Ok(())
    }
}

fn seen(m: &Mbox) -> Vec<u32> {
    m.request(Seen, common::DEADLINE).expect("seen")
}

#[test]
fn a_per_state_subscription_handles_only_in_its_states() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let m = h
        .register_agent(Switchable {
            topic: topic.clone(),
            on: State::DEFAULT,
            seen: Vec::new(),
        })
        .expect("register");
    topic.send(Tick(1));
    m.send(Toggle);
    topic.send(Tick(2));
    topic.send(Tick(3));
    m.send(Toggle);
    topic.send(Tick(4));
    assert_eq!(seen(&m), vec![2, 3]);
    let stats = h.stats();
    assert_eq!(
        stats.unhandled, 2,
        "ticks 1 and 4 arrived in the default state"
    );
    assert_eq!(
        stats.no_subscribers, 0,
        "still subscribed while not handling"
    );
}

#[test]
fn subscriptions_end_when_the_agent_finishes() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let (gone_tx, gone_rx) = mpsc::channel::<CoopDeregistered>();
    let mut coop = h.new_coop();
    let m = coop.add(Switchable {
        topic: topic.clone(),
        on: State::DEFAULT,
        seen: Vec::new(),
    });
    coop.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    assert_eq!(
        topic.subscriber_count::<Tick>(),
        0,
        "not before registration"
    );
    let id = h.register_coop(coop).expect("register");
    assert_eq!(topic.subscriber_count::<Tick>(), 1);
    m.send(Toggle);
    topic.send(Tick(1));
    assert_eq!(seen(&m), vec![1]);

    h.deregister_coop(id, DeregReason::Normal)
        .expect("deregister");
    recv(&gone_rx);
    assert_eq!(topic.subscriber_count::<Tick>(), 0);
    let before = h.stats();
    topic.send(Tick(2));
    let after = h.stats();
    assert_eq!(after.no_subscribers, before.no_subscribers + 1);
    assert_eq!(after.dead_letters, before.dead_letters);
}
