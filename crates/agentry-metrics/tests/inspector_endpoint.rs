//! The inspector's endpoint over plain TCP: the page, one JSON snapshot with exact counts, an
//! event stream that sends a snapshot at once and then every tick; bad requests get their
//! status (404, 405, 400 for a bad query, 503 over the client limit) and serving goes on; a
//! client that stops reading is dropped, not buffered for; open streams do not hold up the
//! environment; stopping closes the streams and frees the port.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env};
use agentry_metrics::inspector::Inspector;
use common::{DEADLINE, exchange, status};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

struct Echo;
struct Ping(std::sync::mpsc::Sender<()>);

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Echo, _: &mut Ctx<Echo>, Ping(tx): Ping| {
            let _ = tx.send(());
        })?;
        def.on(|_: &mut Echo, _: &mut Ctx<Echo>, _: u32| {})?;
        Ok(())
    }
}

fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

fn get(addr: SocketAddr, target: &str) -> String {
    exchange(
        addr,
        format!("GET {target} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes(),
    )
}

/// Opens `/events?query`, checks the head, returns a reader positioned at the first event.
fn events(addr: SocketAddr, query: &str) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(addr).expect("connected");
    s.set_read_timeout(Some(DEADLINE)).expect("timeout");
    write!(s, "GET /events?{query} HTTP/1.1\r\nHost: test\r\n\r\n").expect("sent");
    let mut r = BufReader::new(s);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("head line");
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head.push_str(&line);
    }
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/event-stream\r\n"),
        "{head}"
    );
    r
}

/// The next event's JSON.
fn next_event(r: &mut BufReader<TcpStream>) -> Value {
    loop {
        let mut line = String::new();
        let n = r
            .read_line(&mut line)
            .expect("an event before the deadline");
        assert!(n > 0, "the stream ended");
        if let Some(json) = line.strip_prefix("data: ") {
            return serde_json::from_str(json).expect("JSON");
        }
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn page_snapshot_and_events_show_the_environment() {
    let env = Env::new().expect("env");
    let h = env.handle();
    let echoes: Vec<_> = (0..3)
        .map(|_| h.register_agent(Echo).expect("echo"))
        .collect();
    for _ in 0..5 {
        echoes[1].send(7_u32);
    }
    let server = Inspector::builder(h)
        .tick(Duration::from_millis(20))
        .build()
        .expect("inspector")
        .serve("127.0.0.1:0")
        .expect("serving");
    let addr = server.local_addr();

    let page = get(addr, "/");
    assert_eq!(status(&page), 200);
    assert!(page.contains("Content-Type: text/html; charset=utf-8\r\n"));
    assert!(body(&page).contains("<title>agentry inspector</title>"));
    // Self-contained: nothing is loaded from anywhere else.
    for external in ["<script src", "<link", "url(", "@import", "https://"] {
        assert!(
            !body(&page).contains(external),
            "the page loads something: {external}"
        );
    }

    let mut snap = Value::Null;
    wait_until("the five messages are handled", || {
        let answer = get(addr, "/snapshot.json?sort=handled&limit=2");
        assert_eq!(status(&answer), 200, "{answer}");
        snap = serde_json::from_str(body(&answer)).expect("JSON");
        snap["agents"][0]["handled"] == 5
    });
    assert_eq!(snap["agents_total"], 3);
    assert_eq!(snap["matched"], 3);
    assert_eq!(snap["agents"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        snap["agents"][0]["id"],
        echoes[1].agent_id().expect("id").to_string()
    );
    assert_eq!(snap["agents"][0]["state"], "default");
    assert_eq!(
        snap["agents"][0]["queue_depth"],
        Value::Null,
        "not tracked: null, not 0"
    );
    assert_eq!(snap["query"]["sort"], "handled");
    assert_eq!(snap["coops"].as_array().map(Vec::len), Some(2));

    // The stream: a snapshot at once, then every tick; its filter applies.
    let mut stream = events(addr, "filter=Echo&limit=1");
    let first = next_event(&mut stream);
    assert_eq!(
        (
            first["matched"].clone(),
            first["agents"].as_array().map(Vec::len)
        ),
        (3.into(), Some(1))
    );
    echoes[0].send(7_u32);
    let mut later = first.clone();
    wait_until("a later tick shows the new message", || {
        later = next_event(&mut stream);
        later["agents"][0]["handled"] == 1
    });
    assert!(later["t_ms"].as_f64() > first["t_ms"].as_f64());
    assert_eq!(server.streams(), 1);

    drop(stream);
    server.stop();
    h.stop();
    env.run();
}

#[test]
fn bad_requests_get_their_status_and_serving_goes_on() {
    let env = Env::new().expect("env");
    let server = Inspector::new(env.handle())
        .serve("127.0.0.1:0")
        .expect("serving");
    let addr = server.local_addr();
    let cases: [(&[u8], u16); 8] = [
        (b"GET /metrics HTTP/1.1\r\n\r\n", 404),
        (b"POST / HTTP/1.1\r\n\r\n", 405),
        (b"GET /events?sort=size HTTP/1.1\r\n\r\n", 400),
        (b"GET /snapshot.json?limit=0 HTTP/1.1\r\n\r\n", 400),
        (b"GET /snapshot.json?filter=%zz HTTP/1.1\r\n\r\n", 400),
        (b"GET /events?what=1 HTTP/1.1\r\n\r\n", 400),
        (b"garbage\r\n\r\n", 400),
        (b"GET / HTTP/9.9\r\n\r\n", 505),
    ];
    for (request, expected) in cases {
        let answer = exchange(addr, request);
        assert_eq!(status(&answer), expected, "{request:?}: {answer}");
        assert_eq!(status(&get(addr, "/snapshot.json")), 200, "still serving");
    }
    server.stop();
    env.handle().stop();
    env.run();
}

#[test]
fn streams_are_bounded_and_do_not_hold_up_the_environment() {
    let env = Env::new().expect("env");
    let h = env.handle();
    // 1000 agents: each event of a full page is ~200 kB, so a reader that stops reading
    // passes the backlog bound within a few ticks.
    let echoes: Vec<_> = (0..1000)
        .map(|_| h.register_agent(Echo).expect("echo"))
        .collect();
    let server = Inspector::builder(h)
        .tick(Duration::from_millis(10))
        .max_clients(3)
        .build()
        .expect("inspector")
        .serve("127.0.0.1:0")
        .expect("serving");
    let addr = server.local_addr();

    let mut reading = events(addr, "limit=1");
    next_event(&mut reading);
    let _stalled = events(addr, "limit=1000"); // never read again
    let mut third = events(addr, "filter=nothing");
    next_event(&mut third);
    wait_until("three streams are open", || server.streams() == 3);
    let over = get(addr, "/events");
    assert_eq!(status(&over), 503, "{over}");

    // The environment keeps handling messages while the streams are served.
    let (tx, rx) = std::sync::mpsc::channel();
    for e in &echoes[..10] {
        e.send(Ping(tx.clone()));
    }
    for _ in 0..10 {
        rx.recv_timeout(DEADLINE).expect("pong");
    }

    // The stalled reader is dropped; the others keep getting events.
    wait_until("the stalled stream is dropped", || server.streams() == 2);
    next_event(&mut reading);
    next_event(&mut third);
    // A place is free again.
    let mut again = events(addr, "limit=1");
    next_event(&mut again);

    // Stopping closes every stream and frees the port.
    server.stop();
    let mut rest = Vec::new();
    if let Err(e) = std::io::Read::read_to_end(&mut reading, &mut rest) {
        // Closed (a reset if events were still unread), not left open until the timeout.
        let kind = e.kind();
        assert!(
            !matches!(
                kind,
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{e}"
        );
    }
    let _ = TcpListener::bind(addr).expect("the port is free again");
    h.stop();
    env.run();
}

#[test]
fn builder_settings_are_checked() {
    let env = Env::new().expect("env");
    let e = Inspector::builder(env.handle())
        .tick(Duration::from_millis(1))
        .build()
        .expect_err("too short a tick");
    assert!(
        matches!(e, agentry_metrics::BuildError::InvalidSetting(_)),
        "{e:?}"
    );
    let e = Inspector::builder(env.handle())
        .max_clients(0)
        .build()
        .expect_err("no client");
    assert!(
        matches!(e, agentry_metrics::BuildError::InvalidSetting(_)),
        "{e:?}"
    );
    env.handle().stop();
    env.run();
}
