//! The io dispatcher is built the way every agentry dispatcher is — `IoDispatcher::builder(name)`,
//! options, `.build(&env)`, or `IoDispatcher::new(&env, name)` — and fails the same way: a
//! typed `agentry::BuildError` for a name that cannot name a thread or an option out of range,
//! before any io thread starts.

mod common;

use agentry::{Agent, BuildError, Ctx, Define, DefineError, Env};
use agentry_net::IoDispatcher;
use common::DEADLINE;
use std::time::Duration;

struct Add(u64);
struct Sum;

#[derive(Default)]
struct Summer(u64);

impl Agent for Summer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Summer, _: &mut Ctx<Summer>, Add(n): Add| s.0 += n)?
            .on_request(|s: &mut Summer, _: &mut Ctx<Summer>, _: Sum| {
                (s.0, std::thread::current().name().map(str::to_owned))
            })?;
        Ok(())
    }
}

#[test]
fn built_either_way_it_runs_agents() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let built = IoDispatcher::builder("b-io")
        .threads(2)
        .spin(Duration::from_micros(10))
        .events_capacity(64)
        .build(h)
        .expect("io dispatcher");
    let new = IoDispatcher::new(h, "n-io").expect("io dispatcher");
    assert_eq!((built.threads(), new.threads()), (2, 1));
    for (name, io) in [("b-io", &built), ("n-io", &new)] {
        let mut coop = h.new_coop();
        let summer = coop.add_with(Summer::default(), &io.binder());
        h.register_coop(coop).expect("registered");
        for n in 1..=100 {
            summer.send(Add(n));
        }
        let (sum, thread) = summer
            .request::<Sum, (u64, Option<String>)>(Sum, DEADLINE)
            .expect("answer");
        assert_eq!(sum, 5050, "{name}'s agent handled every message");
        let thread = thread.unwrap_or_default();
        assert!(
            thread.starts_with(&format!("agentry-net-{name}-")),
            "{name}'s agent ran on an io thread, not on {thread:?}"
        );
    }
    h.stop();
    env.run();
    assert!(built.wait_threads(DEADLINE) && new.wait_threads(DEADLINE));
}

#[test]
fn bad_settings_are_typed_build_errors() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    for name in ["", "nul\0inside"] {
        assert!(
            matches!(IoDispatcher::new(h, name), Err(BuildError::InvalidName(_))),
            "name {name:?}"
        );
    }
    assert!(matches!(
        IoDispatcher::builder("io").threads(0).build(h),
        Err(BuildError::InvalidSetting(_))
    ));
    assert!(matches!(
        IoDispatcher::builder("io").events_capacity(0).build(h),
        Err(BuildError::InvalidSetting(_))
    ));
    assert!(h.dispatcher_stats().is_empty(), "no io thread was started");
    h.stop();
    env.run();
}
