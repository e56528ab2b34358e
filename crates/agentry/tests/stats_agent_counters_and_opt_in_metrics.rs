//! Per-agent counters through `Mbox::stats`: messages handled, unhandled (no handler in the
//! current state), dropped (refused, over a limit, revoked); the queue depth and the handler
//! time only where asked for — per environment (`EnvBuilder::queue_depth`, `handler_time`) or
//! per agent (`Define::track_queue_depth`, `measure_handler_time`) — and `Tracked::NotTracked` elsewhere.

mod common;

use agentry::{
    Agent, Ctx, Define, DefineError, DeregReason, Env, HandlerSampling, HandlerTimes, Mbox,
    Tracked, limit::Overload,
};
use common::{DEADLINE, Gate, gate, wait_until};
use std::num::NonZeroU32;
use std::time::Duration;

struct Ping;
struct Pong;
struct Hold;
struct Done;

struct Subject {
    gate: Option<Gate>,
    track: bool,
    time: bool,
}

impl Agent for Subject {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Subject, _: &mut Ctx<Subject>, _: Ping| {})?;
        def.on(|s: &mut Subject, _: &mut Ctx<Subject>, _: Hold| {
            if let Some(g) = &s.gate {
                g.pass();
            }
        })?;
        def.on_request(|_: &mut Subject, _: &mut Ctx<Subject>, _: Done| ())?;
        def.limit::<Ping>(4, Overload::Drop)?;
        if self.track {
            def.track_queue_depth();
        }
        if self.time {
            def.measure_handler_time();
        }
        Ok(())
    }
}

fn subject(gate: Option<Gate>, track: bool, time: bool) -> Subject {
    Subject { gate, track, time }
}

fn done(m: &Mbox) {
    m.request::<Done, ()>(Done, DEADLINE).expect("answered");
}

#[test]
fn handled_unhandled_and_dropped_are_counted_per_agent() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let (g, key) = gate();
    let mut coop = env.handle().new_coop();
    let s = coop.add(subject(Some(g), false, false));
    let id = env.handle().register_coop(coop).expect("registered");
    s.send(Hold);
    key.wait_entered();
    for _ in 0..6 {
        s.send(Ping); // four fit under the limit, two are dropped
    }
    s.send(Pong); // no handler
    key.open();
    done(&s);
    // The request is counted once its demand completes, a moment after the reply.
    wait_until("hold, four pings and the request are counted", || {
        s.stats().handled == 6
    });
    let stats = s.stats();
    assert_eq!(stats.unhandled, 1);
    assert_eq!((stats.limit_dropped, stats.dropped), (2, 2));
    assert_eq!(
        (stats.queue_depth, stats.handler_time),
        (Tracked::NotTracked, Tracked::NotTracked)
    );

    env.handle()
        .deregister_coop(id, DeregReason::Normal)
        .expect("registered");
    wait_until("the subject is gone", || {
        !s.is_alive() && env.handle().stats().agents == 0
    });
    s.send(Ping);
    let stats = s.stats();
    assert_eq!(
        (stats.refused, stats.dropped),
        (1, 3),
        "a send to a gone agent"
    );
    assert_eq!(stats.handled, 6, "kept after the agent left");
    env.handle().stop();
    env.run();
}

#[test]
fn queue_depth_is_tracked_where_asked() {
    for per_env in [true, false] {
        let env = Env::builder()
            .autoshutdown(false)
            .queue_depth(per_env)
            .build()
            .expect("env");
        let (g, key) = gate();
        let s = env
            .handle()
            .register_agent(subject(Some(g), !per_env, false))
            .expect("registered");
        let untracked = env
            .handle()
            .register_agent(subject(None, false, false))
            .expect("registered");
        s.send(Hold);
        key.wait_entered();
        assert_eq!(
            s.stats().queue_depth,
            Tracked::Value(0),
            "the held message was taken"
        );
        for _ in 0..3 {
            s.send(Ping);
        }
        s.send(Pong);
        assert_eq!(s.stats().queue_depth, Tracked::Value(4));
        key.open();
        done(&s);
        assert_eq!(s.stats().queue_depth, Tracked::Value(0));
        let expected = Tracked::from(per_env.then_some(0));
        assert_eq!(
            untracked.stats().queue_depth,
            expected,
            "per env: {per_env}"
        );
        env.handle().stop();
        env.run();
    }
}

#[test]
fn handler_time_is_measured_where_asked() {
    for per_env in [true, false] {
        let env = Env::builder()
            .autoshutdown(false)
            .handler_time(per_env)
            .handler_time_sampling(HandlerSampling::EVERY_RUN)
            .build()
            .expect("env");
        let timed = env
            .handle()
            .register_agent(subject(None, false, !per_env))
            .expect("registered");
        let other = env
            .handle()
            .register_agent(subject(None, false, false))
            .expect("registered");
        let before = timed.stats().handler_time;
        assert_eq!(
            before,
            Tracked::Value(HandlerTimes::default()),
            "nothing handled yet"
        );
        for _ in 0..3 {
            timed.send(Ping);
        }
        done(&timed);
        done(&other);
        // One timed run per message taken from the queue, handled or not.
        let t = timed.stats();
        let times = t.handler_time.value().expect("tracked");
        assert_eq!(times.count(), t.handled + t.unhandled, "per env: {per_env}");
        assert!(times.total > Duration::ZERO);
        assert_eq!(
            other.stats().handler_time.is_tracked(),
            per_env,
            "per env: {per_env}"
        );
        env.handle().stop();
        env.run();
    }
}

/// Handles pings, without limits.
struct Counter;
impl Agent for Counter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Counter, _: &mut Ctx<Counter>, _: Ping| {})?;
        def.on_request(|_: &mut Counter, _: &mut Ctx<Counter>, _: Done| ())?;
        Ok(())
    }
}

#[test]
fn handler_time_times_one_run_in_the_sampling_rate() {
    const AGENTS: usize = 4;
    const RUNS: u64 = 64_000;
    // (rate set on the env, runs per timed run, spans too): the default is one in 256; with
    // spans on, every run takes the observed path (the sampler is asked there, not on the hot
    // path).
    for (set, every, spans) in [
        (None, 256_u64, false),
        (NonZeroU32::new(8), 8, false),
        (NonZeroU32::new(8), 8, true),
    ] {
        let mut builder = Env::builder();
        builder
            .autoshutdown(false)
            .handler_time(true)
            .tracing_spans(spans);
        if let Some(one_in) = set {
            builder.handler_time_sampling(HandlerSampling::one_in(one_in));
        }
        let env = builder.build().expect("env");
        let agents: Vec<Mbox> = (0..AGENTS)
            .map(|_| env.handle().register_agent(Counter).expect("registered"))
            .collect();
        for _ in 0..RUNS - 1 {
            for a in &agents {
                a.send(Ping);
            }
        }
        let mut timed = Vec::new();
        for a in &agents {
            done(a); // the last of its RUNS runs, counted a moment after the reply
            wait_until("every run is counted", || a.stats().handled == RUNS);
            let stats = a.stats();
            let times = stats.handler_time.value().expect("tracked");
            assert!(times.total > Duration::ZERO);
            assert!(times.mean().expect("some runs timed") > Duration::ZERO);
            timed.push(times.count());
        }
        // Intervals are uniform in 1..=2·every−1 (mean `every`, spread ~every/√3): over
        // RUNS runs the count is RUNS/every within a few percent, for each agent.
        let expected = RUNS / every;
        for (i, &count) in timed.iter().enumerate() {
            assert!(
                count.abs_diff(expected) * 5 <= expected,
                "agent {i}: {count} runs timed, expected about {expected} (every {every}, spans {spans})"
            );
        }
        // The thread's sampler picks runs, not agents: their counts differ.
        assert!(
            timed.iter().any(|&c| c != timed[0]),
            "every agent timed the same runs: {timed:?}"
        );
        env.handle().stop();
        env.run();
    }
}

/// Panics on `Poison`; answers `Which` with its incarnation.
struct Phoenix {
    incarnation: u32,
}
struct Poison;
struct Which;
impl Agent for Phoenix {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Phoenix, _: &mut Ctx<Phoenix>, _: Poison| {
            panic!("{}: poison", common::EXPECTED)
        })?;
        def.on(|_: &mut Phoenix, _: &mut Ctx<Phoenix>, _: Ping| {})?;
        def.on_request(|p: &mut Phoenix, _: &mut Ctx<Phoenix>, _: Which| p.incarnation)?;
        Ok(())
    }
}

#[test]
fn a_restarted_agent_stays_timed() {
    use agentry::supervision::{Strategy, Supervision};
    common::quiet_expected_panics();
    let env = Env::builder()
        .autoshutdown(false)
        .handler_time(true)
        .handler_time_sampling(HandlerSampling::EVERY_RUN)
        .build()
        .expect("env");
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne));
    let mut made = 0;
    let phoenix = coop.add_supervised(move || {
        made += 1;
        Phoenix { incarnation: made }
    });
    env.handle().register_coop(coop).expect("registered");
    phoenix.send(Poison);
    for _ in 0..10 {
        phoenix.send(Ping);
    }
    let incarnation = phoenix
        .request::<Which, u32>(Which, DEADLINE)
        .expect("answered");
    assert_eq!(incarnation, 2, "restarted once");
    wait_until("the request is counted", || phoenix.stats().handled >= 11);
    let times = phoenix.stats().handler_time.value().expect("tracked");
    // The second incarnation's eleven runs are timed like the first's.
    assert!(times.count() >= 11, "{} runs timed", times.count());
    env.handle().stop();
    env.run();
}
