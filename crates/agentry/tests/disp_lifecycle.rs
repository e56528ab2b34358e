//! Dispatcher lifecycles: an `active_obj` dispatcher starts a thread per agent that ends with
//! the agent; an `active_group` group's thread is shared by its agents, ends with the last of
//! them, and a later binding to the group starts a new one; a pool counts the demands it ran;
//! a failed registration leaves nothing bound to thread-starting binders.
//!
//! Whether a thread is still running is read from `/proc/self/task` (Linux); each test names
//! its dispatchers apart from the other tests of this binary.

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::disp::{ActiveGroupDispatcher, ActiveObjDispatcher, DispatcherStats};
use agentry::disp::{Fifo, ThreadPoolDispatcher};
use agentry::{
    Agent, CoopDeregistered, CoopId, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    RegisterError,
};
use common::{recv, wait_until};
use std::sync::mpsc::{self, Receiver};
use std::thread::ThreadId;

struct Work;
struct WhichThread;

/// Counts its work; tells which thread runs it.
#[derive(Default)]
struct Worker {
    done: u32,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, _: Work| w.done += 1)?;
        def.on_request(|_: &mut Worker, _: &mut Ctx<Worker>, _: WhichThread| {
            let me = std::thread::current();
            (me.id(), me.name().unwrap_or_default().to_owned())
        })?;
        def.on_request(|w: &mut Worker, _: &mut Ctx<Worker>, n: u32| w.done + n)?;
        Ok(())
    }
}

/// Subscribes one message type twice: its `define` fails.
struct Broken;

impl Agent for Broken {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Broken, _: &mut Ctx<Broken>, _: Work| {})?;
        def.on(|_: &mut Broken, _: &mut Ctx<Broken>, _: Work| {})?;
        Ok(())
    }
}

fn thread_of(agent: &Mbox) -> (ThreadId, String) {
    agent
        .request(WhichThread, common::DEADLINE)
        .expect("the agent answers")
}

/// Threads of this process whose name starts with `prefix`, or `None` without `/proc`.
fn live_threads(prefix: &str) -> Option<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    Some(
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.starts_with(prefix))
            .count(),
    )
}

fn wait_threads(prefix: &str, n: usize) {
    wait_until(&format!("{n} threads named {prefix}*"), || {
        live_threads(prefix).is_none_or(|live| live == n)
    });
}

/// The stats of the live dispatchers of kind `kind`.
fn stats_of(h: &EnvHandle, kind: &str) -> Vec<DispatcherStats> {
    let mut stats: Vec<_> = h
        .dispatcher_stats()
        .into_iter()
        .filter(|s| s.kind == kind)
        .collect();
    stats.sort_by(|a, b| a.name.cmp(&b.name));
    stats
}

fn register_alone(h: &EnvHandle, coop: agentry::Coop) -> (CoopId, Receiver<CoopDeregistered>) {
    let mut coop = coop;
    let (tx, rx) = mpsc::channel();
    coop.on_dereg(move |e| {
        let _ = tx.send(e);
    });
    (h.register_coop(coop).expect("register"), rx)
}

fn deregister(h: &EnvHandle, (id, gone): &(CoopId, Receiver<CoopDeregistered>)) {
    h.deregister_coop(*id, DeregReason::Normal)
        .expect("deregister");
    recv(gone);
}

#[test]
fn an_active_obj_agent_has_a_thread_that_ends_with_it() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let ao = ActiveObjDispatcher::new(h, "ao").expect("dispatcher");
    let mut coop = h.new_coop();
    let agents: Vec<_> = (0..3)
        .map(|_| coop.add_with(Worker::default(), &ao.binder()))
        .collect();
    let coop = register_alone(h, coop);
    assert_eq!(ao.threads_started(), 3);
    let mut threads: Vec<_> = agents.iter().map(thread_of).collect();
    threads.sort_by(|a, b| a.1.cmp(&b.1));
    assert!(
        threads
            .iter()
            .all(|(_, name)| name.starts_with("agentry-ao-"))
    );
    threads.dedup_by_key(|(id, _)| *id);
    assert_eq!(threads.len(), 3, "one thread per agent");
    let stats = stats_of(h, "active_obj");
    assert_eq!(stats.len(), 3, "{stats:?}");
    assert!(
        stats.iter().all(|s| s.threads == 1 && s.agents == 1),
        "{stats:?}"
    );
    wait_threads("agentry-ao-", 3);

    deregister(h, &coop);
    let stats = stats_of(h, "active_obj");
    assert!(
        stats.is_empty(),
        "a dispatcher outlived its agent: {stats:?}"
    );
    wait_threads("agentry-ao-", 0);

    // A later agent gets a new thread.
    let mut coop = h.new_coop();
    let later = coop.add_with(Worker::default(), &ao.binder());
    h.register_coop(coop).expect("register");
    assert_eq!(ao.threads_started(), 4);
    let (id, name) = thread_of(&later);
    assert!(threads.iter().all(|(old, _)| *old != id));
    assert_eq!(name, "agentry-ao-3");
    wait_threads("agentry-ao-", 1);
}

#[test]
fn an_active_group_thread_is_shared_and_ends_with_the_groups_last_agent() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let groups = ActiveGroupDispatcher::new(h, "ag").expect("dispatcher");
    let alone = |group: &str| {
        let mut coop = h.new_coop();
        let mbox = coop.add_with(Worker::default(), &groups.binder(group));
        (mbox, register_alone(h, coop))
    };
    let (a1, a1_coop) = alone("a");
    let (a2, a2_coop) = alone("a");
    let (b, _b_coop) = alone("b");
    assert_eq!(groups.live_groups(), 2);
    let (a_thread, a_name) = thread_of(&a1);
    assert_eq!(a_name, "agentry-ag-a");
    assert_eq!(thread_of(&a2).0, a_thread, "one thread per group");
    assert_ne!(thread_of(&b).0, a_thread, "a thread per group");
    let agents = |h: &EnvHandle| -> Vec<(String, usize)> {
        stats_of(h, "active_group")
            .into_iter()
            .map(|s| (s.name, s.agents))
            .collect()
    };
    assert_eq!(agents(h), [("ag-a".into(), 2), ("ag-b".into(), 1)]);

    deregister(h, &a1_coop);
    assert_eq!(groups.live_groups(), 2);
    assert_eq!(thread_of(&a2).0, a_thread, "the group's thread goes on");
    assert_eq!(agents(h), [("ag-a".into(), 1), ("ag-b".into(), 1)]);

    deregister(h, &a2_coop);
    assert_eq!(groups.live_groups(), 1, "group a outlived its last agent");
    assert_eq!(agents(h), [("ag-b".into(), 1)]);
    wait_threads("agentry-ag-a", 0);
    wait_threads("agentry-ag-b", 1);

    // Binding to group a again starts a new thread.
    let (a3, _) = alone("a");
    assert_eq!(groups.live_groups(), 2);
    let (thread, name) = thread_of(&a3);
    assert_ne!(thread, a_thread, "a new thread for the group");
    assert_eq!(name, "agentry-ag-a");
    assert_eq!(agents(h), [("ag-a".into(), 1), ("ag-b".into(), 1)]);
}

#[test]
fn a_pool_counts_the_demands_it_ran() {
    const WORK: u32 = 50;
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    for (name, threads, fifo, at_once) in [
        ("cnt-1", 1, Fifo::Agent, 32),
        ("cnt-4c", 4, Fifo::Coop, 32),
        ("cnt-2x1", 2, Fifo::Agent, 1),
    ] {
        let pool = ThreadPoolDispatcher::builder(name)
            .threads(threads)
            .fifo(fifo)
            .max_demands_at_once(at_once)
            .build(h)
            .expect("pool");
        let stats = || {
            h.dispatcher_stats()
                .into_iter()
                .find(|s| s.name == name)
                .expect("the pool's stats")
        };
        let mut coop = h.new_coop();
        let worker = coop.add_with(Worker::default(), &pool.binder());
        let coop = register_alone(h, coop);
        for _ in 0..WORK {
            worker.send(Work);
        }
        assert_eq!(worker.request::<u32, u32>(0, common::DEADLINE), Ok(WORK));
        // on_start, the work, the request.
        wait_until(&format!("{name} counted every demand"), || {
            stats().handled == u64::from(WORK) + 2
        });
        let s = stats();
        assert_eq!(
            (s.kind, s.threads, s.agents),
            ("thread_pool", threads, 1),
            "{name}"
        );
        deregister(h, &coop);
        // ... and on_finish.
        wait_until(&format!("{name} counted the finish"), || {
            stats().handled == u64::from(WORK) + 3
        });
        assert_eq!(stats().agents, 0, "{name}");
    }
}

/// Registration stays transactional with binders that start threads: whichever step fails —
/// an agent's `define` (before any binding), a binding (after an `active_obj` and an
/// `active_group` binding were prepared), or the commit (a missing parent, after every
/// binding) — no agent stays bound and the threads started for it end.
#[test]
fn a_failed_registration_leaves_nothing_bound_to_thread_starting_binders() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let other = Env::builder().autoshutdown(false).build().expect("env");
    let foreign = OneThreadDispatcher::new(other.handle(), "foreign").expect("dispatcher");
    let ao = ActiveObjDispatcher::new(h, "tx").expect("dispatcher");
    let groups = ActiveGroupDispatcher::new(h, "txg").expect("dispatcher");
    let bound = |h: &EnvHandle| -> usize { h.dispatcher_stats().iter().map(|s| s.agents).sum() };
    let nothing_left = |what: &str| {
        assert_eq!(bound(h), 0, "{what}: an agent stayed bound");
        assert_eq!(groups.live_groups(), 0, "{what}: a group stayed alive");
        assert!(stats_of(h, "active_obj").is_empty(), "{what}");
        wait_threads("agentry-tx-", 0);
        wait_threads("agentry-txg-", 0);
    };
    let coop_with = |last: Option<&agentry::disp::Binder>| {
        let mut coop = h.new_coop();
        let mboxes = vec![
            coop.add_with(Worker::default(), &ao.binder()),
            coop.add_with(Worker::default(), &groups.binder("g")),
        ];
        if let Some(binder) = last {
            coop.add_with(Worker::default(), binder);
        }
        (coop, mboxes)
    };

    let (mut coop, mboxes) = coop_with(None);
    coop.add(Broken);
    assert!(matches!(
        h.register_coop(coop),
        Err(RegisterError::Define { index: 2, .. })
    ));
    assert_eq!(ao.threads_started(), 0, "define fails before any binding");
    assert!(mboxes.iter().all(|m| !m.is_alive()));
    nothing_left("define");

    let (coop, mboxes) = coop_with(Some(&foreign.binder()));
    assert!(matches!(
        h.register_coop(coop),
        Err(RegisterError::Bind { index: 2, .. })
    ));
    assert_eq!(
        ao.threads_started(),
        1,
        "the active_obj binding was prepared"
    );
    assert!(mboxes.iter().all(|m| !m.is_alive()));
    nothing_left("bind");

    let mut gone = h.new_coop();
    gone.add(Worker::default());
    let gone = register_alone(h, gone);
    deregister(h, &gone);
    let (mut coop, mboxes) = coop_with(None);
    coop.set_parent(gone.0);
    assert!(matches!(
        h.register_coop(coop),
        Err(RegisterError::ParentNotFound(_))
    ));
    assert_eq!(ao.threads_started(), 2, "every binding was prepared");
    assert!(mboxes.iter().all(|m| !m.is_alive()));
    nothing_left("commit");

    // The same coop without the fault registers, and its agents are bound.
    let (coop, mboxes) = coop_with(None);
    h.register_coop(coop).expect("register");
    assert_eq!(bound(h), 2);
    assert_eq!(groups.live_groups(), 1);
    for m in &mboxes {
        assert_eq!(m.request::<u32, u32>(1, common::DEADLINE), Ok(1));
    }
    wait_threads("agentry-tx-", 1);
    wait_threads("agentry-txg-", 1);
}

/// Memory mappings of this process (each thread stack not yet released is at least two: the
/// stack and its guard page).
fn mappings() -> Option<usize> {
    Some(
        std::fs::read_to_string("/proc/self/maps")
            .ok()?
            .lines()
            .count(),
    )
}

/// An `active_obj` thread ends with its agent, but its `JoinHandle` stays in the environment's
/// worker list until shutdown: the exited thread is never joined, so its stack stays mapped.
/// An environment that keeps registering short-lived `active_obj` agents grows without bound
/// (about 2 MiB of address space and two mappings per agent; thread creation fails once the
/// process hits `vm.max_map_count`).
#[test]
fn threads_of_finished_agents_are_released_before_shutdown() {
    const AGENTS: usize = 150;
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let ao = ActiveObjDispatcher::new(h, "churn").expect("dispatcher");
    let Some(before) = mappings() else { return };
    for _ in 0..AGENTS {
        let mut coop = h.new_coop();
        coop.add_with(Worker::default(), &ao.binder());
        let coop = register_alone(h, coop);
        deregister(h, &coop);
    }
    wait_threads("agentry-churn-", 0);
    let after = mappings().expect("mappings");
    assert!(
        after < before + AGENTS / 2,
        "{AGENTS} finished active_obj agents left {} new mappings behind",
        after.saturating_sub(before)
    );
}
