//! Message-trace filters: only records that pass the environment's filter reach the tracer —
//! by agent, agent type, mbox, message type (sent directly or through a multi mbox), outcome,
//! or a custom predicate; criteria of one kind are alternatives, different kinds must all
//! hold. The filter can be replaced while the environment runs; without tracing that is a
//! typed error.

use agentry::trace::{CallbackTracer, OutcomeKind, TraceFilter, TraceRecord};
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, MultiMbox, TraceError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Ping;
struct Pong;
struct Done;

/// Handles `Ping` (direct and shared), not `Pong`.
struct Subject(MultiMbox);

impl Agent for Subject {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Subject, _: &mut Ctx<Subject>, _: Ping| {})?;
        def.on_request(|_: &mut Subject, _: &mut Ctx<Subject>, _: Done| ())?;
        def.from(&self.0)
            .on(|_: &mut Subject, _: &mut Ctx<Subject>, _: Arc<Ping>| {})?;
        Ok(())
    }
}

/// Like `Subject`, another type.
struct Other;

impl Agent for Other {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Other, _: &mut Ctx<Other>, _: Ping| {})?;
        def.on_request(|_: &mut Other, _: &mut Ctx<Other>, _: Done| ())?;
        Ok(())
    }
}

type Seen = Arc<Mutex<Vec<(String, OutcomeKind, Option<agentry::AgentId>)>>>;

fn done(m: &Mbox) {
    m.request::<Done, ()>(Done, Duration::from_secs(10))
        .expect("answered");
}

/// Sends one round of traffic: Ping and Pong to both agents, a shared Ping.
fn traffic(subject: &Mbox, other: &Mbox, news: &MultiMbox) {
    for m in [subject, other] {
        m.send(Ping);
        m.send(Pong);
    }
    news.send(Ping);
    done(subject);
    done(other);
}

fn short(record: &TraceRecord<'_>) -> String {
    let message = record.message.rsplit("::").next().unwrap_or(record.message);
    let agent = record
        .agent_type
        .map_or("-", |t| t.rsplit("::").next().unwrap_or(t));
    format!("{agent}:{message}")
}

#[test]
fn only_records_the_filter_accepts_reach_the_tracer() {
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let env = Env::builder()
        .autoshutdown(false)
        .msg_tracing(CallbackTracer::new(move |r: &TraceRecord<'_>| {
            if r.message.contains("::Done") {
                return;
            }
            log.lock()
                .expect("seen")
                .push((short(r), r.outcome.kind(), r.agent));
        }))
        .msg_trace_filter(TraceFilter::new().outcome(OutcomeKind::Ignored))
        .build()
        .expect("env");
    let news = env.handle().create_mbox();
    let subject = env
        .handle()
        .register_agent(Subject(news.clone()))
        .expect("registered");
    let other = env.handle().register_agent(Other).expect("registered");
    let take = || std::mem::take(&mut *seen.lock().expect("seen"));

    traffic(&subject, &other, &news);
    let got = take();
    assert_eq!(
        got.iter()
            .map(|(s, k, _)| (s.as_str(), *k))
            .collect::<Vec<_>>(),
        [
            ("Subject:Pong", OutcomeKind::Ignored),
            ("Other:Pong", OutcomeKind::Ignored)
        ]
    );

    // Message type, direct or shared; and agent type.
    env.handle()
        .set_msg_trace_filter(TraceFilter::new().message::<Ping>().agent_type::<Subject>())
        .expect("tracing is on");
    traffic(&subject, &other, &news);
    let got = take();
    assert_eq!(
        got.iter()
            .map(|(s, k, _)| (s.as_str(), *k))
            .collect::<Vec<_>>(),
        [
            ("Subject:Ping", OutcomeKind::Handled),
            // Through the multi mbox: `Arc<Ping>`.
            ("Subject:Ping>", OutcomeKind::Handled)
        ]
    );

    // By agent id, or by the mbox a message came through.
    env.handle()
        .set_msg_trace_filter(
            TraceFilter::new()
                .agent(other.agent_id().expect("registered"))
                .outcome(OutcomeKind::Handled),
        )
        .expect("tracing is on");
    traffic(&subject, &other, &news);
    assert_eq!(
        take().iter().map(|(s, ..)| s.clone()).collect::<Vec<_>>(),
        ["Other:Ping"]
    );
    env.handle()
        .set_msg_trace_filter(TraceFilter::new().mbox(news.id()))
        .expect("tracing is on");
    traffic(&subject, &other, &news);
    assert_eq!(
        take().iter().map(|(s, ..)| s.clone()).collect::<Vec<_>>(),
        ["Subject:Ping>"]
    );

    // A custom predicate, on top of the other criteria.
    let subject_id = subject.agent_id();
    env.handle()
        .set_msg_trace_filter(
            TraceFilter::new()
                .message::<Pong>()
                .custom(move |r| r.agent == subject_id),
        )
        .expect("tracing is on");
    traffic(&subject, &other, &news);
    assert_eq!(
        take().iter().map(|(s, ..)| s.clone()).collect::<Vec<_>>(),
        ["Subject:Pong"]
    );
    env.handle().stop();
    env.run();
}

#[test]
fn replacing_the_filter_without_tracing_is_a_typed_error() {
    let env = Env::new().expect("env");
    assert_eq!(
        env.handle().set_msg_trace_filter(TraceFilter::new()),
        Err(TraceError::Disabled)
    );
    env.run();
}
