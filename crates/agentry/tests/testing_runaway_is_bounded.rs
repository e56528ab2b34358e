//! A message loop that never ends, or a timer that keeps firing, makes the test environment
//! fail with `TestError::NotIdle` instead of hanging the test.

use agentry::testing::{TestEnv, TestError};
use agentry::{Agent, Ctx, Define, DefineError};
use std::time::Duration;

/// Sends itself a message for every message it gets.
struct Echoer;
struct Again;

impl Agent for Echoer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Echoer, ctx: &mut Ctx<Echoer>, _: Again| ctx.mbox().send(Again))?;
        Ok(())
    }
}

#[test]
fn an_endless_loop_is_cut_after_max_steps() {
    let mut env = TestEnv::builder().max_steps(100).build().expect("test env");
    let echoer = env.handle().register_agent(Echoer).expect("registered");
    echoer.send(Again);
    assert_eq!(env.run_until_idle(), Err(TestError::NotIdle { steps: 100 }));
    assert_eq!(
        env.advance(Duration::from_secs(1)),
        Err(TestError::NotIdle { steps: 100 })
    );
}

#[test]
fn a_timer_that_fires_too_often_is_cut_too() {
    let mut env = TestEnv::builder().max_steps(100).build().expect("test env");
    let echoer = env.handle().register_agent(Echoer).expect("registered");
    env.run_until_idle().expect("started");
    let _every_nanosecond =
        env.handle()
            .send_periodic(&echoer, Duration::ZERO, Duration::from_nanos(1), 0u8);
    assert_eq!(
        env.advance(Duration::from_secs(1)),
        Err(TestError::NotIdle { steps: 100 })
    );
}
