//! A runtime the environment owns runs the agents' futures until the environment stops;
//! then the running ones are cancelled (counted) and a later spawn is cancelled at once —
//! no panic, nothing delivered.

use agentry::{Agent, Ctx, Define, DefineError, Env, UserError, mchain::Mchain};
use agentry_tokio::{RuntimeError, Tasks, env_runtime};
use std::time::Duration;

struct Done;

struct Waiter {
    tasks: Tasks,
    out: Mchain,
}

impl Agent for Waiter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Waiter, _: &mut Ctx<Waiter>, _: Done| w.out.send("done"))?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.tasks.spawn(ctx, async { Done });
        self.tasks.spawn(ctx, std::future::pending::<Done>());
        Ok(())
    }
}

#[test]
fn the_env_runtime_runs_until_the_env_stops() {
    let env = Env::new().expect("env");
    let runtime = env_runtime(env.handle(), 2).expect("runtime");
    let out = Mchain::unbounded();
    let tasks = Tasks::new(runtime.clone());
    let probe = tasks.probe();
    let waiter = env
        .handle()
        .register_agent(Waiter {
            tasks,
            out: out.clone(),
        })
        .expect("registered");
    let wait = Duration::from_secs(10);
    assert!(out.recv(wait).expect("a future ran").is::<&str>());
    env.handle().stop();
    env.run();
    let stats = probe.settle(wait).expect("the pending future was dropped");
    assert_eq!(
        (stats.spawned, stats.delivered, stats.cancelled),
        (2, 1, 1),
        "{stats:?}"
    );

    // The runtime is gone with the environment: a spawn is cancelled at once.
    let mut late = Tasks::new(runtime);
    let late_probe = late.probe();
    late.spawn_to(waiter, async { Done });
    let stats = late_probe.settle(wait).expect("cancelled");
    assert_eq!((stats.cancelled, stats.delivered), (1, 0), "{stats:?}");
}

#[test]
fn a_stopping_env_gets_no_runtime() {
    let env = Env::new().expect("env");
    env.handle().stop();
    let refused = env_runtime(env.handle(), 1);
    assert!(
        matches!(refused, Err(RuntimeError::EnvStopping)),
        "{refused:?}"
    );
    env.run();
}
