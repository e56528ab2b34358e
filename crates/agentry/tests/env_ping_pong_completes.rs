//! Basic usage: two agents of one coop play ping-pong until one stops the environment.

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, UserError};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

struct Ping(u64, Mbox);
struct Pong(u64);

struct Pinger {
    pong: Mbox,
    left: u64,
    done: Arc<AtomicU64>,
}
struct Ponger;

impl Agent for Pinger {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Pinger, ctx: &mut Ctx<Pinger>, Pong(n): Pong| {
            a.left -= 1;
            if a.left == 0 {
                a.done.store(n, Ordering::SeqCst);
                ctx.stop_env();
            } else {
                a.pong.send(Ping(n + 1, ctx.mbox().clone()));
            }
        })?;
        Ok(())
    }
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.pong.send(Ping(0, ctx.mbox().clone()));
        Ok(())
    }
}

impl Agent for Ponger {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Ponger, _ctx: &mut Ctx<Ponger>, Ping(n, reply): Ping| reply.send(Pong(n)))?;
        Ok(())
    }
}

#[test]
fn ping_pong_runs_to_completion() {
    let env = Env::new().expect("env");
    let done = Arc::new(AtomicU64::new(0));
    let mut coop = env.handle().new_coop();
    let pong = coop.add(Ponger);
    coop.add(Pinger {
        pong,
        left: 1000,
        done: done.clone(),
    });
    env.handle().register_coop(coop).expect("register");
    env.run();
    assert_eq!(done.load(Ordering::SeqCst), 999);
}
