//! An agent that always has work does not starve the other agents of its dispatcher: a
//! request to another agent bound the same way is answered while the busy one keeps sending
//! itself messages.

mod common;

use agentry::disp::ThreadPoolDispatcher;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, RequestError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

struct Spin;

/// Sends itself `Spin` from every `Spin` until told to stop: its queue is never empty.
struct Spinner {
    stop: Arc<AtomicBool>,
}

impl Agent for Spinner {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Spinner, ctx: &mut Ctx<Spinner>, _: Spin| {
            if !s.stop.load(Ordering::Relaxed) {
                ctx.mbox().send(Spin);
            }
        })?;
        Ok(())
    }
}

struct Echo;

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Echo, _: &mut Ctx<Echo>, n: u32| n)?;
        Ok(())
    }
}

/// Starts a spinner and an echo in two coops with `binders`; returns the echo's answer to a
/// request from this thread, made while the spinner spins, then stops the spinner.
fn ask_while_spinning(
    env: &Env,
    binders: [&agentry::disp::Binder; 2],
    timeout: Duration,
) -> Result<u32, RequestError> {
    let h = env.handle();
    let stop = Arc::new(AtomicBool::new(false));
    let mut coop = h.new_coop();
    let spinner = coop.add_with(
        Spinner {
            stop: Arc::clone(&stop),
        },
        binders[0],
    );
    h.register_coop(coop).expect("register the spinner");
    let mut coop = h.new_coop();
    let echo: Mbox = coop.add_with(Echo, binders[1]);
    h.register_coop(coop).expect("register the echo");
    spinner.send(Spin);
    // The spinner is busy (it has handled a few of its own messages) before the request.
    common::wait_until("the spinner spins", || spinner.stats().handled > 10);
    let answer = echo.request::<u32, u32>(7, timeout);
    stop.store(true, Ordering::Relaxed);
    answer
}

#[test]
fn a_busy_agent_does_not_starve_another_on_every_dispatcher() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    for disp in common::dispatchers(env.handle()) {
        let answer = ask_while_spinning(&env, [&disp.binder(0), &disp.binder(1)], common::DEADLINE);
        assert_eq!(answer, Ok(7), "{}", disp.name);
    }
}

/// A pool worker that reaches an agent's `max_demands_at_once` puts the agent's queue back in
/// its own local deque, where it would be taken again and again if the worker looked at the
/// injector (where queues made ready by other threads wait) only when its deque is empty; an
/// agent woken from outside the pool must still run while the only worker is busy so.
#[test]
fn a_busy_agent_does_not_starve_an_agent_woken_from_outside_a_one_thread_pool() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let pool = ThreadPoolDispatcher::builder("one")
        .threads(1)
        .max_demands_at_once(1)
        .build(env.handle())
        .expect("pool");
    let answer = ask_while_spinning(
        &env,
        [&pool.binder(), &pool.binder()],
        Duration::from_secs(1),
    );
    assert_eq!(answer, Ok(7));
}
