//! Limits that redirect (or transform) to each other cannot loop forever: a chain longer than
//! `MAX_REDIRECT_DEPTH` (32) is cut, the message is dropped and counted in
//! `EnvStats::redirect_loops` (and in the `limit_dropped` of the agent where the chain was
//! cut); each hop before the cut counts in `limit_redirected` / `limit_transformed`.

mod common;

use agentry::limit::{MAX_REDIRECT_DEPTH, Transformed};
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, limit::Overload};
use common::{Gate, gate};
use std::sync::{Arc, OnceLock};

struct Work(u32);
struct Hold;
struct Seen;

#[derive(Clone, Copy)]
enum Via {
    Redirect,
    Transform,
}

/// Limited to one queued `Work`; overflow goes to `peer`.
struct Bouncer {
    via: Via,
    peer: Arc<OnceLock<Mbox>>,
    gate: Option<Gate>,
    seen: Vec<u32>,
}

impl Agent for Bouncer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let peer = self
            .peer
            .get()
            .expect("peer set before registration")
            .clone();
        let reaction = match self.via {
            Via::Redirect => Overload::Redirect(peer),
            Via::Transform => Overload::transform(move |w: Work| Transformed::to(&peer, w)),
        };
        def.limit::<Work>(1, reaction)?;
        def.on(|b: &mut Bouncer, _: &mut Ctx<Bouncer>, Work(n): Work| b.seen.push(n))?;
        def.on(|b: &mut Bouncer, _: &mut Ctx<Bouncer>, _: Hold| {
            if let Some(g) = &b.gate {
                g.pass();
            }
        })?;
        def.on_request(|b: &mut Bouncer, _: &mut Ctx<Bouncer>, _: Seen| b.seen.clone())?;
        Ok(())
    }
}

/// Plays a loop between two bouncers; returns the stats and what each handled.
fn play(via_a: Via, via_b: Via) -> (agentry::EnvStats, Mbox, Mbox) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let (g, key) = gate();
    let (peer_of_a, peer_of_b) = (Arc::new(OnceLock::new()), Arc::new(OnceLock::new()));
    let mut coop = h.new_coop();
    // Both share the default dispatcher: holding `a` holds `b` too.
    let a = coop.add(Bouncer {
        via: via_a,
        peer: peer_of_a.clone(),
        gate: Some(g),
        seen: Vec::new(),
    });
    let b = coop.add(Bouncer {
        via: via_b,
        peer: peer_of_b.clone(),
        gate: None,
        seen: Vec::new(),
    });
    peer_of_a.set(b.clone()).expect("set");
    peer_of_b.set(a.clone()).expect("set");
    h.register_coop(coop).expect("register");

    a.send(Hold);
    key.wait_entered();
    a.send(Work(1)); // fills a
    b.send(Work(2)); // fills b
    // a -> b -> a -> ... until the chain is cut; `try_send` still succeeds: the message left
    // `a` through its reaction.
    assert!(a.try_send(Work(3)).is_ok());
    b.send(Work(4));
    key.open();
    let seen = |m: &Mbox| {
        m.request::<Seen, Vec<u32>>(Seen, common::DEADLINE)
            .expect("seen")
    };
    assert_eq!(seen(&a), vec![1]);
    assert_eq!(seen(&b), vec![2]);
    (h.stats(), a, b)
}

#[test]
fn a_redirect_loop_is_cut_and_counted() {
    assert_eq!(MAX_REDIRECT_DEPTH, 32);
    let (stats, a, b) = play(Via::Redirect, Via::Redirect);
    assert_eq!(stats.redirect_loops, 2);
    assert_eq!(stats.limit_redirected, 2 * u64::from(MAX_REDIRECT_DEPTH));
    assert_eq!(stats.limit_transformed, 0);
    assert_eq!(a.stats().limit_dropped + b.stats().limit_dropped, 2);
    assert_eq!(stats.limit_dropped, 0, "a cut loop is not a Drop reaction");
}

#[test]
fn a_transform_loop_is_cut_and_counted() {
    let (stats, a, b) = play(Via::Transform, Via::Transform);
    assert_eq!(stats.redirect_loops, 2);
    assert_eq!(stats.limit_transformed, 2 * u64::from(MAX_REDIRECT_DEPTH));
    assert_eq!(a.stats().limit_dropped + b.stats().limit_dropped, 2);
}

#[test]
fn a_mixed_loop_is_cut_and_counted() {
    let (stats, ..) = play(Via::Redirect, Via::Transform);
    assert_eq!(stats.redirect_loops, 2);
    assert_eq!(
        stats.limit_redirected + stats.limit_transformed,
        2 * u64::from(MAX_REDIRECT_DEPTH)
    );
    assert_eq!(stats.limit_redirected, stats.limit_transformed);
}
