//! Once `TimerHandle::cancel` returns, the timer's message is never handled — even when it is
//! already queued, on every dispatcher; dropping the handle cancels; `detach` keeps the timer
//! running.
//!
//! Most tests run in a `TestEnv` (the testing kit): `jump` sends the due messages into the
//! agent's queue and runs nothing, so a message is "queued, not yet handled" without holding
//! the agent in a handler. The test on every dispatcher holds a real dispatcher's agent in a
//! handler (a gate) while the timer's messages pile up behind it.

mod common;

use agentry::testing::TestEnv;
use agentry::{
    Agent, Ctx, Define, DefineError, Env, InsendCtx, Mbox, UserError, timer::Clock,
    timer::ManualClock,
};
use common::{DEADLINE, Gate, GateKey, gate};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Clone)]
struct Tick;
struct Block(Gate);
struct Count;

/// Counts ticks; can be held inside a handler (`Block`) so that ticks pile up in its queue.
#[derive(Default)]
struct Counter {
    ticks: u32,
}

impl Agent for Counter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Counter, _: &mut Ctx<Counter>, _: Tick| c.ticks += 1)?;
        def.on(|_: &mut Counter, _: &mut Ctx<Counter>, Block(gate): Block| gate.pass())?;
        def.on_request(|c: &mut Counter, _: &mut Ctx<Counter>, _: Count| c.ticks)?;
        Ok(())
    }
}

const MS: Duration = Duration::from_millis(1);

fn setup() -> (TestEnv, Mbox) {
    let env = TestEnv::new().expect("test env");
    let counter = env
        .handle()
        .register_agent(Counter::default())
        .expect("registered");
    (env, counter)
}

fn counted(env: &mut TestEnv, counter: &Mbox) -> u32 {
    env.request::<Count, u32>(counter, Count)
        .expect("counter answers")
}

#[test]
fn a_message_queued_before_cancel_is_never_handled() {
    let (mut env, counter) = setup();
    let kept = env.handle().send_delayed(&counter, 10 * MS, Tick);
    let cancelled = env.handle().send_delayed(&counter, 10 * MS, Tick);
    env.jump(10 * MS); // both ticks are queued, not handled
    assert_eq!(
        env.handle().stats().timers,
        0,
        "both timers fired (their messages are queued)"
    );
    cancelled.cancel();
    assert_eq!(
        counted(&mut env, &counter),
        1,
        "only the timer that was not cancelled is handled"
    );
    assert_eq!(env.handle().stats().timers_revoked, 1);
    drop(kept);
}

#[test]
fn a_periodic_timer_cancelled_with_periods_queued_stops_at_once() {
    let (mut env, counter) = setup();
    let timer = env
        .handle()
        .send_periodic(&counter, Duration::ZERO, MS, Tick);
    env.advance(Duration::ZERO).expect("advance");
    assert_eq!(counted(&mut env, &counter), 1);
    env.jump(5 * MS); // five more periods queued
    timer.cancel();
    assert_eq!(
        counted(&mut env, &counter),
        1,
        "no queued period is handled after cancel"
    );
    assert_eq!(env.handle().stats().timers_revoked, 5);
}

#[test]
fn dropping_the_handle_cancels_and_detach_keeps_running() {
    let (mut env, counter) = setup();
    drop(env.handle().send_delayed(&counter, MS, Tick));
    env.handle().send_delayed(&counter, MS, Tick).detach();
    assert_eq!(
        env.handle().stats().timers,
        1,
        "the dropped timer is gone, the detached one stays"
    );
    env.advance(MS).expect("advance");
    assert_eq!(counted(&mut env, &counter), 1);
}

#[test]
fn an_insend_handler_does_not_run_for_a_cancelled_timer() {
    /// Counts ticks on the sender's (here: the timer thread's) side.
    struct Fast(Arc<AtomicU32>);
    impl Agent for Fast {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            let seen = Arc::clone(&self.0);
            def.insend(move |_: &InsendCtx<'_>, _: Tick| {
                seen.fetch_add(1, Ordering::SeqCst);
            })?;
            Ok(())
        }
    }
    let mut env = TestEnv::new().expect("test env");
    let seen = Arc::new(AtomicU32::new(0));
    let fast = env
        .handle()
        .register_agent(Fast(Arc::clone(&seen)))
        .expect("registered");
    let stays = env.handle().send_periodic(&fast, Duration::ZERO, MS, Tick);
    env.advance(2 * MS).expect("advance");
    assert_eq!(
        seen.load(Ordering::SeqCst),
        3,
        "at 0, 1 and 2 ms, on the timer thread"
    );
    stays.cancel();
    env.advance(10 * MS).expect("advance");
    assert_eq!(seen.load(Ordering::SeqCst), 3, "nothing after cancel");
}

#[test]
fn a_handler_may_cancel_its_own_periodic_timer() {
    /// Cancels its own periodic timer at the third tick.
    struct SelfStopping {
        timer: Option<agentry::timer::TimerHandle>,
        ticks: u32,
    }
    impl Agent for SelfStopping {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            def.on(|a: &mut SelfStopping, _: &mut Ctx<SelfStopping>, _: Tick| {
                a.ticks += 1;
                if a.ticks == 3 {
                    a.timer.take().expect("scheduled in on_start").cancel();
                }
            })?;
            def.on_request(|a: &mut SelfStopping, _: &mut Ctx<SelfStopping>, _: Count| a.ticks)?;
            Ok(())
        }
        fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
            let me = ctx.mbox().clone();
            self.timer = Some(ctx.send_periodic(&me, MS, MS, Tick));
            Ok(())
        }
    }
    let mut env = TestEnv::new().expect("test env");
    let agent = env
        .handle()
        .register_agent(SelfStopping {
            timer: None,
            ticks: 0,
        })
        .expect("registered");
    env.advance(10 * MS).expect("advance");
    assert_eq!(env.request::<Count, u32>(&agent, Count), Ok(3));
    assert_eq!(env.handle().stats().timers, 0);
}

#[test]
fn timers_pending_at_shutdown_are_counted() {
    let (env, counter) = setup();
    env.handle()
        .send_delayed(&counter, Duration::from_secs(3600), Tick)
        .detach();
    let handle = env.handle().clone();
    let stats = env.shutdown().expect("stopped");
    assert_eq!(stats.dropped_on_shutdown, 1);
    let late = handle.send_delayed(&counter, Duration::ZERO, Tick);
    assert!(
        !late.is_active(),
        "a timer scheduled after shutdown never runs"
    );
    assert_eq!(handle.stats().dropped_on_shutdown, 2);
}

/// Holds a real dispatcher's counter inside a handler until the key opens.
fn hold(counter: &Mbox) -> GateKey {
    let (gate, key) = gate();
    counter.send(Block(gate));
    key.wait_entered();
    key
}

fn count(counter: &Mbox) -> u32 {
    counter
        .request::<Count, u32>(Count, DEADLINE)
        .expect("counter answers")
}

#[test]
fn a_message_queued_before_cancel_is_never_handled_on_every_dispatcher() {
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env");
    let h = env.handle();
    for disp in common::dispatchers(h) {
        let name = disp.name;
        let revoked = h.stats().timers_revoked;
        let mut coop = h.new_coop();
        let counter = coop.add_with(Counter::default(), &disp.binder(0));
        h.register_coop(coop).expect("registered");

        // A one-shot timer and five periods of a periodic one wait behind a held handler.
        let kept = h.send_delayed(&counter, Duration::from_millis(10), Tick);
        let cancelled = h.send_delayed(&counter, Duration::from_millis(10), Tick);
        let periodic = h.send_periodic(
            &counter,
            Duration::from_millis(6),
            Duration::from_millis(1),
            Tick,
        );
        let key = hold(&counter);
        clock.advance(Duration::from_millis(10));
        cancelled.cancel();
        periodic.cancel();
        key.open();
        assert_eq!(
            count(&counter),
            1,
            "only the kept timer is handled on {name}"
        );
        assert_eq!(h.stats().timers_revoked - revoked, 6, "{name}");
        drop(kept);
    }
    h.stop();
}
