//! `Ctx::spawn` starts one agent from a handler as a child coop of the caller's coop, on the
//! caller's dispatcher, with every guarantee of a coop: distinct generational ids, the
//! child's finish exactly once (when it stops itself its coop ends with it; when the parent's
//! coop is deregistered the children finish first), and a typed error once the parent's coop
//! is leaving. Many children of one parent come and go in time linear in their number (the
//! registry removes each from its parent's set on its own).

mod common;

use agentry::disp::ThreadPoolDispatcher;
use agentry::{
    Agent, AgentId, Ctx, Define, DefineError, DeregReason, Env, Mbox, RegisterError, UserError,
};
use common::{recv, wait_stats};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};

const CHILDREN: usize = 500;

/// Counts its finishes; stops itself on `Stop`.
struct Child {
    started: Sender<(AgentId, String)>,
    finished: Arc<AtomicUsize>,
}

struct Stop;

impl Agent for Child {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Child, ctx: &mut Ctx<Child>, Stop| {
            assert!(ctx.stop_self(), "a spawned child can stop itself");
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let thread = std::thread::current().name().unwrap_or("?").to_owned();
        let _ = self.started.send((ctx.id(), thread));
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

/// Spawns `CHILDREN` children on `Spawn`; at its own finish, checks that every child still
/// alive has finished before it and that spawning now is refused.
struct Parent {
    started: Sender<(AgentId, String)>,
    children: Sender<Vec<Mbox>>,
    finished: Arc<AtomicUsize>,
    at_finish: Sender<(usize, Result<Mbox, RegisterError>)>,
}

struct Spawn;

impl Agent for Parent {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Parent, ctx: &mut Ctx<Parent>, Spawn| {
            let children = (0..CHILDREN)
                .map(|_| {
                    ctx.spawn(Child {
                        started: p.started.clone(),
                        finished: Arc::clone(&p.finished),
                    })
                    .expect("spawned")
                })
                .collect();
            let _ = p.children.send(children);
        })?;
        Ok(())
    }

    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        let late = ctx.spawn(Child {
            started: self.started.clone(),
            finished: Arc::clone(&self.finished),
        });
        let _ = self
            .at_finish
            .send((self.finished.load(Ordering::SeqCst), late));
    }
}

#[test]
fn spawned_children_run_on_the_parents_pool_and_finish_once_before_it() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("pool")
        .threads(2)
        .build(&h)
        .expect("pool");
    let (started_tx, started) = mpsc::channel();
    let (children_tx, children) = mpsc::channel();
    let (at_finish_tx, at_finish) = mpsc::channel();
    let finished = Arc::new(AtomicUsize::new(0));
    let mut coop = h.new_coop();
    let parent = coop.add_with(
        Parent {
            started: started_tx,
            children: children_tx,
            finished: Arc::clone(&finished),
            at_finish: at_finish_tx,
        },
        &pool.binder(),
    );
    let parent_coop = h.register_coop(coop).expect("parent registered");

    parent.send(Spawn);
    let children: Vec<Mbox> = recv(&children);
    let mut ids = std::collections::HashSet::new();
    for _ in 0..CHILDREN {
        let (id, thread) = recv(&started);
        assert!(
            thread.starts_with("agentry-pool-"),
            "a child left the pool: {thread}"
        );
        assert!(ids.insert(id), "two children share the id {id}");
    }
    assert_eq!(h.stats().coops, 1 + CHILDREN, "one coop per spawned child");

    // Half the children stop themselves: each one's coop ends with it.
    let (stopping, staying) = children.split_at(CHILDREN / 2);
    for child in stopping {
        child.send(Stop);
    }
    wait_stats(&h, "the stopped children's coops are gone", |s| {
        s.coops == 1 + staying.len()
    });
    assert_eq!(finished.load(Ordering::SeqCst), stopping.len());

    // The parent's coop goes: the children still alive finish first, each once; spawning is
    // refused from then on.
    h.deregister_coop(parent_coop, DeregReason::Normal)
        .expect("deregistered");
    let (finished_before_parent, late) = recv(&at_finish);
    assert_eq!(
        finished_before_parent, CHILDREN,
        "every child finished before the parent"
    );
    assert!(
        matches!(late, Err(RegisterError::ParentDeregistering(c)) if c == parent_coop),
        "{late:?}"
    );
    wait_stats(&h, "every coop is gone", |s| s.coops == 0 && s.agents == 0);
    assert_eq!(
        finished.load(Ordering::SeqCst),
        CHILDREN,
        "each child finished once"
    );
    for child in staying {
        child.send(Stop); // to finished agents: refused and counted, nothing runs
    }
    assert_eq!(finished.load(Ordering::SeqCst), CHILDREN);
    h.stop();
    common::run_env(env);
}
