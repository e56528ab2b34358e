//! A panic in a future is caught, counted, and sent to its agent as `TaskPanicked`;
//! `resume` in the handler applies the agent's panic reaction as to a handler's panic.

use agentry::{Agent, Ctx, Define, DefineError, Env, PanicReaction, UserError, mchain::Mchain};
use agentry_tokio::{TaskPanicked, Tasks};
use std::time::Duration;

struct Output;

/// Starts a panicking future; reports the `TaskPanicked` it gets, or re-raises it.
struct Spawner {
    tasks: Tasks,
    out: Mchain,
    resume: bool,
}

impl Agent for Spawner {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.panic_reaction(PanicReaction::DeregisterCoop);
        def.on(|s: &mut Spawner, _: &mut Ctx<Spawner>, p: TaskPanicked| {
            if s.resume {
                p.resume();
            }
            s.out.send((p.task.0, p.message));
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.tasks.spawn(ctx, async {
            tokio::task::yield_now().await;
            if true {
                panic!("the backend said no");
            }
            Output
        });
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.out.send("finished");
    }
}

fn start(
    resume: bool,
) -> (
    Env,
    Mchain,
    agentry_tokio::TaskProbe,
    tokio::runtime::Runtime,
) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let tasks = Tasks::new(rt.handle().clone());
    let probe = tasks.probe();
    env.handle()
        .register_agent(Spawner {
            tasks,
            out: out.clone(),
            resume,
        })
        .expect("registered");
    (env, out, probe, rt)
}

#[test]
fn a_panicking_future_is_reported_to_its_agent() {
    let (env, out, probe, _rt) = start(false);
    let wait = Duration::from_secs(10);
    let report = out
        .recv(wait)
        .expect("reported")
        .downcast::<(u64, String)>()
        .ok();
    assert_eq!(report, Some((1, "the backend said no".to_owned())));
    let stats = probe.settle(wait).expect("ended");
    assert_eq!((stats.spawned, stats.panicked, stats.delivered), (1, 1, 0));
    env.handle().stop();
    let env_stats = env.run();
    assert_eq!(env_stats.panics, 0, "handled, not re-raised");
}

#[test]
fn resume_applies_the_agents_panic_reaction() {
    let (env, out, probe, _rt) = start(true);
    let wait = Duration::from_secs(10);
    // DeregisterCoop: the agent finishes, without handling anything after the panic.
    let finished = out.recv(wait).expect("finished").downcast::<&str>().ok();
    assert_eq!(finished, Some("finished"));
    assert_eq!(probe.settle(wait).expect("ended").panicked, 1);
    env.handle().stop();
    let env_stats = env.run();
    assert_eq!((env_stats.panics, env_stats.coops), (1, 0), "{env_stats:?}");
}
