//! Every agent of a coop is bound and subscribed before any of them starts: an agent's
//! `on_start` reaches every sibling, directly or through a multi mbox, whatever the order in
//! which the agents were added.
//!
//! (A race: before the fix, about one registration in three lost a message; the test repeats
//! the registration so that a regression is caught with near certainty.)

mod common;

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, Mbox, MultiMbox, UserError};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

struct Hi;

/// Added first: greets everybody from `on_start` — through the topic and directly to the
/// sibling added last — then ends the coop.
struct Greeter {
    topic: MultiMbox,
    last_sibling: Arc<OnceLock<Mbox>>,
}

impl Agent for Greeter {
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.topic.send(Hi);
        self.last_sibling
            .get()
            .expect("wired before registration")
            .send(Hi);
        ctx.deregister_coop(DeregReason::Normal);
        Ok(())
    }
}

/// Added after the greeter: counts the greetings it gets.
struct Sibling {
    topic: MultiMbox,
    greetings: Arc<AtomicU32>,
}

impl Agent for Sibling {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|s: &mut Sibling, _: &mut Ctx<Sibling>, _: Arc<Hi>| {
                s.greetings.fetch_add(1, Ordering::SeqCst);
            })?;
        def.on(|s: &mut Sibling, _: &mut Ctx<Sibling>, _: Hi| {
            s.greetings.fetch_add(1, Ordering::SeqCst);
        })?;
        Ok(())
    }
}

#[test]
fn on_start_reaches_siblings_added_after_it() {
    const SIBLINGS: u32 = 20;
    for round in 0..50 {
        let env = Env::new().expect("env");
        let topic = env.handle().create_mbox();
        let greetings = Arc::new(AtomicU32::new(0));
        let last_sibling = Arc::new(OnceLock::new());
        let mut coop = env.handle().new_coop();
        coop.add(Greeter {
            topic: topic.clone(),
            last_sibling: Arc::clone(&last_sibling),
        });
        let mut last = None;
        for _ in 0..SIBLINGS {
            last = Some(coop.add(Sibling {
                topic: topic.clone(),
                greetings: Arc::clone(&greetings),
            }));
        }
        last_sibling
            .set(last.expect("siblings added"))
            .expect("set once");
        env.handle().register_coop(coop).expect("registered");
        common::run_env(env);
        // Every sibling got the topic's greeting; the last one also the direct one.
        assert_eq!(
            greetings.load(Ordering::SeqCst),
            SIBLINGS + 1,
            "round {round}"
        );
    }
}
