//! A future that sleeps on agentry's clock waits on the test env's virtual time: nothing
//! comes before the deadline, its output comes at it; `settle` is the quiet point between
//! the test's moves. A real tokio sleep runs on real time, virtual time stays put.

use agentry::testing::TestEnv;
use agentry::{Agent, Ctx, Define, DefineError};
use agentry_tokio::{Tasks, sleep};
use std::time::Duration;

struct Fetch;
struct RealFetch;
struct Fetched(&'static str);

#[derive(Default)]
struct Cache {
    tasks: Option<Tasks>,
    got: Vec<&'static str>,
}

impl Agent for Cache {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Cache, ctx: &mut Ctx<Cache>, _: Fetch| {
            let env = ctx.env();
            c.tasks.as_mut().expect("tasks").spawn(ctx, async move {
                sleep(&env, Duration::from_secs(10)).await;
                sleep(&env, Duration::from_secs(5)).await;
                Fetched("virtual")
            });
        })?;
        def.on(|c: &mut Cache, ctx: &mut Ctx<Cache>, _: RealFetch| {
            c.tasks.as_mut().expect("tasks").spawn(ctx, async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Fetched("real")
            });
        })?;
        def.on(|c: &mut Cache, _: &mut Ctx<Cache>, Fetched(what): Fetched| c.got.push(what))?;
        def.on_request(|c: &mut Cache, _: &mut Ctx<Cache>, _: ()| c.got.clone())?;
        Ok(())
    }
}

#[test]
fn agentry_sleep_follows_virtual_time() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut env = TestEnv::new().expect("test env");
    let tasks = Tasks::new(rt.handle().clone());
    let probe = tasks.probe();
    let cache = env
        .handle()
        .register_agent(Cache {
            tasks: Some(tasks),
            ..Cache::default()
        })
        .expect("registered");
    let settle = Duration::from_secs(10);
    cache.send(Fetch);
    env.run_until_idle().expect("idle");
    assert_eq!(probe.settle(settle).expect("settled").waiting_on_clock, 1);

    env.advance(Duration::from_secs(9)).expect("advanced");
    probe.settle(settle).expect("settled");
    env.run_until_idle().expect("idle");
    assert!(
        env.request::<(), Vec<&str>>(&cache, ())
            .expect("asked")
            .is_empty()
    );

    // The first sleep ends at 10 s; the second starts then (the future runs between the
    // test's moves) and ends at 15 s.
    env.advance(Duration::from_secs(1)).expect("advanced");
    let stats = probe.settle(settle).expect("settled");
    assert_eq!((stats.running, stats.waiting_on_clock), (1, 1));
    env.advance(Duration::from_secs(5)).expect("advanced");
    probe.settle(settle).expect("settled");
    env.run_until_idle().expect("idle");
    assert_eq!(
        env.request::<(), Vec<&str>>(&cache, ()).expect("asked"),
        ["virtual"]
    );
    assert_eq!(env.now(), Duration::from_secs(15));
    assert_eq!(probe.stats().delivered, 1);

    // A tokio sleep: real time; settle waits for it, the virtual clock does not move.
    cache.send(RealFetch);
    env.run_until_idle().expect("idle");
    assert_eq!(probe.settle(settle).expect("settled").waiting_on_clock, 0);
    env.run_until_idle().expect("idle");
    assert_eq!(
        env.request::<(), Vec<&str>>(&cache, ()).expect("asked"),
        ["virtual", "real"]
    );
    assert_eq!(env.now(), Duration::from_secs(15));
    env.shutdown().expect("shut down");
}
