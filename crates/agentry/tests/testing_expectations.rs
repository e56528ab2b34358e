//! The test environment's expectations — a message arrives in a chain, nothing arrives for a
//! while, a message reaches an agent, an agent answers a request — wait on virtual time only
//! as long as needed, and a failed one is a typed error saying what came instead.

use agentry::testing::{TestEnv, TestError};
use agentry::{
    Agent, Ctx, Define, DefineError, Mbox, ReplyTo, Request, RequestError, State, mchain::Mchain,
};
use std::time::Duration;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Reports `Report` to its chain two seconds after `Start`; holds `Ask` requests unanswered.
struct Reporter {
    out: Mchain,
    held: Vec<ReplyTo<u32>>,
    busy: State,
}
struct Start;
struct Report(u32);
struct Ask;
struct Count;

impl Agent for Reporter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.busy = def.state("busy")?;
        def.on(|r: &mut Reporter, ctx: &mut Ctx<Reporter>, _: Start| {
            ctx.send_delayed(&r.out, secs(2), Report(7)).detach();
            ctx.change_state(r.busy).expect("own state");
        })?;
        def.on(
            |r: &mut Reporter, _: &mut Ctx<Reporter>, q: Request<Ask, u32>| {
                r.held.push(q.into_parts().1);
            },
        )?;
        def.on_request(|r: &mut Reporter, _: &mut Ctx<Reporter>, _: Count| r.held.len())?;
        Ok(())
    }
}

fn setup() -> (TestEnv, Mbox, Mchain) {
    let env = TestEnv::new().expect("test env");
    let out = Mchain::unbounded();
    let reporter = env
        .handle()
        .register_agent(Reporter {
            out: out.clone(),
            held: Vec::new(),
            busy: State::DEFAULT,
        })
        .expect("registered");
    (env, reporter, out)
}

#[test]
fn a_message_is_awaited_until_it_arrives_and_no_longer() {
    let (mut env, reporter, out) = setup();
    reporter.send(Start);
    assert_eq!(
        env.expect_no_message(&out, Duration::from_millis(1999)),
        Ok(())
    );
    assert_eq!(
        env.now(),
        Duration::from_millis(1999),
        "the whole window passed"
    );
    let Report(n) = env
        .expect_message::<Report>(&out, secs(60))
        .expect("arrives");
    assert_eq!(n, 7);
    assert_eq!(env.now(), secs(2), "time stops at the arrival");
}

#[test]
fn a_missing_or_different_message_is_a_typed_error() {
    let (mut env, reporter, out) = setup();
    reporter.send(Start);
    assert_eq!(
        env.expect_message::<Report>(&out, secs(1)).err(),
        Some(TestError::NoMessage {
            expected: std::any::type_name::<Report>(),
            within: secs(1),
        })
    );
    assert_eq!(
        env.expect_message::<u32>(&out, secs(1)).err(),
        Some(TestError::WrongMessage {
            expected: "u32",
            got: std::any::type_name::<Report>(),
        })
    );
    out.send(1u8);
    assert_eq!(
        env.expect_no_message(&out, secs(1)).err(),
        Some(TestError::UnexpectedMessage {
            got: "u8",
            at: secs(2),
        })
    );
    out.close(agentry::mchain::Close::DropContent);
    assert_eq!(
        env.expect_message::<u8>(&out, secs(1)).err(),
        Some(TestError::ChainClosed { expected: "u8" })
    );
}

#[test]
fn deliveries_to_an_agent_are_seen_handled_or_not() {
    let (mut env, reporter, _out) = setup();
    reporter.send(Start);
    let delivery = env
        .expect_delivery::<Start>(&reporter, Duration::ZERO)
        .expect("delivered");
    assert!(delivery.handled);
    assert_eq!(delivery.state.as_deref(), Some("busy"));
    assert_eq!(env.state_of(&reporter), Some("busy"));

    reporter.send(Start); // no handler in `busy`
    let delivery = env
        .expect_delivery::<Start>(&reporter, Duration::ZERO)
        .expect("delivered");
    assert!(!delivery.handled);

    assert_eq!(env.expect_no_delivery(&reporter, secs(5)), Ok(()));
    reporter.send(5u64);
    assert_eq!(
        env.expect_no_delivery(&reporter, secs(5)).err(),
        Some(TestError::UnexpectedMessage {
            got: "u64",
            at: secs(5),
        })
    );
}

#[test]
fn requests_are_answered_by_running_the_agent() {
    let (mut env, reporter, _out) = setup();
    assert_eq!(env.request::<Count, usize>(&reporter, Count), Ok(0));
    assert_eq!(
        env.request::<Ask, u32>(&reporter, Ask).err(),
        Some(TestError::NoReply),
        "held, not answered"
    );
    assert_eq!(env.request::<Count, usize>(&reporter, Count), Ok(1));
    assert_eq!(
        env.request::<Start, u8>(&reporter, Start).err(),
        Some(TestError::Request(RequestError::NoHandler))
    );
    assert_eq!(
        reporter.request::<Count, usize>(Count, secs(1)).err(),
        Some(RequestError::SameThread),
        "a blocking request from the test's thread would wait for itself"
    );
}

/// Handles `Open` only in its initial state, then switches to `closed`.
struct Door {
    closed: State,
}
struct Open;

impl Agent for Door {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.closed = def.state("closed")?;
        def.on(|d: &mut Door, ctx: &mut Ctx<Door>, _: Open| {
            ctx.change_state(d.closed).expect("own state");
        })?;
        Ok(())
    }
}

#[test]
fn a_test_env_traces_why_a_message_was_not_handled() {
    use agentry::trace::{CallbackTracer, Outcome, TraceFilter, TraceRecord};
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let mut env = TestEnv::builder()
        .msg_tracing(CallbackTracer::new(move |r: &TraceRecord<'_>| {
            sink.lock()
                .expect("records")
                .push(format!("{:?}", r.outcome));
        }))
        .msg_trace_filter(TraceFilter::new().message::<Open>())
        .build()
        .expect("test env");
    let door = env
        .handle()
        .register_agent(Door {
            closed: State::DEFAULT,
        })
        .expect("registered");
    door.send(Open);
    door.send(Open);
    env.run_until_idle().expect("idle");
    assert_eq!(
        *seen.lock().expect("records"),
        [
            format!("{:?}", Outcome::Handled),
            format!("{:?}", Outcome::Ignored { state: "closed" }),
        ]
    );
    assert_eq!(door.stats().unhandled, 1);
}
