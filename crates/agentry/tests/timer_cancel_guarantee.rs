//! Once `TimerHandle::cancel` returns, the timer's message is never handled — even when it is
//! already queued; dropping the handle cancels; `detach` keeps the timer running.

mod common;

use agentry::timer::EngineKind;
use agentry::{Agent, Clock, Ctx, Define, DefineError, Env, InsendCtx, ManualClock, Mbox};
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

fn setup() -> (Env, ManualClock, Mbox) {
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .timer_engine(EngineKind::Heap)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env");
    let counter = env
        .handle()
        .register_agent(Counter::default())
        .expect("registered");
    (env, clock, counter)
}

fn count(counter: &Mbox) -> u32 {
    counter
        .request::<Count, u32>(Count, DEADLINE)
        .expect("counter answers")
}

fn hold(counter: &Mbox) -> GateKey {
    let (gate, key) = gate();
    counter.send(Block(gate));
    key.wait_entered();
    key
}

#[test]
fn a_message_queued_before_cancel_is_never_handled() {
    let (env, clock, counter) = setup();
    let kept = env
        .handle()
        .send_delayed(&counter, Duration::from_millis(10), Tick);
    let cancelled = env
        .handle()
        .send_delayed(&counter, Duration::from_millis(10), Tick);
    let key = hold(&counter); // the agent is busy: both ticks will wait in its queue
    clock.advance(Duration::from_millis(10));
    assert_eq!(
        env.handle().stats().timers,
        0,
        "both timers fired (their messages are queued)"
    );
    cancelled.cancel();
    key.open();
    assert_eq!(
        count(&counter),
        1,
        "only the timer that was not cancelled is handled"
    );
    assert_eq!(env.handle().stats().timers_revoked, 1);
    drop(kept);
    env.handle().stop();
}

#[test]
fn a_periodic_timer_cancelled_with_periods_queued_stops_at_once() {
    let (env, clock, counter) = setup();
    let timer =
        env.handle()
            .send_periodic(&counter, Duration::ZERO, Duration::from_millis(1), Tick);
    clock.advance(Duration::ZERO);
    assert_eq!(count(&counter), 1);
    let key = hold(&counter);
    clock.advance(Duration::from_millis(5)); // five more periods queued behind the gate
    timer.cancel();
    key.open();
    assert_eq!(
        count(&counter),
        1,
        "no queued period is handled after cancel"
    );
    assert_eq!(env.handle().stats().timers_revoked, 5);
    env.handle().stop();
}

#[test]
fn dropping_the_handle_cancels_and_detach_keeps_running() {
    let (env, clock, counter) = setup();
    drop(
        env.handle()
            .send_delayed(&counter, Duration::from_millis(1), Tick),
    );
    env.handle()
        .send_delayed(&counter, Duration::from_millis(1), Tick)
        .detach();
    assert_eq!(
        env.handle().stats().timers,
        1,
        "the dropped timer is gone, the detached one stays"
    );
    clock.advance(Duration::from_millis(1));
    assert_eq!(count(&counter), 1);
    env.handle().stop();
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
    let (env, clock, _) = setup();
    let seen = Arc::new(AtomicU32::new(0));
    let fast = env
        .handle()
        .register_agent(Fast(Arc::clone(&seen)))
        .expect("registered");
    let stays = env
        .handle()
        .send_periodic(&fast, Duration::ZERO, Duration::from_millis(1), Tick);
    clock.advance(Duration::from_millis(2));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        3,
        "at 0, 1 and 2 ms, on the timer thread"
    );
    stays.cancel();
    clock.advance(Duration::from_millis(10));
    assert_eq!(seen.load(Ordering::SeqCst), 3, "nothing after cancel");
    env.handle().stop();
}

#[test]
fn a_handler_may_cancel_its_own_periodic_timer() {
    /// Cancels its own periodic timer at the third tick.
    struct SelfStopping {
        timer: Option<agentry::TimerHandle>,
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
        fn on_start(&mut self, ctx: &mut Ctx<Self>) {
            let me = ctx.mbox().clone();
            self.timer = Some(ctx.send_periodic(
                &me,
                Duration::from_millis(1),
                Duration::from_millis(1),
                Tick,
            ));
        }
    }
    let (env, clock, _) = setup();
    let agent = env
        .handle()
        .register_agent(SelfStopping {
            timer: None,
            ticks: 0,
        })
        .expect("registered");
    common::wait_stats(env.handle(), "the timer is scheduled", |s| s.timers == 1);
    for _ in 0..10 {
        clock.advance(Duration::from_millis(1));
        let _ = agent
            .request::<Count, u32>(Count, DEADLINE)
            .expect("answers");
    }
    assert_eq!(
        agent
            .request::<Count, u32>(Count, DEADLINE)
            .expect("answers"),
        3
    );
    assert_eq!(env.handle().stats().timers, 0);
    env.handle().stop();
}

#[test]
fn timers_pending_at_shutdown_are_counted() {
    let (env, _clock, counter) = setup();
    env.handle()
        .send_delayed(&counter, Duration::from_secs(3600), Tick)
        .detach();
    let handle = env.handle().clone();
    env.handle().stop();
    env.run();
    assert_eq!(handle.stats().dropped_on_shutdown, 1);
    let late = handle.send_delayed(&counter, Duration::ZERO, Tick);
    assert!(
        !late.is_active(),
        "a timer scheduled after shutdown never runs"
    );
    assert_eq!(handle.stats().dropped_on_shutdown, 2);
}
