//! Message delivery tracing: with a tracer on the environment, every fate of a message is
//! recorded with the agent (id, type), the mbox it came through, the message type and the
//! outcome — handled, ignored (with the state that had no handler), handled by an insend
//! handler, redirected, deferred to a restarting agent's next incarnation, or dropped and why
//! (limit, agent gone, coop deregistering, timer revoked, no subscriber, filtered out).

mod common;

use agentry::supervision::{Strategy, Supervision};
use agentry::trace::{CallbackTracer, DropReason, Outcome, OutcomeKind, TraceRecord};
use agentry::{
    Agent, AgentId, Ctx, Define, DefineError, DeregReason, Env, Mbox, MboxId, State,
    limit::Overload, timer::Clock, timer::ManualClock,
};
use common::{DEADLINE, EXPECTED, Gate, gate, quiet_expected_panics, wait_until};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A record, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    agent: Option<AgentId>,
    agent_type: Option<&'static str>,
    mbox: Option<MboxId>,
    message: &'static str,
    outcome: String,
    kind: OutcomeKind,
}

#[derive(Clone, Default)]
struct Records(Arc<Mutex<Vec<Seen>>>);

impl Records {
    fn tracer(&self) -> CallbackTracer<impl Fn(&TraceRecord<'_>) + Send + Sync + 'static> {
        let records = self.clone();
        CallbackTracer::new(move |r: &TraceRecord<'_>| {
            records.0.lock().expect("records").push(Seen {
                agent: r.agent,
                agent_type: r.agent_type,
                mbox: r.mbox,
                message: r.message,
                outcome: format!("{:?}", r.outcome),
                kind: r.outcome.kind(),
            });
        })
    }

    /// The records of messages whose type name ends with `suffix`.
    fn of(&self, suffix: &str) -> Vec<Seen> {
        self.0
            .lock()
            .expect("records")
            .iter()
            .filter(|s| s.message.ends_with(suffix))
            .cloned()
            .collect()
    }
}

struct Ping;
struct Pong;
struct Work;
struct Echo;
struct Tick;
struct Hold;
struct Boom;
struct Done;
#[derive(Debug)]
struct News;

/// Handles `Ping` (in its `busy` state only: `Pong` is never handled), holds itself on `Hold`.
struct Subject {
    busy: State,
    gate: Option<Gate>,
}

impl Agent for Subject {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.busy = def.state("busy")?;
        def.start_in(self.busy)?;
        def.in_state(self.busy)
            .on(|_: &mut Subject, _: &mut Ctx<Subject>, _: Ping| {})?;
        def.in_state(self.busy)
            .on(|s: &mut Subject, _: &mut Ctx<Subject>, _: Hold| {
                if let Some(g) = &s.gate {
                    g.pass();
                }
            })?;
        def.in_state(self.busy)
            .on(|_: &mut Subject, _: &mut Ctx<Subject>, _: Tick| {})?;
        def.in_state(self.busy)
            .on_request(|_: &mut Subject, _: &mut Ctx<Subject>, _: Done| ())?;
        def.insend(|_: &agentry::InsendCtx<'_>, _: Echo| {})?;
        def.limit::<Work>(0, Overload::Drop)?;
        def.limit::<Pong>(0, Overload::Redirect(def.mbox().clone()))?;
        Ok(())
    }
}

impl Subject {
    fn new(gate: Option<Gate>) -> Self {
        Subject {
            busy: State::DEFAULT,
            gate,
        }
    }
}

struct Fragile;

impl Agent for Fragile {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Boom| panic!("{EXPECTED}: boom"))?;
        def.on(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Ping| {})?;
        def.on_request(|_: &mut Fragile, _: &mut Ctx<Fragile>, _: Done| ())?;
        Ok(())
    }
}

const SUBJECT: &str = "trace_records_every_fate::Subject";

fn sync(mbox: &Mbox) {
    mbox.request::<Done, ()>(Done, DEADLINE)
        .expect("the agent answers");
}

#[test]
fn every_fate_is_recorded_with_its_details() {
    quiet_expected_panics();
    let records = Records::default();
    let clock = ManualClock::new();
    let env = Env::builder()
        .autoshutdown(false)
        .clock(Clock::Manual(clock.clone()))
        .msg_tracing(records.tracer())
        .build()
        .expect("env");
    let (g, key) = gate();
    let mut coop = env.handle().new_coop();
    let subject = coop.add(Subject::new(Some(g)));
    let subject_coop = env.handle().register_coop(coop).expect("registered");
    let id = Some(subject.agent_id().expect("registered"));
    let at_subject = |outcome: Outcome<'_>, message: &'static str| Seen {
        agent: id,
        agent_type: Some(SUBJECT),
        mbox: Some(subject.id()),
        message,
        outcome: format!("{outcome:?}"),
        kind: outcome.kind(),
    };

    subject.send(Ping);
    subject.send(Work);
    subject.send(Echo);
    sync(&subject);
    assert_eq!(
        records.of("::Ping"),
        [at_subject(
            Outcome::Handled,
            "trace_records_every_fate::Ping"
        )]
    );
    assert_eq!(
        records.of("::Work"),
        [at_subject(
            Outcome::Dropped(DropReason::Overloaded),
            "trace_records_every_fate::Work"
        )]
    );
    assert_eq!(
        records.of("::Echo"),
        [at_subject(
            Outcome::InsendHandled,
            "trace_records_every_fate::Echo"
        )]
    );

    // A Pong over its limit is redirected to the subject itself, where it is over the limit
    // again… until the redirect chain is cut.
    subject.send(Pong);
    // (Each redirect is recorded once the send it made returns: the cut comes first.)
    let pongs = records.of("::Pong");
    assert_eq!(pongs.len(), 33, "32 redirects and the cut");
    assert_eq!(
        pongs[0].outcome,
        format!("{:?}", Outcome::Dropped(DropReason::RedirectLoop))
    );
    assert!(pongs[1..].iter().all(|s| s.kind == OutcomeKind::Redirected));

    // A message without a handler in the current state.
    let unhandled = env
        .handle()
        .register_agent(Subject::new(None))
        .expect("registered");
    unhandled.send(Boom);
    sync(&unhandled);
    let boom = records.of("::Boom");
    assert_eq!(boom.len(), 1);
    assert_eq!(
        boom[0].outcome,
        format!("{:?}", Outcome::Ignored { state: "busy" })
    );

    // A timer's message queued behind a held handler, cancelled: revoked.
    let tick = env
        .handle()
        .send_delayed(&subject, Duration::from_millis(5), Tick);
    subject.send(Hold);
    key.wait_entered();
    clock.advance(Duration::from_millis(5));
    tick.cancel();
    // While held, the coop is deregistered: the subject refuses what comes next.
    env.handle()
        .deregister_coop(subject_coop, DeregReason::Normal)
        .expect("registered");
    subject.send(Ping);
    key.open();
    wait_until("the subject is gone", || {
        !subject.is_alive() && env.handle().stats().coops == 1
    });
    subject.send(Ping);
    assert_eq!(
        records.of("::Tick"),
        [at_subject(
            Outcome::Dropped(DropReason::TimerRevoked),
            "trace_records_every_fate::Tick"
        )]
    );
    let pings = records.of("::Ping");
    assert_eq!(
        pings[1..],
        [
            at_subject(
                Outcome::Dropped(DropReason::CoopDeregistering),
                "trace_records_every_fate::Ping"
            ),
            at_subject(
                Outcome::Dropped(DropReason::AgentGone),
                "trace_records_every_fate::Ping"
            )
        ]
    );

    // A multi mbox without subscribers: no agent.
    let news = env.handle().create_mbox();
    news.send(News);
    let seen = records.of("::News");
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].agent, seen[0].mbox), (None, Some(news.id())));
    assert_eq!(
        seen[0].outcome,
        format!("{:?}", Outcome::Dropped(DropReason::NoSubscribers))
    );

    // A subscriber whose filter declines.
    let picky = env
        .handle()
        .register_agent(Picky(news.clone()))
        .expect("registered");
    news.send(News);
    let seen = records.of("::News>");
    assert_eq!(
        seen.len(),
        1,
        "recorded as the Arc<News> the subscriber would get"
    );
    assert_eq!(
        (seen[0].agent, seen[0].mbox),
        (picky.agent_id(), Some(news.id()))
    );
    assert_eq!(
        seen[0].outcome,
        format!("{:?}", Outcome::Dropped(DropReason::FilteredOut))
    );
    env.handle().stop();
    env.run();
}

/// Subscribes to `News` and declines every one.
struct Picky(agentry::MultiMbox);

impl Agent for Picky {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.from(&self.0)
            .filter(|_: &News| false)
            .on(|_: &mut Picky, _: &mut Ctx<Picky>, _: Arc<News>| {})?;
        Ok(())
    }
}

#[test]
fn messages_of_a_failed_agent_are_deferred_then_handled() {
    quiet_expected_panics();
    let records = Records::default();
    let env = Env::builder()
        .autoshutdown(false)
        .msg_tracing(records.tracer())
        .build()
        .expect("env");
    let mut coop = env.handle().new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne));
    let fragile = coop.add_supervised(|| Fragile);
    env.handle().register_coop(coop).expect("registered");
    let first = fragile.agent_id();
    fragile.send(Boom);
    fragile.send(Ping);
    sync(&fragile);
    let second = fragile.agent_id();
    assert_ne!(first, second);
    assert_eq!(
        records
            .of("::Boom")
            .iter()
            .map(|s| s.kind)
            .collect::<Vec<_>>(),
        [OutcomeKind::Panicked]
    );
    let pings: Vec<_> = records
        .of("::Ping")
        .iter()
        .map(|s| (s.agent, s.kind))
        .collect();
    assert_eq!(
        pings,
        [
            (first, OutcomeKind::Deferred),
            (second, OutcomeKind::Handled)
        ]
    );
    env.handle().stop();
    env.run();
}
