//! Spawning does what a user means: a child coop registered from a handler with
//! `Ctx::child_coop` runs on its parent agent's dispatcher unless given another; the
//! environment's default dispatcher can be chosen (`EnvBuilder::default_dispatcher`) and is
//! started only when an agent needs it.

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::disp::ThreadPoolDispatcher;
use agentry::disp::{ActiveObjDispatcher, Binder, DefaultDispatcher};
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, UserError};
use common::recv;
use std::sync::mpsc::{self, Sender};

/// The name of the thread an agent ran on.
type Where = Sender<String>;

fn here() -> String {
    std::thread::current().name().unwrap_or("?").to_owned()
}

/// Reports where it starts.
struct Child(Where);

impl Agent for Child {
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        let _ = self.0.send(here());
        Ok(())
    }
}

/// Reports where it starts, then starts a child coop with one `Child` — on `elsewhere` if
/// given, else where `child_coop` puts it.
struct Parent {
    report: Where,
    elsewhere: Option<Binder>,
}

struct Spawn;

impl Agent for Parent {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Parent, ctx: &mut Ctx<Parent>, _: Spawn| {
            let mut coop = ctx.child_coop();
            let child = Child(p.report.clone());
            match &p.elsewhere {
                Some(binder) => coop.add_with(child, binder),
                None => coop.add(child),
            };
            ctx.register_coop(coop).expect("child registered");
        })?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        let _ = self.report.send(here());
        Ok(())
    }
}

/// Registers a parent bound by `binder`, lets it spawn a child; returns where each started.
fn parent_and_child(h: &EnvHandle, binder: &Binder, elsewhere: Option<Binder>) -> (String, String) {
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    let parent = coop.add_with(
        Parent {
            report: tx,
            elsewhere,
        },
        binder,
    );
    h.register_coop(coop).expect("parent registered");
    let parent_thread = recv(&rx);
    parent.send(Spawn);
    (parent_thread, recv(&rx))
}

fn env() -> Env {
    Env::builder().autoshutdown(false).build().expect("env")
}

#[test]
fn a_child_of_a_pool_agent_runs_on_the_pool() {
    let env = env();
    let h = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("pool")
        .threads(2)
        .build(&h)
        .expect("pool");
    let (parent, child) = parent_and_child(&h, &pool.binder(), None);
    assert!(parent.starts_with("agentry-pool-"), "{parent}");
    assert!(
        child.starts_with("agentry-pool-"),
        "the child left the pool: {child}"
    );
}

#[test]
fn a_child_of_a_one_thread_agent_runs_on_its_thread() {
    let env = env();
    let h = env.handle().clone();
    let disp = OneThreadDispatcher::new(&h, "mine").expect("dispatcher");
    let (parent, child) = parent_and_child(&h, &disp.binder(), None);
    assert_eq!(
        (parent.as_str(), child.as_str()),
        ("agentry-mine", "agentry-mine")
    );
    // The default dispatcher was never needed: it was never started.
    let kinds: Vec<String> = h.dispatcher_stats().into_iter().map(|d| d.name).collect();
    assert_eq!(kinds, ["mine"], "only the dispatcher in use runs");
}

#[test]
fn a_child_of_an_active_object_gets_a_thread_of_its_own() {
    let env = env();
    let h = env.handle().clone();
    let ao = ActiveObjDispatcher::new(&h, "ao").expect("dispatcher");
    let (parent, child) = parent_and_child(&h, &ao.binder(), None);
    assert!(parent.starts_with("agentry-ao"), "{parent}");
    assert!(child.starts_with("agentry-ao"), "{child}");
    assert_ne!(
        parent, child,
        "an active object's child is an active object too"
    );
    assert_eq!(ao.threads_started(), 2);
}

#[test]
fn a_child_given_another_binder_runs_there() {
    let env = env();
    let h = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("pool")
        .threads(2)
        .build(&h)
        .expect("pool");
    let other = OneThreadDispatcher::new(&h, "other").expect("dispatcher");
    let (_, child) = parent_and_child(&h, &pool.binder(), Some(other.binder()));
    assert_eq!(child, "agentry-other");
}

#[test]
fn the_default_dispatcher_can_be_a_pool_and_starts_on_first_use() {
    let env = Env::builder()
        .autoshutdown(false)
        .default_dispatcher(DefaultDispatcher::ThreadPool { threads: 2 })
        .build()
        .expect("env");
    let h = env.handle().clone();
    assert!(h.dispatcher_stats().is_empty(), "no agent yet, no thread");
    let (parent, child) = parent_and_child(&h, &h.default_binder(), None);
    assert!(parent.starts_with("agentry-default-"), "{parent}");
    assert!(child.starts_with("agentry-default-"), "{child}");
    let stats = h.dispatcher_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!((stats[0].kind, stats[0].threads), ("thread_pool", 2));
}

#[test]
fn the_default_binder_of_another_environment_is_refused() {
    let env = env();
    let other = Env::new().expect("other env");
    let mut coop = env.handle().new_coop();
    coop.add_with(Child(mpsc::channel().0), &other.handle().default_binder());
    assert!(matches!(
        env.handle().register_coop(coop),
        Err(agentry::RegisterError::Bind {
            source: agentry::BindError::OtherEnv(_),
            ..
        })
    ));
}

/// Reports its place in its coop and where it starts.
struct Numbered(usize, Sender<(usize, String)>);

impl Agent for Numbered {
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        let _ = self.1.send((self.0, here()));
        Ok(())
    }
}

#[test]
fn each_agent_of_a_coop_runs_on_its_own_binder_or_else_the_coops() {
    let env = env();
    let h = env.handle().clone();
    let coops = OneThreadDispatcher::new(&h, "coops").expect("dispatcher");
    let first = OneThreadDispatcher::new(&h, "first").expect("dispatcher");
    let second = OneThreadDispatcher::new(&h, "second").expect("dispatcher");
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    coop.set_binder(&coops.binder());
    // Own binders between, before and after agents that have none.
    coop.add_with(Numbered(0, tx.clone()), &first.binder());
    coop.add(Numbered(1, tx.clone()));
    coop.add(Numbered(2, tx.clone()));
    coop.add_with(Numbered(3, tx.clone()), &second.binder());
    coop.add(Numbered(4, tx.clone()));
    coop.add_with(Numbered(5, tx.clone()), &first.binder());
    h.register_coop(coop).expect("registered");
    let mut started: Vec<(usize, String)> = (0..6).map(|_| recv(&rx)).collect();
    started.sort();
    let threads: Vec<&str> = started.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        threads,
        [
            "agentry-first",
            "agentry-coops",
            "agentry-coops",
            "agentry-second",
            "agentry-coops",
            "agentry-first"
        ]
    );
}
