//! Shutting a test environment down (or dropping it) stops the environment and runs every
//! agent's finish on the test's thread; `shutdown` returns the final counters.

use agentry::testing::TestEnv;
use agentry::{Agent, Ctx, mchain::Mchain};
use std::time::Duration;

/// Reports its finish.
struct Mortal(Mchain);
struct Finished;

impl Agent for Mortal {
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.0.send(Finished);
    }
}

#[test]
fn shutdown_finishes_every_agent_and_returns_the_counters() {
    let mut env = TestEnv::new().expect("test env");
    let out = Mchain::unbounded();
    for _ in 0..3 {
        env.handle()
            .register_agent(Mortal(out.clone()))
            .expect("registered");
    }
    env.handle()
        .send_delayed(&out, Duration::from_secs(60), 0u8)
        .detach();
    env.run_until_idle().expect("started");
    let handle = env.handle().clone();
    let stats = env.shutdown().expect("stopped");
    assert_eq!((stats.coops, stats.agents), (0, 0));
    assert_eq!(stats.dropped_on_shutdown, 1, "the pending timer");
    assert_eq!(out.len(), 3, "every on_finish ran");
    assert!(handle.is_stopped());
}

#[test]
fn dropping_the_test_env_finishes_every_agent() {
    let out = Mchain::unbounded();
    {
        let env = TestEnv::new().expect("test env");
        env.handle()
            .register_agent(Mortal(out.clone()))
            .expect("registered");
    }
    assert_eq!(out.len(), 1, "started and finished on drop");
}
