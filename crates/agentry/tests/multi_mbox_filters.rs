//! Delivery filters select per subscriber: a subscriber whose filter declines a message does
//! not get it (counted in `EnvStats::filtered_out`), the others do.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, MultiMbox};
use std::sync::Arc;

struct Reading(i32);
struct Seen;

/// Keeps the readings its filter lets through.
struct Watcher {
    topic: MultiMbox,
    filter: Option<fn(&Reading) -> bool>,
    seen: Vec<i32>,
}

impl Agent for Watcher {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let topic = self.topic.clone();
        let handler = |w: &mut Watcher, _: &mut Ctx<Watcher>, r: Arc<Reading>| w.seen.push(r.0);
        match self.filter {
            Some(f) => def.from(&topic).filter(f).on(handler)?,
            None => def.from(&topic).on(handler)?,
        };
        def.on_request(|w: &mut Watcher, _: &mut Ctx<Watcher>, _: Seen| w.seen.clone())?;
        Ok(())
    }
}

fn seen(m: &Mbox) -> Vec<i32> {
    m.request(Seen, common::DEADLINE).expect("seen")
}

#[test]
fn each_subscriber_gets_what_its_filter_accepts() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let watcher = |filter| Watcher {
        topic: topic.clone(),
        filter,
        seen: Vec::new(),
    };
    let positive = h
        .register_agent(watcher(Some(|r: &Reading| r.0 > 0)))
        .expect("positive");
    let even = h
        .register_agent(watcher(Some(|r: &Reading| r.0 % 2 == 0)))
        .expect("even");
    let all = h.register_agent(watcher(None)).expect("all");

    for n in -3..=4 {
        topic.send(Reading(n));
    }
    assert_eq!(seen(&positive), vec![1, 2, 3, 4]);
    assert_eq!(seen(&even), vec![-2, 0, 2, 4]);
    assert_eq!(seen(&all), (-3..=4).collect::<Vec<_>>());
    let stats = h.stats();
    // positive declined 4 of 8, even declined 4 of 8.
    assert_eq!(stats.filtered_out, 8);
    assert_eq!(stats.no_subscribers, 0);
    assert_eq!(stats.unhandled, 0);
}
