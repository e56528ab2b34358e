//! A test environment runs its agents on the test's own thread, one demand per `step`, in
//! queue order, and nothing before the test asks; a thread runs one test environment at a
//! time.

use agentry::testing::TestEnv;
use agentry::{Agent, BuildError, Ctx, Define, DefineError, UserError, mchain::Mchain};
use std::thread::ThreadId;

/// Reports each number it gets, with the thread that ran the handler.
struct Echo(Mchain);

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|e: &mut Echo, _: &mut Ctx<Echo>, n: u32| {
            e.0.send((n, std::thread::current().id()))
        })?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.0.send("started");
        Ok(())
    }
}

#[test]
fn demands_run_one_per_step_on_the_test_thread_in_order() {
    let mut env = TestEnv::new().expect("test env");
    let out = Mchain::unbounded();
    let echo = env
        .handle()
        .register_agent(Echo(out.clone()))
        .expect("registered");
    for n in 1..=3u32 {
        echo.send(n);
    }
    assert!(out.is_empty(), "nothing runs before the test steps");

    assert!(env.step(), "the start");
    assert_eq!(
        out.try_recv().expect("started").downcast::<&str>().ok(),
        Some("started")
    );
    assert!(out.is_empty());
    assert!(env.step(), "the first message");
    assert_eq!(out.len(), 1, "exactly one demand per step");
    assert_eq!(env.run_until_idle(), Ok(2));
    assert!(!env.step(), "idle");

    let me = std::thread::current().id();
    let got: Vec<(u32, ThreadId)> = (0..3)
        .map(|_| {
            out.try_recv()
                .expect("reported")
                .downcast::<(u32, ThreadId)>()
                .expect("a report")
        })
        .collect();
    assert_eq!(got, [(1, me), (2, me), (3, me)]);
}

#[test]
fn a_thread_runs_one_test_env_at_a_time() {
    let first = TestEnv::new().expect("test env");
    assert!(matches!(TestEnv::new(), Err(BuildError::ThreadBusy)));
    drop(first);
    let second = TestEnv::new().expect("the thread is free again");
    drop(second);
}
