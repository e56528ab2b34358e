//! Signals (zero-sized message types) are ordinary messages: delivered through direct and
//! multi mboxes, counted, refused and limited like any other.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, MultiMbox, SendError, limit::Overload};
use std::sync::Arc;

#[derive(Debug, PartialEq)]
struct Tick;
struct Tock;
struct Count;

struct Clock {
    topic: MultiMbox,
    ticks: u32,
    tocks: u32,
}

impl Agent for Clock {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Clock, _: &mut Ctx<Clock>, _: Tick| c.ticks += 1)?;
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|c: &mut Clock, _: &mut Ctx<Clock>, _: Arc<Tock>| c.tocks += 1)?;
        def.limit::<Arc<Tock>>(1_000, Overload::Drop)?;
        def.on_request(|c: &mut Clock, _: &mut Ctx<Clock>, _: Count| (c.ticks, c.tocks))?;
        Ok(())
    }
}

#[test]
fn zero_sized_messages_are_delivered() {
    assert_eq!(std::mem::size_of::<Tick>(), 0);
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let mut coop = h.new_coop();
    let clock = coop.add(Clock {
        topic: topic.clone(),
        ticks: 0,
        tocks: 0,
    });
    let second = coop.add(Clock {
        topic: topic.clone(),
        ticks: 0,
        tocks: 0,
    });
    let (gone_tx, gone_rx) = std::sync::mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let id = h.register_coop(coop).expect("register");
    for _ in 0..100 {
        clock.send(Tick);
        topic.send(Tock);
    }
    assert_eq!(clock.try_send(Tick), Ok(()));
    let count = |m: &agentry::Mbox| m.request::<Count, (u32, u32)>(Count, common::DEADLINE);
    assert_eq!(count(&clock), Ok((101, 100)));
    assert_eq!(count(&second), Ok((0, 100)));
    // Unsubscribed signals are counted.
    topic.send(Tick);
    assert_eq!(h.stats().no_subscribers, 1);
    second.send(42u8);
    h.deregister_coop(id, agentry::DeregReason::Normal)
        .expect("deregister");
    common::recv(&gone_rx);
    assert_eq!(clock.try_send(Tick), Err(SendError::AgentGone(Tick)));
    let stats = h.stats();
    assert_eq!(stats.dead_letters, 1);
    assert_eq!(stats.unhandled, 1);
}
