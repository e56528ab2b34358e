//! A future started from a handler comes back as a message, handled in the agent's state at
//! that time; its end is counted once.

use agentry::{Agent, Ctx, Define, DefineError, Env, State, mchain::Mchain};
use agentry_tokio::Tasks;
use std::time::Duration;

struct Start(u32);
struct Computed(u32);
struct Enter;

/// Starts a computation in `idle`, then moves to `busy` while it runs: the output is handled
/// by `busy`'s handler, on the agent's thread.
struct Worker {
    tasks: Tasks,
    idle: State,
    busy: State,
    out: Mchain,
    gate: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.idle = def.state("idle")?;
        self.busy = def.state("busy")?;
        def.start_in(self.idle)?;
        def.in_state(self.idle)
            .on(|w: &mut Worker, ctx: &mut Ctx<Worker>, Start(n): Start| {
                let gate = w.gate.take().expect("one start");
                w.tasks.spawn(ctx, async move {
                    let _ = gate.await;
                    Computed(n * 10)
                });
                w.out.send(w.tasks.running());
                ctx.change_state(w.busy).expect("own state");
                w.out.send(Enter);
            })?;
        def.in_state(self.busy).on(
            |w: &mut Worker, ctx: &mut Ctx<Worker>, Computed(v): Computed| {
                w.out.send((ctx.state_name().to_owned(), v));
                ctx.stop_env();
            },
        )?;
        Ok(())
    }
}

#[test]
fn output_comes_back_as_a_message_handled_in_the_current_state() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let (open, gate) = tokio::sync::oneshot::channel();
    let tasks = Tasks::new(rt.handle().clone());
    let probe = tasks.probe();
    let worker = env
        .handle()
        .register_agent(Worker {
            tasks,
            idle: State::default(),
            busy: State::default(),
            out: out.clone(),
            gate: Some(gate),
        })
        .expect("registered");
    worker.send(Start(4));
    let wait = Duration::from_secs(10);
    let running = out
        .recv(wait)
        .expect("running count")
        .downcast::<u64>()
        .ok();
    assert_eq!(running, Some(1), "one future running right after the spawn");
    assert!(out.recv(wait).expect("state changed").is::<Enter>());
    open.send(()).expect("the future waits");
    let (state, value) = out
        .recv(wait)
        .expect("output handled")
        .downcast::<(String, u32)>()
        .expect("the report");
    assert_eq!((state.as_str(), value), ("busy", 40));
    // The output is sent before the future's end is counted: settle waits for the count.
    let stats = probe.settle(wait).expect("settled");
    assert_eq!(
        (stats.spawned, stats.running, stats.delivered),
        (1, 0, 1),
        "{stats:?}"
    );
    assert_eq!(stats.undelivered + stats.panicked + stats.cancelled, 0);
    env.run();
}
