//! The end-of-batch hook on every kind of worker loop (an engine thread, a pool worker, the
//! testing kit's driven dispatcher), with real agents: a hook runs on the handler's thread after the
//! handlers that registered it, once per batch however often it was registered, never on a
//! batch that registered nothing nor on an idle wake-up; off a batch, and inside a hook,
//! registering is refused; a blocking request runs the hooks before it blocks.

use super::{BatchEnd, at_batch_end};
use crate::disp::{Binder, OneThreadDispatcher, ThreadPoolDispatcher};
use crate::testing::TestEnv;
use crate::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// Self-sent messages of one burst: served in one or two batches (the sender's, the local
/// queue's), never one per message.
const BURST: u32 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A handler ran (and registered the hook twice, unless `Quiet`).
    Handled(ThreadId),
    /// The hook ran; `refused`: its own registration from inside was refused.
    Hook(ThreadId, bool),
    /// A blocking request returned.
    Answered,
}

#[derive(Default)]
struct Log(Mutex<Vec<Entry>>);

impl Log {
    fn push(&self, e: Entry) {
        self.0.lock().push(e);
    }
    fn entries(&self) -> Vec<Entry> {
        self.0.lock().clone()
    }
    fn hooks(&self) -> usize {
        self.entries()
            .iter()
            .filter(|e| matches!(e, Entry::Hook(..)))
            .count()
    }
    fn handled(&self) -> usize {
        self.entries()
            .iter()
            .filter(|e| matches!(e, Entry::Handled(_)))
            .count()
    }
}

/// The hook, with a weak reference to itself (to try registering from inside; a strong one
/// would be a cycle that leaks).
struct Hook(Arc<Log>, Weak<Hook>);

impl BatchEnd for Hook {
    fn batch_ended(&self) {
        let me = self.1.upgrade().expect("the hook lives while it runs");
        let refused = !at_batch_end(&me);
        self.0
            .push(Entry::Hook(std::thread::current().id(), refused));
    }
}

fn hook(log: &Arc<Log>) -> Arc<Hook> {
    Arc::new_cyclic(|me| Hook(Arc::clone(log), me.clone()))
}

struct Burst;
struct Tick;
struct Quiet;
struct Ask;

/// Registers the hook twice per message; `Burst` sends itself `BURST` ticks; `Ask` makes a
/// blocking request to `peer` after registering.
struct Registrar {
    log: Arc<Log>,
    hook: Arc<Hook>,
    peer: Option<Mbox>,
}

impl Registrar {
    fn handled(&self) {
        self.log.push(Entry::Handled(std::thread::current().id()));
        assert!(at_batch_end(&self.hook), "a handler serves a batch");
        assert!(at_batch_end(&self.hook));
    }
}

impl Agent for Registrar {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Registrar, ctx: &mut Ctx<Registrar>, _: Burst| {
            a.handled();
            for _ in 0..BURST {
                ctx.mbox().send(Tick);
            }
        })?
        .on(|a: &mut Registrar, _: &mut Ctx<Registrar>, _: Tick| a.handled())?
        .on(|_: &mut Registrar, _: &mut Ctx<Registrar>, _: Quiet| {})?
        .on(|a: &mut Registrar, _: &mut Ctx<Registrar>, _: Ask| {
            a.handled();
            let peer = a.peer.as_ref().expect("a peer to ask");
            let r: Result<u32, _> = peer.request(7u32, Duration::from_secs(10));
            assert_eq!(r, Ok(8));
            a.log.push(Entry::Answered);
        })?;
        Ok(())
    }
}

struct Echo;

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Echo, _: &mut Ctx<Echo>, q: u32| q + 1)?;
        Ok(())
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every hook entry follows handler entries of its own thread (it ran after a batch that
/// registered it, once: never two in a row), and was refused its own registration; after
/// the last handler comes a hook.
fn check_order(entries: &[Entry]) {
    let mut registered_on = None;
    for e in entries {
        match *e {
            Entry::Handled(t) => registered_on = Some(t),
            Entry::Hook(t, refused) => {
                assert!(refused, "a hook runs outside the batch: {entries:?}");
                assert_eq!(
                    registered_on.take(),
                    Some(t),
                    "a hook runs once, on the thread of the batch that registered it: {entries:?}"
                );
            }
            Entry::Answered => {}
        }
    }
    assert_eq!(
        registered_on, None,
        "the last batch ran its hook: {entries:?}"
    );
}

/// Runs a burst on the dispatcher `binder` makes, then a batch that registers nothing, then
/// idles: the hook ran once or twice for the burst's 65 handlers, and never again.
fn burst_on(env: &EnvHandle, binder: &Binder) {
    let log = Arc::new(Log::default());
    let mut coop = env.new_coop();
    let mbox = coop.add_with(
        Registrar {
            hook: hook(&log),
            log: Arc::clone(&log),
            peer: None,
        },
        binder,
    );
    env.register_coop(coop).expect("registered");
    mbox.send(Burst);
    let handlers = 1 + BURST as usize;
    wait_until("the burst and its hook", || {
        log.handled() == handlers && log.hooks() >= 1 && check_done(&log)
    });
    let after_burst = log.hooks();
    assert!(
        (1..=2).contains(&after_burst),
        "{after_burst} hook runs for a burst of {handlers} handlers in at most two batches"
    );
    mbox.send(Quiet);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        log.hooks(),
        after_burst,
        "no hook runs for a batch that registered nothing nor while idle"
    );
    check_order(&log.entries());
}

fn check_done(log: &Log) -> bool {
    matches!(log.entries().last(), Some(Entry::Hook(..)))
}

#[test]
fn registering_off_a_dispatcher_thread_is_refused() {
    let log = Arc::new(Log::default());
    assert!(!at_batch_end(&hook(&log)));
    super::run_batch_end_hooks();
    assert_eq!(log.hooks(), 0, "nothing was kept to run");
}

#[test]
fn a_one_thread_dispatcher_runs_the_hook_once_per_batch() {
    let env = Env::new().expect("env");
    let disp = OneThreadDispatcher::new(&env, "batch").expect("dispatcher");
    burst_on(env.handle(), &disp.binder());
}

#[test]
fn a_pool_worker_runs_the_hook_once_per_batch() {
    let env = Env::new().expect("env");
    let pool = ThreadPoolDispatcher::builder("batch")
        .threads(2)
        .max_demands_at_once(256)
        .build(&env)
        .expect("pool");
    burst_on(env.handle(), &pool.binder());
}

#[test]
fn the_test_env_runs_the_hook_after_each_step() {
    let mut env = TestEnv::new().expect("test env");
    let log = Arc::new(Log::default());
    let mut coop = env.handle().new_coop();
    let mbox = coop.add(Registrar {
        hook: hook(&log),
        log: Arc::clone(&log),
        peer: None,
    });
    env.handle().register_coop(coop).expect("registered");
    env.run_until_idle().expect("started");
    assert_eq!(log.hooks(), 0, "a start registers nothing");
    mbox.send(Burst);
    assert!(env.step());
    assert_eq!(log.entries().len(), 2, "the step's handler, then the hook");
    env.run_until_idle().expect("idle");
    let handlers = 1 + BURST as usize;
    assert_eq!(log.handled(), handlers);
    assert_eq!(log.hooks(), handlers, "a step of the test env is a batch");
    check_order(&log.entries());
    env.shutdown().expect("shut down");
}

#[test]
fn a_blocking_request_runs_the_hooks_before_it_blocks() {
    let env = Env::new().expect("env");
    let asker = OneThreadDispatcher::new(&env, "asker").expect("dispatcher");
    let log = Arc::new(Log::default());
    let mut coop = env.handle().new_coop();
    let echo = coop.add(Echo);
    let mbox = coop.add_with(
        Registrar {
            hook: hook(&log),
            log: Arc::clone(&log),
            peer: Some(echo),
        },
        &asker.binder(),
    );
    env.handle().register_coop(coop).expect("registered");
    mbox.send(Ask);
    wait_until("the answer", || log.entries().contains(&Entry::Answered));
    let entries = log.entries();
    let me = match entries[0] {
        Entry::Handled(t) => t,
        e => panic!("the handler logs first, not {e:?}"),
    };
    assert_eq!(
        entries,
        vec![Entry::Handled(me), Entry::Hook(me, true), Entry::Answered],
        "the hook ran before the request blocked, and not again at the batch's end"
    );
}
