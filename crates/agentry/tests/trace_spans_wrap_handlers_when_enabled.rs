//! `tracing` spans: with `EnvBuilder::tracing_spans(true)` every handler runs inside a span
//! named `handle` (target `agentry::delivery`) carrying the agent, its type, the message type
//! and the mbox; without it (the default) no span is made.

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Counts the `handle` spans entered and remembers their fields.
#[derive(Default)]
struct Spans {
    next: AtomicU64,
    entered: AtomicU64,
    fields: Mutex<Vec<String>>,
}

struct Collect(Arc<Spans>);

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let meta = span.metadata();
        if meta.name() == "handle" && meta.target() == "agentry::delivery" {
            let fields: Vec<&str> = meta.fields().iter().map(|f| f.name()).collect();
            self.0.fields.lock().expect("fields").push(fields.join(","));
        }
        Id::from_u64(self.0.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &Id) {
        self.0.entered.fetch_add(1, Ordering::Relaxed);
    }

    fn exit(&self, _: &Id) {}
}

struct Ping;
struct Done;

struct Subject;

impl Agent for Subject {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Subject, _: &mut Ctx<Subject>, _: Ping| {})?;
        def.on_request(|_: &mut Subject, _: &mut Ctx<Subject>, _: Done| ())?;
        Ok(())
    }
}

fn three_pings(env: &Env) -> Mbox {
    let subject = env.handle().register_agent(Subject).expect("registered");
    for _ in 0..3 {
        subject.send(Ping);
    }
    subject
        .request::<Done, ()>(Done, Duration::from_secs(10))
        .expect("answered");
    subject
}

#[test]
fn spans_come_with_the_setting_and_only_with_it() {
    let spans = Arc::new(Spans::default());
    tracing::subscriber::set_global_default(Collect(Arc::clone(&spans))).expect("first subscriber");

    let quiet = Env::builder().autoshutdown(false).build().expect("env");
    three_pings(&quiet);
    assert!(
        spans.fields.lock().expect("fields").is_empty(),
        "off by default"
    );
    assert_eq!(spans.entered.load(Ordering::Relaxed), 0);

    let traced = Env::builder()
        .autoshutdown(false)
        .tracing_spans(true)
        .build()
        .expect("env");
    three_pings(&traced);
    let fields = spans.fields.lock().expect("fields").clone();
    assert_eq!(fields.len(), 4, "three pings and the request: {fields:?}");
    assert_eq!(
        spans.entered.load(Ordering::Relaxed),
        4,
        "each handler ran inside its span"
    );
    assert!(
        fields.iter().all(|f| f == "agent,agent_type,message,mbox"),
        "{fields:?}"
    );
    for env in [quiet, traced] {
        env.handle().stop();
        env.run();
    }
}
