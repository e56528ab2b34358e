//! Delayed and periodic messages arrive when due — never earlier — on every timer engine,
//! driven by a manual clock (no real sleeps).
//!
//! Synchronisation: `ManualClock::advance` returns once the due messages are queued; the
//! test's request that follows is queued behind them on the same dispatcher queue, so its
//! reply reflects every message the timers sent.

mod common;

use agentry::timer::EngineKind;
use agentry::{Agent, Clock, Ctx, Define, DefineError, Env, ManualClock, Mbox, MultiMbox};
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

fn ticks(recorder: &Mbox) -> Vec<u32> {
    recorder
        .request::<Ticks, Vec<u32>>(Ticks, DEADLINE)
        .expect("recorder answers")
}

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

const MS: Duration = Duration::from_millis(1);

#[test]
fn a_delayed_message_arrives_when_due_and_not_before() {
    for engine in EngineKind::ALL {
        let (env, clock) = env_with(engine);
        let recorder = env
            .handle()
            .register_agent(Recorder::default())
            .expect("registered");
        let timer = env.handle().send_delayed(&recorder, 250 * MS, Tick(1));
        assert!(timer.is_active());
        assert_eq!(env.handle().stats().timers, 1);

        clock.advance(249 * MS);
        assert_eq!(ticks(&recorder), Vec::<u32>::new(), "{engine}: early");
        assert!(timer.is_active());

        clock.advance(MS);
        assert_eq!(ticks(&recorder), vec![1], "{engine}: due at 250 ms");
        assert!(
            !timer.is_active(),
            "{engine}: a sent one-shot timer is no longer active"
        );
        assert_eq!(env.handle().stats().timers, 0);

        clock.advance(10_000 * MS);
        assert_eq!(ticks(&recorder), vec![1], "{engine}: one-shot");
        env.handle().stop();
    }
}

#[test]
fn a_periodic_message_comes_every_period_including_missed_ones() {
    for engine in EngineKind::ALL {
        let (env, clock) = env_with(engine);
        let recorder = env
            .handle()
            .register_agent(Recorder::default())
            .expect("registered");
        let timer = env
            .handle()
            .send_periodic(&recorder, 10 * MS, 20 * MS, Tick(7));

        clock.advance(9 * MS);
        assert!(
            ticks(&recorder).is_empty(),
            "{engine}: first delivery after 10 ms"
        );
        clock.advance(MS);
        assert_eq!(ticks(&recorder).len(), 1, "{engine}: at 10 ms");
        clock.advance(40 * MS); // 50 ms: deliveries at 30 and 50
        assert_eq!(ticks(&recorder).len(), 3, "{engine}: at 30 and 50 ms");
        clock.advance(100 * MS); // 150 ms: 70, 90, 110, 130, 150 delivered in one burst
        assert_eq!(
            ticks(&recorder).len(),
            8,
            "{engine}: missed periods arrive in a burst"
        );

        timer.cancel();
        clock.advance(1_000 * MS);
        assert_eq!(ticks(&recorder).len(), 8, "{engine}: nothing after cancel");
        assert_eq!(env.handle().stats().timers, 0);
        env.handle().stop();
    }
}

#[test]
fn timers_due_together_arrive_in_deadline_order() {
    for engine in EngineKind::ALL {
        let (env, clock) = env_with(engine);
        let recorder = env
            .handle()
            .register_agent(Recorder::default())
            .expect("registered");
        let handles: Vec<_> = [30u32, 10, 20, 40]
            .into_iter()
            .map(|ms| env.handle().send_delayed(&recorder, ms * MS, Tick(ms)))
            .collect();
        clock.advance(100 * MS);
        assert_eq!(ticks(&recorder), vec![10, 20, 30, 40], "{engine}");
        drop(handles);
        env.handle().stop();
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
    let (env, clock) = env_with(EngineKind::Heap);
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
    let once = env.handle().send_delayed_multi(&news, 5 * MS, Tick(1));
    let every = env
        .handle()
        .send_periodic_multi(&news, 10 * MS, 10 * MS, Tick(2));
    clock.advance(30 * MS);
    for s in &subscribers {
        assert_eq!(
            s.request::<Ticks, Vec<u32>>(Ticks, DEADLINE)
                .expect("answers"),
            vec![1, 2, 2, 2]
        );
    }
    drop((once, every));
    env.handle().stop();
}

#[test]
fn an_agent_can_schedule_from_its_handlers() {
    /// Schedules a tick for the sender after the given number of seconds.
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
    let (env, clock) = env_with(EngineKind::Wheel);
    let recorder = env
        .handle()
        .register_agent(Recorder::default())
        .expect("registered");
    let reminder = env.handle().register_agent(Reminder).expect("registered");
    reminder.send((recorder.clone(), 2u32));
    reminder.send((recorder.clone(), 1u32));
    common::wait_stats(env.handle(), "both timers scheduled", |s| s.timers == 2);
    clock.advance(Duration::from_secs(3));
    assert_eq!(ticks(&recorder), vec![1, 2]);
    env.handle().stop();
}
