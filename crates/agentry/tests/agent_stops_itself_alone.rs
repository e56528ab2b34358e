//! An agent can stop alone (`Ctx::stop_self`): what was queued before is handled, its
//! `on_finish` runs once, its watchers are told, and the rest of its coop goes on; the coop
//! leaves (children first, reason `Normal`) when its last agent has.

mod common;

use agentry::supervision::{Strategy, Supervision};
use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, Mbox, SendError,
    watch::Terminated,
};
use common::{Log, recv};
use std::sync::mpsc::{self, Receiver};

struct Work(u32);
struct StopNow;
struct Ping;
struct Watch(Mbox);

/// Logs the work it handles and its finish; stops itself on `StopNow`; reports `stop_self`'s
/// answer; forwards `Terminated` to the log.
struct Worker {
    name: &'static str,
    log: Log,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, Work(n): Work| {
            w.log.push(format!("{} work {n}", w.name));
        })?
        .on(|w: &mut Worker, ctx: &mut Ctx<Worker>, _: StopNow| {
            let stopped = ctx.stop_self();
            w.log.push(format!("{} stop_self {stopped}", w.name));
        })?
        .on(
            |w: &mut Worker, ctx: &mut Ctx<Worker>, Watch(target): Watch| {
                ctx.watch(&target).expect("watch");
                w.log.push(format!("{} watching", w.name));
            },
        )?
        .on(|w: &mut Worker, _: &mut Ctx<Worker>, t: Terminated| {
            w.log.push(format!("{} saw {:?}", w.name, t.reason));
        })?;
        def.on_request(|_: &mut Worker, _: &mut Ctx<Worker>, _: Ping| ())?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log.push(format!("{} finish", self.name));
    }
}

fn listen(coop: &mut agentry::Coop) -> Receiver<CoopDeregistered> {
    let (tx, rx) = mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    rx
}

#[test]
fn an_agent_stops_alone_and_its_coop_leaves_with_its_last_agent() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let log = Log::default();
    let mut coop = h.new_coop();
    let a = coop.add(Worker {
        name: "a",
        log: log.clone(),
    });
    let b = coop.add(Worker {
        name: "b",
        log: log.clone(),
    });
    let gone = listen(&mut coop);
    let id = h.register_coop(coop).expect("registered");
    b.send(Watch(a.clone()));
    a.send(Work(1));
    a.send(StopNow);
    a.send(Work(2)); // queued before the stop took effect? Handled only if it was.
    common::wait_until("a is gone and b saw it", || {
        log.snapshot().contains(&"b saw Normal".to_owned())
    });
    let events = log.snapshot();
    assert!(
        events.contains(&"a stop_self true".to_owned()),
        "{events:?}"
    );
    assert_eq!(
        events.iter().filter(|e| *e == "a finish").count(),
        1,
        "{events:?}"
    );
    // Work queued behind the stop, before the agent stopped accepting, is still handled.
    let finish = events
        .iter()
        .position(|e| e == "a finish")
        .expect("finished");
    assert!(events.iter().position(|e| e == "a work 1").expect("work 1") < finish);
    assert!(matches!(a.try_send(Work(3)), Err(SendError::AgentGone(_))));
    assert_eq!(h.stats().coops, 1, "the coop goes on with b");
    assert_eq!(b.request::<Ping, ()>(Ping, common::DEADLINE), Ok(()));
    assert_eq!(h.stats().agents, 1);
    // Its last agent stops too: the coop leaves, reason Normal.
    b.send(StopNow);
    let event = recv(&gone);
    assert_eq!((event.coop, event.reason), (id, DeregReason::Normal));
    assert_eq!(h.stats().coops, 0);
    assert_eq!(
        log.snapshot().iter().filter(|e| *e == "b finish").count(),
        1
    );
}

#[test]
fn the_last_agent_stopping_takes_its_child_coops_first() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let log = Log::default();
    let mut parent = h.new_coop();
    let p = parent.add(Worker {
        name: "p",
        log: log.clone(),
    });
    let parent_gone = listen(&mut parent);
    let parent_id = h.register_coop(parent).expect("parent");
    let mut child = h.new_coop();
    child.set_parent(parent_id);
    child.add(Worker {
        name: "c",
        log: log.clone(),
    });
    let child_gone = listen(&mut child);
    h.register_coop(child).expect("child");
    p.send(StopNow);
    assert_eq!(recv(&child_gone).reason, DeregReason::ParentDeregistered);
    assert_eq!(recv(&parent_gone).reason, DeregReason::Normal);
    let events = log.snapshot();
    let c = events
        .iter()
        .position(|e| e == "c finish")
        .expect("child finished");
    let p = events
        .iter()
        .position(|e| e == "p finish")
        .expect("parent finished");
    assert!(
        p < c,
        "the parent's agent left first (it stopped itself): {events:?}"
    );
    assert_eq!(h.stats().coops, 0);
}

#[test]
fn a_supervised_agent_does_not_stop_alone() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let log = Log::default();
    let mut coop = h.new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne));
    let w = {
        let log = log.clone();
        coop.add_supervised(move || Worker {
            name: "s",
            log: log.clone(),
        })
    };
    h.register_coop(coop).expect("registered");
    w.send(StopNow);
    assert_eq!(w.request::<Ping, ()>(Ping, common::DEADLINE), Ok(()));
    assert!(log.snapshot().contains(&"s stop_self false".to_owned()));
    assert!(w.is_alive());
}
