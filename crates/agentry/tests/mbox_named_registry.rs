//! Named mboxes: `named_mbox` gets or creates the multi mbox of a name (the same mbox every
//! time); `publish` / `lookup` / `unpublish` bind direct mboxes to names. Misuse gets a typed
//! `NameError`: a name taken by another mbox (`Taken`), a name bound to the other kind of mbox
//! (`KindMismatch`), an empty name (`Empty`).

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, NameError};
use std::sync::Arc;

struct Ping;
struct Echo;
impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Echo, _: &mut Ctx<Echo>, _: Ping| "pong")?;
        Ok(())
    }
}

struct Listener {
    topic: agentry::MultiMbox,
    got: u32,
}
impl Agent for Listener {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|l: &mut Listener, _: &mut Ctx<Listener>, _: Arc<Ping>| l.got += 1)?;
        def.on_request(|l: &mut Listener, _: &mut Ctx<Listener>, n: u32| l.got + n)?;
        Ok(())
    }
}

#[test]
fn named_mbox_returns_the_same_mbox_for_a_name() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let a = h.named_mbox("news").expect("news");
    let b = h.named_mbox("news").expect("news again");
    let other = h.named_mbox("weather").expect("weather");
    assert_eq!(a, b);
    assert_eq!(a.id(), b.id());
    assert_ne!(a, other);
    assert_eq!(a.name(), Some("news"));
    assert_eq!(h.create_mbox().name(), None);

    // A subscriber through one handle gets what is sent through the other.
    let l = h
        .register_agent(Listener {
            topic: a.clone(),
            got: 0,
        })
        .expect("listener");
    b.send(Ping);
    h.named_mbox("news").expect("news").send(Ping);
    assert_eq!(l.request::<u32, u32>(0, common::DEADLINE), Ok(2));
}

#[test]
fn publish_lookup_unpublish() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let echo = h.register_agent(Echo).expect("echo");
    let other = h.register_agent(Echo).expect("other");
    assert_eq!(h.lookup("echo"), None);
    h.publish("echo", &echo).expect("publish");
    h.publish("echo", &echo)
        .expect("publishing the same mbox again is fine");
    let found = h.lookup("echo").expect("published");
    assert_eq!(found, echo);
    assert_eq!(
        found.request::<Ping, &str>(Ping, common::DEADLINE),
        Ok("pong")
    );

    assert_eq!(
        h.publish("echo", &other),
        Err(NameError::Taken("echo".to_owned()))
    );
    assert_eq!(
        h.lookup("echo"),
        Some(echo.clone()),
        "the first binding stays"
    );

    assert!(h.unpublish("echo"));
    assert!(!h.unpublish("echo"));
    assert_eq!(h.lookup("echo"), None);
    h.publish("echo", &other).expect("the name is free again");
    assert_eq!(h.lookup("echo"), Some(other));
}

#[test]
fn a_name_keeps_its_kind() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let echo = h.register_agent(Echo).expect("echo");
    h.publish("direct", &echo).expect("publish");
    assert_eq!(
        h.named_mbox("direct"),
        Err(NameError::KindMismatch("direct".to_owned()))
    );
    h.named_mbox("multi").expect("named multi");
    assert_eq!(
        h.publish("multi", &echo),
        Err(NameError::KindMismatch("multi".to_owned()))
    );
    assert_eq!(h.lookup("multi"), None, "a multi mbox is not a direct one");
    // Unpublishing frees a name of either kind.
    assert!(h.unpublish("multi"));
    h.publish("multi", &echo).expect("free now");
    assert!(h.unpublish("direct"));
    h.named_mbox("direct").expect("free now");
}

#[test]
fn names_must_not_be_empty() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let echo = h.register_agent(Echo).expect("echo");
    assert_eq!(h.named_mbox("").map(|_| ()), Err(NameError::Empty));
    assert_eq!(h.publish("", &echo), Err(NameError::Empty));
    assert_eq!(h.lookup(""), None);
    assert!(!h.unpublish(""));
}
