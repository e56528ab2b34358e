//! The futures an agent started are aborted when it finishes: none of their outputs reaches
//! it after `on_finish`, and each is counted `cancelled`; an output that arrives after the
//! agent finished is refused and counted `undelivered` (and by the core).

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, mchain::Mchain};
use agentry_tokio::Tasks;
use std::time::Duration;

struct Never;
struct Late;

struct Owner {
    tasks: Tasks,
    out: Mchain,
}

impl Agent for Owner {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|o: &mut Owner, _: &mut Ctx<Owner>, _: Late| o.out.send("late message handled"))?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), agentry::UserError> {
        for _ in 0..3 {
            self.tasks.spawn(ctx, std::future::pending::<Never>());
        }
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.out.send(self.tasks.running());
    }
}

#[test]
fn futures_are_aborted_and_counted_when_the_agent_finishes() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let tasks = Tasks::new(rt.handle().clone());
    let probe = tasks.probe();
    let mut coop = env.handle().new_coop();
    let owner = coop.add(Owner {
        tasks,
        out: out.clone(),
    });
    let coop = env.handle().register_coop(coop).expect("registered");
    env.handle()
        .deregister_coop(coop, DeregReason::Normal)
        .expect("deregistered");
    let wait = Duration::from_secs(10);
    let at_finish = out
        .recv(wait)
        .expect("on_finish ran")
        .downcast::<u64>()
        .ok();
    assert_eq!(at_finish, Some(3), "still running at on_finish");
    let stats = probe.settle(wait).expect("the aborted futures are dropped");
    assert_eq!((stats.spawned, stats.running, stats.cancelled), (3, 0, 3));

    // An output that comes after the finish: refused, counted here and by the core.
    let mut outside = Tasks::new(rt.handle().clone());
    let outside_probe = outside.probe();
    outside.spawn_to(owner.clone(), async { Late });
    let stats = outside_probe.settle(wait).expect("ended");
    assert_eq!((stats.undelivered, stats.delivered), (1, 0));
    assert!(
        out.try_recv().is_err(),
        "nothing reached the finished agent"
    );
    env.handle().stop();
    let env_stats = env.run();
    assert_eq!(env_stats.dead_letters, 1, "{env_stats:?}");
}
