//! Delayed and periodic messages arrive when due — never earlier — on every timer engine and
//! to agents on every dispatcher, driven by a manual clock (no real sleeps).
//!
//! Most tests run in a `TestEnv` (the testing kit): its agents run on the test's thread and
//! its clock moves only in `advance` (time passes deadline by deadline) or `jump` (one leap,
//! like a stalled machine: what fell due is sent in one pass of the timer thread). The test
//! on every dispatcher uses a plain environment on a `ManualClock`: `ManualClock::advance`
//! returns once the due messages are queued, and the test's request that follows is queued
//! behind them in the agent's queue, so its reply reflects every message the timers sent.

mod common;

use agentry::testing::TestEnv;
use agentry::timer::EngineKind;
use agentry::{
    Agent, Ctx, Define, DefineError, Env, Mbox, MultiMbox, timer::Clock, timer::ManualClock,
};
use common::DEADLINE;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone)]
struct Tick(u32);
struct Ticks;

/// Records every tick it gets; answers `Ticks` with the list.
#[derive(Default)]
struct Recorder {
    ticks: Vec<u32>,
}

impl Agent for Recorder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|r: &mut Recorder, _: &mut Ctx<Recorder>, Tick(n): Tick| r.ticks.push(n))?;
        def.on_request(|r: &mut Recorder, _: &mut Ctx<Recorder>, _: Ticks| r.ticks.clone())?;
        Ok(())
    }
}

/// Schedules a tick for the given mbox, `n` seconds later, from its handler.
struct Reminder;

impl Agent for Reminder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |_: &mut Reminder, ctx: &mut Ctx<Reminder>, (to, n): (Mbox, u32)| {
                ctx.send_delayed(&to, Duration::from_secs(n.into()), Tick(n))
                    .detach();
            },
        )?;
        Ok(())
    }
}

const MS: Duration = Duration::from_millis(1);

fn test_env(engine: EngineKind) -> (TestEnv, Mbox) {
    let env = TestEnv::builder()
        .timer_engine(engine)
        .build()
        .expect("test env");
    let recorder = env
        .handle()
        .register_agent(Recorder::default())
        .expect("registered");
    (env, recorder)
}

/// The recorder's ticks, asked in the test env (runs what is queued before the request).
fn recorded(env: &mut TestEnv, recorder: &Mbox) -> Vec<u32> {
    env.request::<Ticks, Vec<u32>>(recorder, Ticks)
        .expect("recorder answers")
}

#[test]
fn a_delayed_message_arrives_when_due_and_not_before() {
    for engine in EngineKind::ALL {
        let (mut env, recorder) = test_env(engine);
        let timer = env.handle().send_delayed(&recorder, 250 * MS, Tick(1));
        assert!(timer.is_active());
        assert_eq!(env.handle().stats().timers, 1);

        env.advance(249 * MS).expect("advance");
        assert_eq!(recorded(&mut env, &recorder), [0u32; 0], "{engine}: early");
        assert!(timer.is_active());

        env.advance(MS).expect("advance");
        assert_eq!(
            recorded(&mut env, &recorder),
            [1],
            "{engine}: due at 250 ms"
        );
        assert!(
            !timer.is_active(),
            "{engine}: a sent one-shot timer is no longer active"
        );
        assert_eq!(env.handle().stats().timers, 0);

        env.advance(10_000 * MS).expect("advance");
        assert_eq!(recorded(&mut env, &recorder), [1], "{engine}: one-shot");
    }
}

#[test]
fn a_periodic_message_comes_every_period_including_missed_ones() {
    for engine in EngineKind::ALL {
        let (mut env, recorder) = test_env(engine);
        let timer = env
            .handle()
            .send_periodic(&recorder, 10 * MS, 20 * MS, Tick(7));

        env.advance(9 * MS).expect("advance");
        assert!(
            recorded(&mut env, &recorder).is_empty(),
            "{engine}: first delivery after 10 ms"
        );
        env.advance(MS).expect("advance");
        assert_eq!(recorded(&mut env, &recorder).len(), 1, "{engine}: at 10 ms");
        env.advance(40 * MS).expect("advance"); // 50 ms: deliveries at 30 and 50
        assert_eq!(
            recorded(&mut env, &recorder).len(),
            3,
            "{engine}: at 30 and 50 ms"
        );
        // A stall: time leaps to 150 ms; 70, 90, 110, 130 and 150 are sent in one burst.
        env.jump(100 * MS);
        assert_eq!(env.run_until_idle(), Ok(5), "{engine}: five missed periods");
        assert_eq!(
            recorded(&mut env, &recorder).len(),
            8,
            "{engine}: missed periods arrive in a burst"
        );

        timer.cancel();
        env.advance(1_000 * MS).expect("advance");
        assert_eq!(
            recorded(&mut env, &recorder).len(),
            8,
            "{engine}: nothing after cancel"
        );
        assert_eq!(env.handle().stats().timers, 0);
    }
}

#[test]
fn timers_due_together_arrive_in_deadline_order() {
    for engine in EngineKind::ALL {
        let (mut env, recorder) = test_env(engine);
        let handles: Vec<_> = [30u32, 10, 20, 40]
            .into_iter()
            .map(|ms| env.handle().send_delayed(&recorder, ms * MS, Tick(ms)))
            .collect();
        // One leap: the timer thread sends all four in one pass.
        env.jump(100 * MS);
        assert_eq!(recorded(&mut env, &recorder), [10, 20, 30, 40], "{engine}");
        drop(handles);
    }
}

/// Subscribes to ticks on a multi mbox; answers `Ticks` with what it got.
struct Subscriber {
    news: MultiMbox,
    got: Vec<u32>,
}

impl Agent for Subscriber {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let news = self.news.clone();
        def.from(&news)
            .on(|s: &mut Subscriber, _: &mut Ctx<Subscriber>, t: Arc<Tick>| s.got.push(t.0))?;
        def.on_request(|s: &mut Subscriber, _: &mut Ctx<Subscriber>, _: Ticks| s.got.clone())?;
        Ok(())
    }
}

#[test]
fn a_multi_mbox_gets_delayed_and_periodic_messages() {
    let mut env = TestEnv::new().expect("test env");
    let news = env.handle().create_mbox();
    let mut coop = env.handle().new_coop();
    let subscribers: Vec<Mbox> = (0..3)
        .map(|_| {
            coop.add(Subscriber {
                news: news.clone(),
                got: Vec::new(),
            })
        })
        .collect();
    env.handle().register_coop(coop).expect("registered");
    let once = env.handle().send_delayed(&news, 5 * MS, Tick(1));
    let every = env.handle().send_periodic(&news, 10 * MS, 10 * MS, Tick(2));
    env.advance(30 * MS).expect("advance");
    for s in &subscribers {
        assert_eq!(
            env.request::<Ticks, Vec<u32>>(s, Ticks).expect("answers"),
            [1, 2, 2, 2]
        );
    }
    drop((once, every));
}

#[test]
fn an_agent_can_schedule_from_its_handlers() {
    let (mut env, recorder) = test_env(EngineKind::Wheel);
    let reminder = env.handle().register_agent(Reminder).expect("registered");
    reminder.send((recorder.clone(), 2u32));
    reminder.send((recorder.clone(), 1u32));
    env.run_until_idle().expect("both timers scheduled");
    assert_eq!(env.handle().stats().timers, 2);
    env.advance(Duration::from_secs(3)).expect("advance");
    assert_eq!(recorded(&mut env, &recorder), [1, 2]);
}

/// A plain environment on a manual clock, for agents on real dispatchers.
fn env_with(engine: EngineKind) -> (Env, ManualClock) {
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .timer_engine(engine)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env");
    (env, clock)
}

fn ticks(recorder: &Mbox) -> Vec<u32> {
    recorder
        .request::<Ticks, Vec<u32>>(Ticks, DEADLINE)
        .expect("recorder answers")
}

#[test]
fn timers_reach_agents_on_every_dispatcher() {
    let (env, clock) = env_with(EngineKind::Heap);
    let h = env.handle();
    for disp in common::dispatchers(h) {
        let name = disp.name;
        let mut coop = h.new_coop();
        let recorder = coop.add_with(Recorder::default(), &disp.binder(0));
        h.register_coop(coop).expect("registered");
        let mut coop = h.new_coop();
        let reminder = coop.add_with(Reminder, &disp.binder(1));
        h.register_coop(coop).expect("registered");

        let once = h.send_delayed(&recorder, 10 * MS, Tick(1));
        let every = h.send_periodic(&recorder, 5 * MS, 10 * MS, Tick(2));
        reminder.send((recorder.clone(), 3u32));
        common::wait_stats(h, &format!("three timers scheduled on {name}"), |s| {
            s.timers == 3
        });
        clock.advance(4 * MS);
        assert_eq!(ticks(&recorder), Vec::<u32>::new(), "{name}: early");
        clock.advance(MS);
        assert_eq!(ticks(&recorder), vec![2], "{name}: at 5 ms");
        clock.advance(10 * MS);
        assert_eq!(ticks(&recorder), vec![2, 1, 2], "{name}: at 15 ms");
        every.cancel();
        clock.advance(Duration::from_secs(3));
        assert_eq!(ticks(&recorder), vec![2, 1, 2, 3], "{name}: at 3.015 s");
        assert_eq!(h.stats().timers, 0, "{name}");
        drop(once);
    }
    h.stop();
}
