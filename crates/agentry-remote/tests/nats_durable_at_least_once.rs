//! Durable mboxes (JetStream): a message is kept until its handler has returned, delivered
//! again after the receiving process dies (SIGKILL), stored once per message id across a
//! sender restart, handled once while the receiver stays up, and a stream message that does
//! not decode is terminated instead of looping.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, PanicReaction};
use agentry_remote::{Durable, DurableOptions, Gateway, RemoteEvent};
use common::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Messages per kill test.
const N: u32 = 2000;

/// `(id, delivery)` of every message handled.
type Seen = Arc<Mutex<Vec<(String, u64)>>>;

/// Records `(id, delivery)` of every message it handles; sleeps `delay` per message,
/// prints `@@ h <id>` in a child process, panics on the first delivery of id `panic`, and
/// takes 1.5 s over id `slow`.
struct Handler {
    seen: Seen,
    delay: Duration,
    print: bool,
}

impl Agent for Handler {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|h: &mut Handler, _: &mut Ctx<Handler>, m: Durable<Ping>| {
            if m.id() == "panic" && m.delivered() == 1 {
                panic!("the first delivery of `panic` is refused by a panic");
            }
            if m.id() == "slow" {
                std::thread::sleep(Duration::from_millis(1500));
            }
            std::thread::sleep(h.delay);
            if h.print {
                say(&format!("h {}", m.id()));
            }
            h.seen
                .lock()
                .expect("lock")
                .push((m.id().to_owned(), m.delivered()));
        })?;
        Ok(())
    }
}

fn handler(delay: Duration, print: bool) -> (Handler, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    (
        Handler {
            seen: Arc::clone(&seen),
            delay,
            print,
        },
        seen,
    )
}

fn options(ack_wait: Duration, max_ack_pending: usize) -> DurableOptions {
    let mut o = DurableOptions::default();
    o.ack_wait = ack_wait;
    o.max_ack_pending = max_ack_pending;
    o.redeliver_delay = Duration::from_millis(100);
    o
}

/// Receiver child: handles `jobs` through consumer `workers`, 1 ms per message, printing
/// each id, until killed.
fn receiver_child(url: &str) {
    let env = env();
    let h = env.handle();
    let gw = nats_gateway(h, url, "dur");
    let (agent, _) = handler(Duration::from_millis(1), true);
    let agent = register(h, agent);
    gw.subscribe_durable::<Ping>(
        "jobs",
        "workers",
        &agent,
        &options(Duration::from_secs(2), 256),
    )
    .expect("durable subscription");
    say("ready");
    std::thread::sleep(Duration::from_secs(120));
}

/// Sender child: sends `o0..o1999` to `orders` with those ids, confirming every 100 stored.
fn sender_child(url: &str) {
    let env = env();
    let gw = nats_gateway(env.handle(), url, "dur");
    let orders = gw
        .durable_mbox("orders", &DurableOptions::default())
        .expect("durable mbox");
    for i in 0..N {
        orders
            .send_with_id(&format!("o{i}"), Ping(i))
            .expect("accepted");
        if (i + 1) % 100 == 0 {
            orders.flush(WAIT).expect("stored");
            say(&format!("stored {}", i + 1));
            // Paced, so that the parent's kill lands mid-stream.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let s = gw.stats();
    say(&format!(
        "done {} {}",
        s.durable_stored, s.durable_deduplicated
    ));
    gw.close();
}

fn handled_id(line: String) -> String {
    line.strip_prefix("h ")
        .unwrap_or_else(|| panic!("unexpected line {line:?}"))
        .to_owned()
}

fn assert_once(ids: &[String], who: &str) {
    let mut seen = HashSet::new();
    for id in ids {
        assert!(seen.insert(id), "{who} handled {id} twice");
    }
}

#[test]
fn a_receiver_killed_mid_stream_misses_nothing_and_handles_nothing_twice_while_up() {
    const TEST: &str =
        "a_receiver_killed_mid_stream_misses_nothing_and_handles_nothing_twice_while_up";
    if child_role().as_deref() == Some("receiver") {
        return receiver_child(&std::env::var("URL").expect("URL"));
    }
    let Some(bin) = jetstream_or_skip(TEST) else {
        return;
    };
    let server = NatsServer::start_jetstream(&bin);
    let env = env();
    let gw = nats_gateway(env.handle(), &server.url, "dur");
    let jobs = gw
        .durable_mbox("jobs", &DurableOptions::default())
        .expect("durable mbox");
    let mut first = ChildProc::spawn(TEST, "receiver", &[("URL", &server.url)]);
    assert_eq!(first.expect_line(), "ready");
    for i in 0..N {
        jobs.send_with_id(&format!("m{i}"), Ping(i))
            .expect("accepted");
    }
    jobs.flush(WAIT).expect("every message stored");
    assert_eq!(gw.stats().durable_stored, u64::from(N));

    // The first incarnation dies by SIGKILL after ~700 messages, with up to 256 more
    // delivered to it and waiting in its agent's queue.
    let mut before: Vec<String> = Vec::new();
    while before.len() < 700 {
        before.push(handled_id(first.expect_line()));
    }
    first.kill();
    while let Some(l) = first.next_line(Duration::from_millis(200)) {
        before.push(handled_id(l));
    }
    assert!(before.len() < N as usize, "killed mid-stream");
    assert_once(&before, "the first incarnation");

    // Its successor gets the rest — including what the first had delivered and not handled —
    // once `ack_wait` (2 s) has passed.
    let second = ChildProc::spawn(TEST, "receiver", &[("URL", &server.url)]);
    assert_eq!(second.expect_line(), "ready");
    let mut after: Vec<String> = Vec::new();
    let mut all: HashSet<String> = before.iter().cloned().collect();
    while all.len() < N as usize {
        let Some(line) = second.next_line(WAIT) else {
            panic!("{} messages never handled", N as usize - all.len());
        };
        let id = handled_id(line);
        all.insert(id.clone());
        after.push(id);
    }
    // Anything redelivered late would show up within two more ack waits.
    while let Some(l) = second.next_line(Duration::from_secs(4)) {
        after.push(handled_id(l));
    }
    assert_once(&after, "the second incarnation");
    let expected: HashSet<String> = (0..N).map(|i| format!("m{i}")).collect();
    assert_eq!(all, expected, "every message handled");
    // Handled by both: only those handled but not yet acknowledged at the kill (the acks go
    // out as each handler returns). Without acks every one of the first 700 would return.
    let twice = after.iter().filter(|id| before.contains(id)).count();
    eprintln!(
        "first incarnation handled {}, second {}, both {twice}",
        before.len(),
        after.len()
    );
    assert!(twice < 256, "{twice} handled by both incarnations");
    drop(second);
    env.handle().stop();
    env.run();
}

#[test]
fn a_sender_killed_mid_stream_and_restarted_with_the_same_ids_stores_each_once() {
    const TEST: &str =
        "a_sender_killed_mid_stream_and_restarted_with_the_same_ids_stores_each_once";
    if child_role().as_deref() == Some("sender") {
        return sender_child(&std::env::var("URL").expect("URL"));
    }
    let Some(bin) = jetstream_or_skip(TEST) else {
        return;
    };
    let server = NatsServer::start_jetstream(&bin);
    let env = env();
    let h = env.handle();
    let gw = nats_gateway(h, &server.url, "dur");
    let (agent, seen) = handler(Duration::ZERO, false);
    let agent = register(h, agent);
    let sub = gw
        .subscribe_durable::<Ping>(
            "orders",
            "c",
            &agent,
            &options(Duration::from_secs(2), 1024),
        )
        .expect("durable subscription");

    let mut first = ChildProc::spawn(TEST, "sender", &[("URL", &server.url)]);
    let mut stored_before: u32 = 0;
    while stored_before < 800 {
        let line = first.expect_line();
        stored_before = line
            .strip_prefix("stored ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
    }
    first.kill();
    while let Some(line) = first.next_line(Duration::from_millis(200)) {
        assert!(
            !line.starts_with("done"),
            "the first sender was killed mid-stream"
        );
        if let Some(n) = line.strip_prefix("stored ").and_then(|n| n.parse().ok()) {
            stored_before = n;
        }
    }
    assert!(stored_before < N, "the first sender was killed mid-stream");
    // The restarted sender sends everything again, with the same ids.
    let second = ChildProc::spawn(TEST, "sender", &[("URL", &server.url)]);
    let done = loop {
        let line = second.expect_line();
        if let Some(rest) = line.strip_prefix("done ") {
            break rest.to_owned();
        }
    };
    assert!(second.wait_success(), "the second sender finished");
    let counts: Vec<u64> = done
        .split(' ')
        .map(|n| n.parse().expect("number"))
        .collect();
    assert_eq!(
        counts[0],
        u64::from(N),
        "the second sender stored everything"
    );
    assert!(
        counts[1] >= u64::from(stored_before),
        "JetStream dropped the {stored_before}+ ids the first sender had stored (got {})",
        counts[1]
    );

    assert!(
        eventually(|| len(&seen) >= N as usize),
        "every order handled"
    );
    std::thread::sleep(Duration::from_secs(1));
    let mut per_id: HashMap<String, usize> = HashMap::new();
    for (id, _) in seen.lock().expect("lock").iter() {
        *per_id.entry(id.clone()).or_default() += 1;
    }
    assert_eq!(per_id.len(), N as usize);
    assert!(per_id.values().all(|&n| n == 1), "each id handled once");
    // The stream itself holds each id once: the deduplication is JetStream's, not only the
    // receiver's.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let stored = rt.block_on(async {
        let client = async_nats::connect(server.url.as_str())
            .await
            .expect("raw client");
        let js = async_nats::jetstream::new(client);
        let mut stream = js.get_stream(sub.stream()).await.expect("stream");
        stream.info().await.expect("info").state.messages
    });
    assert_eq!(stored, u64::from(N), "the stream holds each id once");
    let s = gw.stats();
    assert_eq!(s.durable_handled, u64::from(N));
    assert_eq!(s.durable_duplicates, 0);
    env.handle().stop();
    env.run();
}

#[test]
fn a_stream_message_that_does_not_decode_is_terminated_not_redelivered() {
    let Some(bin) =
        jetstream_or_skip("a_stream_message_that_does_not_decode_is_terminated_not_redelivered")
    else {
        return;
    };
    let server = NatsServer::start_jetstream(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let gw = Gateway::builder(&registry())
        .namespace("dur")
        .events(&events)
        .connect_nats(h, &server.url)
        .expect("gateway");
    let (agent, seen) = handler(Duration::ZERO, false);
    let agent = register(h, agent);
    let sub = gw
        .subscribe_durable::<Ping>("bad", "c", &agent, &options(Duration::from_millis(300), 64))
        .expect("durable subscription");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let client = rt
        .block_on(async_nats::connect(server.url.as_str()))
        .expect("raw client");
    let js = {
        let _runtime = rt.enter();
        async_nats::jetstream::new(client)
    };
    let payload = |name: &str, version: u32, body: &[u8]| {
        let tag = agentry_remote::envelope::TypeTag {
            name: name.into(),
            version,
        };
        agentry_remote::envelope::Envelope::message(tag, agentry_remote::Codec::Postcard, None)
            .to_nats_payload(body)
    };
    let cases: Vec<bytes::Bytes> = vec![
        bytes::Bytes::from_static(&[7]),     // no envelope
        payload("test.Pong", 1, &[7]),       // another registered type
        payload("test.Ping", 1, &[0xff; 6]), // a payload that does not decode
        payload("test.Ping", 9, &[7]),       // a version not registered
    ];
    rt.block_on(async {
        for payload in cases {
            js.publish("dur.v1.d.bad", payload)
                .await
                .expect("published")
                .await
                .expect("stored");
        }
    });
    gw.durable_mbox("bad", &DurableOptions::default())
        .expect("durable mbox")
        .send(Ping(1))
        .expect("accepted");
    assert!(
        eventually(|| len(&seen) == 1),
        "the good message is handled"
    );
    // Six ack waits: a message left unacknowledged would have come back by now.
    std::thread::sleep(Duration::from_millis(1800));
    let s = gw.stats();
    assert_eq!(s.durable_terminated, 4);
    assert_eq!(s.rejected(), 4);
    assert_eq!(s.rejected_wrong_version, 1);
    assert_eq!(s.durable_received, 5, "nothing delivered again: {s:?}");
    assert_eq!(s.durable_redelivered, 0);
    assert_eq!(s.durable_handled, 1);
    let rejected = log
        .lock()
        .expect("lock")
        .iter()
        .filter(|e| matches!(e, RemoteEvent::Rejected { .. }))
        .count();
    assert_eq!(rejected, 4);
    let info = rt.block_on(async {
        let stream = js.get_stream(sub.stream()).await.expect("stream");
        let mut c: async_nats::jetstream::consumer::PullConsumer =
            stream.get_consumer(sub.consumer()).await.expect("consumer");
        c.info().await.expect("info").clone()
    });
    assert_eq!(info.num_ack_pending, 0, "nothing awaits an ack");
    assert_eq!(info.num_redelivered, 0, "nothing was delivered again");
    env.handle().stop();
    env.run();
}

#[test]
fn an_unhandled_message_comes_again_and_a_slow_one_is_handled_once() {
    let Some(bin) =
        jetstream_or_skip("an_unhandled_message_comes_again_and_a_slow_one_is_handled_once")
    else {
        return;
    };
    let server = NatsServer::start_jetstream(&bin);
    let env = env();
    let h = env.handle();
    let gw = nats_gateway(h, &server.url, "dur");
    let (agent, seen) = handler(Duration::ZERO, false);
    let mut coop = h.new_coop();
    coop.set_panic_reaction(PanicReaction::Ignore);
    let agent = coop.add(agent);
    h.register_coop(coop).expect("registered");
    // `slow` takes 1.5 s: JetStream delivers it again (ack wait 0.5 s) while it is handled.
    gw.subscribe_durable::<Ping>(
        "flaky",
        "c",
        &agent,
        &options(Duration::from_millis(500), 64),
    )
    .expect("durable subscription");
    let flaky = gw
        .durable_mbox("flaky", &DurableOptions::default())
        .expect("durable mbox");
    for (id, n) in [("panic", 1), ("slow", 2), ("plain", 3)] {
        flaky.send_with_id(id, Ping(n)).expect("accepted");
    }
    assert!(eventually(|| len(&seen) >= 3), "all three handled");
    std::thread::sleep(Duration::from_millis(2000));
    let seen = seen.lock().expect("lock").clone();
    let of = |id: &str| -> Vec<u64> {
        seen.iter()
            .filter(|(i, _)| i == id)
            .map(|(_, d)| *d)
            .collect()
    };
    assert_eq!(
        of("slow"),
        vec![1],
        "handled once though delivered again: {seen:?}"
    );
    assert_eq!(of("plain").len(), 1);
    let panicked = of("panic");
    assert_eq!(panicked.len(), 1, "{seen:?}");
    assert!(panicked[0] >= 2, "the panic's message came again");
    let s = gw.stats();
    assert_eq!(s.durable_handled, 3);
    assert!(s.durable_refused >= 1, "{s:?}");
    assert!(
        s.durable_duplicates >= 1,
        "the redelivery of `slow` was dropped: {s:?}"
    );
    assert!(s.durable_redelivered >= 2, "{s:?}");
    env.handle().stop();
    env.run();
}

#[test]
fn messages_sent_while_the_server_is_down_are_stored_after_it_restarts_and_handled_once() {
    let Some(bin) = jetstream_or_skip(
        "messages_sent_while_the_server_is_down_are_stored_after_it_restarts_and_handled_once",
    ) else {
        return;
    };
    let mut server = NatsServer::start_jetstream(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let gw = Gateway::builder(&registry())
        .namespace("dur")
        .events(&events)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .connect_nats(h, &server.url)
        .expect("gateway");
    let (agent, seen) = handler(Duration::ZERO, false);
    let agent = register(h, agent);
    gw.subscribe_durable::<Ping>(
        "outage",
        "c",
        &agent,
        &options(Duration::from_secs(2), 1024),
    )
    .expect("durable subscription");
    let outage = gw
        .durable_mbox("outage", &DurableOptions::default())
        .expect("durable mbox");
    for i in 0..500 {
        outage
            .send_with_id(&format!("a{i}"), Ping(i))
            .expect("accepted");
    }
    outage.flush(WAIT).expect("stored");
    server.kill();
    assert!(eventually(|| !gw.is_connected()), "disconnected");
    // Accepted while the server is down: they wait in the publish queue.
    for i in 0..500 {
        outage
            .send_with_id(&format!("b{i}"), Ping(i))
            .expect("accepted");
    }
    server.restart();
    outage.flush(WAIT).expect("stored after the restart");
    assert!(
        eventually(|| len(&seen) >= 1000),
        "all handled: {}",
        len(&seen)
    );
    std::thread::sleep(Duration::from_millis(500));
    let mut ids: Vec<String> = seen
        .lock()
        .expect("lock")
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "each handled once");
    assert_eq!(n, 1000);
    let s = gw.stats();
    assert_eq!(s.durable_stored, 1000);
    assert_eq!(s.durable_not_stored, 0);
    assert!(
        !log.lock()
            .expect("lock")
            .iter()
            .any(|e| matches!(e, RemoteEvent::Lost { .. })),
        "nothing reported lost"
    );
    env.handle().stop();
    env.run();
}
