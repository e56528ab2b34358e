//! A dispatcher is refused at `build` — with a typed `BuildError`, and before any thread
//! starts — when its name is empty or holds a NUL byte (it names threads: std would panic) or
//! an option is out of range (no threads, no demands at once, a round-robin quote of 0). The
//! environment refuses a default pool of no threads the same way, and an `active_group` group
//! name that cannot name a thread fails its binding instead of panicking.

mod common;

use agentry::disp::{
    ActiveGroupDispatcher, ActiveObjDispatcher, DefaultDispatcher, OneThreadDispatcher,
    PrioOneThreadDispatcher, ThreadPoolDispatcher,
};
use agentry::{Agent, BindError, BuildError, Env, EnvHandle, RegisterError};

fn assert_invalid_name<T>(what: &str, built: Result<T, BuildError>) {
    match built {
        Err(BuildError::InvalidName(_)) => {}
        Err(other) => panic!("{what}: expected InvalidName, got {other}"),
        Ok(_) => panic!("{what}: expected InvalidName, got a dispatcher"),
    }
}

fn assert_invalid_setting<T>(what: &str, built: Result<T, BuildError>) {
    match built {
        Err(BuildError::InvalidSetting(_)) => {}
        Err(other) => panic!("{what}: expected InvalidSetting, got {other}"),
        Ok(_) => panic!("{what}: expected InvalidSetting, got a dispatcher"),
    }
}

/// Builds every dispatcher named `name`, through builder and `new`, and checks each refusal.
fn refuse_name(h: &EnvHandle, name: &str) {
    assert_invalid_name("one_thread", OneThreadDispatcher::new(h, name));
    assert_invalid_name(
        "one_thread (driven)",
        OneThreadDispatcher::builder(name).build_driven(h, || {}),
    );
    assert_invalid_name("active_obj", ActiveObjDispatcher::new(h, name));
    assert_invalid_name("active_group", ActiveGroupDispatcher::new(h, name));
    assert_invalid_name("thread_pool", ThreadPoolDispatcher::new(h, name));
    assert_invalid_name(
        "thread_pool (builder)",
        ThreadPoolDispatcher::builder(name).threads(1).build(h),
    );
    assert_invalid_name("prio_one_thread", PrioOneThreadDispatcher::new(h, name));
    assert_invalid_name(
        "prio_one_thread (builder)",
        PrioOneThreadDispatcher::builder(name)
            .quoted_round_robin([1; 8])
            .build(h),
    );
}

#[test]
fn names_that_cannot_name_a_thread_are_refused() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    refuse_name(h, "");
    refuse_name(h, "nul\0inside");
    assert!(h.dispatcher_stats().is_empty(), "nothing was started");
    h.stop();
    common::run_env(env);
}

#[test]
fn out_of_range_options_are_refused() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    assert_invalid_setting(
        "no threads",
        ThreadPoolDispatcher::builder("pool").threads(0).build(h),
    );
    assert_invalid_setting(
        "no demands at once",
        ThreadPoolDispatcher::builder("pool")
            .max_demands_at_once(0)
            .build(h),
    );
    let mut quotes = [3; 8];
    quotes[5] = 0;
    assert_invalid_setting(
        "a quote of 0",
        PrioOneThreadDispatcher::builder("prio")
            .quoted_round_robin(quotes)
            .build(h),
    );
    assert!(h.dispatcher_stats().is_empty(), "nothing was started");
    // The last policy chosen counts: strictly ordered has no quotes to refuse.
    let strict = PrioOneThreadDispatcher::builder("prio")
        .quoted_round_robin(quotes)
        .strictly_ordered()
        .build(h)
        .expect("strictly ordered");
    assert_eq!(strict.stats().kind, "prio_one_thread_strictly_ordered");
    h.stop();
    common::run_env(env);
}

#[test]
fn a_default_pool_of_no_threads_is_refused_by_the_env_builder() {
    let built = Env::builder()
        .default_dispatcher(DefaultDispatcher::ThreadPool { threads: 0 })
        .build();
    assert!(
        matches!(built, Err(BuildError::InvalidSetting(_))),
        "expected InvalidSetting"
    );
}

struct Idle;
impl Agent for Idle {}

#[test]
fn a_group_name_that_cannot_name_a_thread_fails_the_binding() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let groups = ActiveGroupDispatcher::new(h, "groups").expect("active_group");
    let mut coop = h.new_coop();
    coop.add_with(Idle, &groups.binder("nul\0inside"));
    match h.register_coop(coop) {
        Err(RegisterError::Bind {
            source: BindError::Spawn(_),
            ..
        }) => {}
        other => panic!("expected a Bind error, got {other:?}"),
    }
    assert_eq!(groups.live_groups(), 0);
    h.stop();
    common::run_env(env);
}
