//! A restarted agent keeps its mbox and its messages: everything sent to it from the failure
//! on — queued before the failure, or sent (or published to a multi mbox it reads) while it is
//! suspended — is handled by the next incarnation, in send order (only the failing message is
//! consumed by the panic). A deferred
//! timer message cancelled before the next incarnation takes it is revoked, not handled. If the
//! coop leaves while messages are deferred, they are dropped and counted; a deferred request
//! is answered `AgentGone`.

mod common;

use agentry::supervision::{Backoff, Strategy, Supervision};
use agentry::{
    Agent, Ctx, Define, DefineError, DeregReason, Env, Mbox, MultiMbox, RequestError, timer::Clock,
    timer::ManualClock,
};
use common::{DEADLINE, EXPECTED, Log, quiet_expected_panics, wait_stats, wait_until};
use std::sync::Arc;
use std::time::Duration;

/// A number to record; 0 is poison.
struct Num(u32);
struct Tick;
/// Asks which incarnation answers.
struct Which;

/// Published through the recorder's multi mbox.
struct Headline(u32);

struct Recorder {
    incarnation: u32,
    log: Log,
    news: MultiMbox,
}

impl Agent for Recorder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.from(&self.news).on(
            |r: &mut Recorder, _: &mut Ctx<Recorder>, h: Arc<Headline>| {
                r.log.push(format!("#{}:news{}", r.incarnation, h.0));
            },
        )?;
        def.on(|r: &mut Recorder, _: &mut Ctx<Recorder>, Num(n): Num| {
            assert!(n != 0, "{EXPECTED}: poison");
            r.log.push(format!("#{}:{n}", r.incarnation));
        })?;
        def.on(|r: &mut Recorder, _: &mut Ctx<Recorder>, _: Tick| {
            r.log.push(format!("#{}:tick", r.incarnation));
        })?;
        def.on_request(|r: &mut Recorder, _: &mut Ctx<Recorder>, _: Which| r.incarnation)?;
        Ok(())
    }
}

const SECOND: Duration = Duration::from_secs(1);

/// A recorder supervised with a 1 s backoff, on a manual clock; it reads `news`.
fn setup(log: &Log) -> (Env, ManualClock, Mbox, agentry::CoopId, MultiMbox) {
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env");
    let news = env.handle().create_mbox();
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne).backoff(Backoff::Fixed(SECOND)));
    let log = log.clone();
    let mut made = 0;
    let for_recorder = news.clone();
    let recorder = coop.add_supervised(move || {
        made += 1;
        Recorder {
            incarnation: made,
            log: log.clone(),
            news: for_recorder.clone(),
        }
    });
    let id = env.handle().register_coop(coop).expect("registered");
    (env, clock, recorder, id, news)
}

#[test]
fn messages_after_the_failure_reach_the_next_incarnation_in_order() {
    quiet_expected_panics();
    let log = Log::default();
    let (env, clock, recorder, _, news) = setup(&log);
    for n in [1, 2, 0, 3, 4] {
        recorder.send(Num(n));
    }
    wait_stats(env.handle(), "the backoff timer is scheduled", |s| {
        s.timers == 1
    });
    // Suspended now: these are deferred too, published ones included.
    recorder.send(Num(5));
    news.send(Headline(1));
    recorder.send(Num(6));
    clock.advance(SECOND);
    assert_eq!(
        recorder.request::<Which, u32>(Which, DEADLINE),
        Ok(2),
        "a request follows the deferred messages"
    );
    assert_eq!(
        log.take(),
        ["#1:1", "#1:2", "#2:3", "#2:4", "#2:5", "#2:news1", "#2:6"]
    );
    assert_eq!(
        news.subscriber_count::<Headline>(),
        1,
        "subscribed once, again"
    );
    // 1, 2, the poison (its handler ran), 3..=6, the headline and the request — which is
    // counted once its demand completes, a moment after the reply.
    wait_until("every message is counted", || recorder.stats().handled == 9);
    let stats = recorder.stats();
    assert_eq!((stats.unhandled, stats.panics), (0, 1));
    assert_eq!((stats.restarts, stats.dropped), (1, 0));
    env.handle().stop();
    env.run();
}

#[test]
fn a_deferred_timer_message_cancelled_meanwhile_is_revoked() {
    quiet_expected_panics();
    let log = Log::default();
    let (env, clock, recorder, _, _) = setup(&log);
    let tick = env
        .handle()
        .send_delayed(&recorder, Duration::from_millis(10), Tick);
    recorder.send(Num(0));
    wait_stats(env.handle(), "the backoff timer is scheduled", |s| {
        s.timers == 2
    });
    clock.advance(Duration::from_millis(10));
    // The tick was sent while the recorder is suspended, so it is deferred; cancel it.
    tick.cancel();
    clock.advance(SECOND);
    assert_eq!(recorder.request::<Which, u32>(Which, DEADLINE), Ok(2));
    assert!(log.take().is_empty(), "the cancelled tick was not handled");
    assert_eq!(env.handle().stats().timers_revoked, 1);
    assert_eq!(recorder.stats().dropped, 1);
    env.handle().stop();
    env.run();
}

#[test]
fn deferred_messages_are_dropped_and_counted_if_the_coop_leaves() {
    quiet_expected_panics();
    let log = Log::default();
    let (env, _clock, recorder, id, _) = setup(&log);
    recorder.send(Num(0));
    wait_stats(env.handle(), "the backoff timer is scheduled", |s| {
        s.timers == 1
    });
    recorder.send(Num(7));
    recorder.send(Num(8));
    // Deferred if it arrives before the deregistration, refused if after: `AgentGone` and
    // counted either way.
    let asker = recorder.clone();
    let request = std::thread::spawn(move || asker.request::<Which, u32>(Which, DEADLINE));
    let before = env.handle().stats().dead_letters;
    env.handle()
        .deregister_coop(id, DeregReason::Normal)
        .expect("registered");
    assert_eq!(
        request.join().expect("the asker returns"),
        Err(RequestError::AgentGone)
    );
    let stats = wait_stats(env.handle(), "the coop is gone", |s| s.coops == 0);
    assert!(log.take().is_empty());
    assert_eq!(
        stats.dead_letters - before,
        3,
        "two messages and the request"
    );
    assert_eq!(recorder.stats().dropped, 3);
    assert_eq!(stats.timers, 0, "the backoff timer was cancelled");
    env.handle().stop();
    env.run();
}
