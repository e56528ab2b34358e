//! The direct TCP link: messages, requests, failures, bad frames, handshake checks,
//! heartbeats, reconnection — and two processes talking without a broker.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, EnvHandle};
use agentry_remote::frame::{self, Frame};
use agentry_remote::{
    Codec, DecodeError, Gateway, RejectKind, RemoteFailure, RemoteReply, RequestError,
    envelope::Envelope, envelope::TypeTag,
};
use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn builder(ns: &str) -> agentry_remote::GatewayBuilder {
    let mut b = Gateway::builder(&registry());
    b.namespace(ns)
        .reconnect_backoff(Duration::from_millis(10), Duration::from_millis(100));
    b
}

fn listen(h: &EnvHandle, ns: &str) -> Gateway {
    builder(ns)
        .listen_link(h, "127.0.0.1:0")
        .expect("listening")
}

fn connect(h: &EnvHandle, ns: &str, to: SocketAddr) -> Gateway {
    builder(ns).connect_link(h, to).expect("connected")
}

#[test]
fn messages_requests_and_failures_cross_the_link() {
    let env = env();
    let h = env.handle();
    let server = listen(h, "direct");
    let addr = server.local_addr().expect("bound");
    let client = connect(h, "direct", addr);
    assert!(client.is_connected());
    assert!(server.wait_connected(WAIT));

    let (c, seen) = Collector::<Ping>::new(None);
    server
        .subscribe::<Ping>("in", &register(h, c))
        .expect("subscribe");
    server
        .serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");
    let (c, back) = Collector::<Pong>::new(None);
    client
        .subscribe::<Pong>("back", &register(h, c))
        .expect("subscribe");

    let input = client.mbox("in").expect("name");
    for i in 0..5000 {
        input.send(Ping(i)).expect("buffered");
    }
    assert!(eventually(|| len(&seen) == 5000));
    assert_eq!(
        *seen.lock().expect("lock"),
        (0..5000).map(Ping).collect::<Vec<_>>()
    );
    // Both directions.
    let b = server.mbox("back").expect("name");
    for i in 0..100 {
        b.send(Pong(i)).expect("buffered");
    }
    assert!(eventually(|| len(&back) == 100));

    let calc = client.mbox("calc").expect("name");
    for i in 0..100 {
        assert_eq!(
            calc.request::<Add, Sum>(Add { a: i, b: 2 }, WAIT),
            Ok(Sum(i + 2))
        );
    }
    let replies: Arc<Mutex<Vec<RemoteReply<Sum>>>> = Arc::default();
    let sink = register(h, Sink(Arc::clone(&replies)));
    for i in 0..1000 {
        calc.send_request::<Add, Sum>(Add { a: i, b: 0 }, WAIT, &sink)
            .expect("sent");
    }
    assert!(eventually(|| replies.lock().expect("lock").len() == 1000));
    assert!(
        replies
            .lock()
            .expect("lock")
            .iter()
            .all(|r| r.result.is_ok())
    );

    // Nobody serves the name on the other side: answered at once.
    assert_eq!(
        client
            .mbox("nobody")
            .expect("name")
            .request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT),
        Err(RequestError::Remote(RemoteFailure::NoRoute))
    );
    let (cs, ss) = (client.stats(), server.stats());
    assert_eq!(
        (cs.rejected(), cs.lost(), ss.rejected(), ss.lost()),
        (0, 0, 0, 0)
    );
    assert_eq!(ss.delivered, 5000);
    h.stop();
    env.run();
}

/// A raw peer: does the handshake, then sends and reads frames by hand.
struct RawPeer {
    s: TcpStream,
    buf: Vec<u8>,
}

impl RawPeer {
    fn connect(addr: SocketAddr, ns: &str) -> RawPeer {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(WAIT)).expect("timeout");
        let mut p = RawPeer { s, buf: Vec::new() };
        let mut hello = Vec::new();
        frame::encode_hello(&mut hello, ns, "rawpeer");
        p.s.write_all(&hello).expect("hello");
        p
    }

    /// The next frame's body (skipping nothing).
    fn next_body(&mut self) -> Vec<u8> {
        loop {
            if let Some((body, used)) = frame::split(&self.buf) {
                let b = body.to_vec();
                self.buf.drain(..used);
                return b;
            }
            let mut chunk = [0u8; 4096];
            let n = self.s.read(&mut chunk).expect("read");
            assert!(n > 0, "peer closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The next Message frame's envelope.
    fn next_message(&mut self) -> Envelope {
        loop {
            let b = self.next_body();
            match Frame::decode(&b).expect("valid frame") {
                Frame::Message { envelope, .. } => return envelope,
                Frame::Heartbeat | Frame::Hello { .. } => continue,
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("write");
    }

    fn message(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        name: &str,
        version: u32,
        payload: &[u8],
    ) {
        let env = Envelope::message(
            TypeTag {
                name: name.into(),
                version,
            },
            Codec::Postcard,
            Some(1),
        );
        let mut b = Vec::new();
        frame::encode_message(&mut b, subject, reply, &env, payload);
        self.send(&b);
    }
}

#[test]
fn bad_frames_are_rejected_and_the_link_keeps_working() {
    let env = env();
    let h = env.handle();
    let server = builder("raw")
        .max_frame(4096)
        .listen_link(h, "127.0.0.1:0")
        .expect("listening");
    let (c, seen) = Collector::<Ping>::new(None);
    server
        .subscribe::<Ping>("in", &register(h, c))
        .expect("subscribe");
    server
        .serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");
    let mut p = RawPeer::connect(server.local_addr().expect("bound"), "raw");
    assert!(matches!(
        Frame::decode(&p.next_body()),
        Ok(Frame::Hello {
            namespace: "raw",
            ..
        })
    ));
    assert!(server.wait_connected(WAIT));

    p.send(&[0, 0, 0, 1, 9]); // unknown frame kind
    p.send(&[0, 0, 0, 3, 3, 0x80, 0]); // bad flags
    let mut hello = Vec::new();
    frame::encode_hello(&mut hello, "raw", "again");
    p.send(&hello); // unexpected Hello
    let mut big = vec![0, 0, 0x13, 0x88]; // 5000 bytes, over max_frame (4096)
    big.extend(std::iter::repeat_n(0xAB, 5000));
    p.send(&big);
    p.message("raw.v1.m.in", None, "nope.X", 1, &[1]); // unknown type
    p.message("raw.v1.m.in", None, "test.Ping", 9, &[1]); // wrong version
    p.message("raw.v1.m.in", None, "test.Ping", 1, &[0xff; 6]); // bad payload
    p.message("raw.v1.m.in", None, "test.Pong", 1, &[1]); // not routed here
    p.message("raw.v1.m.elsewhere", None, "test.Ping", 1, &[1]); // no such subject here
    // A request nobody serves, and one the server cannot decode: both answered.
    p.message(
        "raw.v1.s.nobody",
        Some("raw.v1.r.rawpeer.1"),
        "calc.Add",
        1,
        &[2, 2],
    );
    assert_eq!(p.next_message().failure, Some(RemoteFailure::NoRoute));
    p.message(
        "raw.v1.s.calc",
        Some("raw.v1.r.rawpeer.2"),
        "calc.Add",
        1,
        &[0xff],
    );
    assert_eq!(
        p.next_message().failure,
        Some(RemoteFailure::Rejected(RejectKind::Malformed))
    );
    p.message(
        "raw.v1.s.calc",
        Some("raw.v1.r.rawpeer.3"),
        "calc.Add",
        1,
        &[4, 6],
    );
    let ok = p.next_message();
    assert_eq!(
        (ok.failure, ok.tag.map(|t| t.name.to_string())),
        (None, Some("calc.Sum".into()))
    );
    // After all that, a good message is delivered on the same connection.
    p.message("raw.v1.m.in", None, "test.Ping", 1, &[7]);
    assert!(eventually(|| len(&seen) == 1));
    assert_eq!(*seen.lock().expect("lock"), vec![Ping(7)]);
    let s = server.stats();
    assert_eq!(
        (
            s.rejected_unknown_type,
            s.rejected_wrong_version,
            s.rejected_malformed,
            s.rejected_oversized,
            s.unrouted
        ),
        (1, 1, 5, 1, 3),
        "{s:?}"
    );
    assert_eq!((s.connects, s.disconnects), (1, 0));
    h.stop();
    env.run();
}

#[test]
fn handshakes_are_checked_and_silent_peers_dropped() {
    let env = env();
    let h = env.handle();
    let server = builder("hs")
        .heartbeat(Duration::from_millis(50), Duration::from_millis(300))
        .listen_link(h, "127.0.0.1:0")
        .expect("listening");
    let addr = server.local_addr().expect("bound");
    // Wrong namespace.
    let mut p = RawPeer::connect(addr, "other");
    let _ = p.next_body();
    assert!(eventually(|| server.stats().handshake_failures == 1));
    // Garbage instead of a Hello.
    let mut g = TcpStream::connect(addr).expect("connect");
    g.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("write");
    assert!(eventually(|| server.stats().handshake_failures == 2));
    assert!(!server.is_connected());
    // A peer that completes the handshake, gets heartbeats, and never says anything more.
    let mut q = RawPeer::connect(addr, "hs");
    assert!(matches!(
        Frame::decode(&q.next_body()),
        Ok(Frame::Hello { .. })
    ));
    assert_eq!(Frame::decode(&q.next_body()), Ok(Frame::Heartbeat));
    assert!(eventually(|| server.stats().heartbeat_timeouts == 1));
    let s = server.stats();
    assert_eq!((s.connects, s.disconnects, s.connected), (1, 1, false));
    h.stop();
    env.run();
}

#[test]
fn the_link_reconnects_and_delivers_what_was_buffered() {
    let env = env();
    let h = env.handle();
    let first = listen(h, "re");
    let addr = first.local_addr().expect("bound");
    let (c, seen) = Collector::<Ping>::new(None);
    let col = register(h, c);
    first.subscribe::<Ping>("in", &col).expect("subscribe");
    first
        .serve::<Add, Sum>("slow", &register(h, Holder(Vec::new())))
        .expect("serve");
    let client = connect(h, "re", addr);
    let input = client.mbox("in").expect("name");
    for i in 0..10 {
        input.send(Ping(i)).expect("buffered");
    }
    assert!(eventually(|| len(&seen) == 10));
    let replies: Arc<Mutex<Vec<RemoteReply<Sum>>>> = Arc::default();
    let sink = register(h, Sink(Arc::clone(&replies)));
    client
        .mbox("slow")
        .expect("name")
        .send_request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT, &sink)
        .expect("sent");
    assert!(eventually(|| first.stats().requests_served == 1));

    // The listening side goes away: the in-flight request fails, sends are buffered.
    first.close();
    assert!(eventually(|| !client.is_connected()));
    assert!(eventually(|| replies.lock().expect("lock").len() == 1));
    assert_eq!(
        replies.lock().expect("lock")[0].result,
        Err(RequestError::Disconnected)
    );
    for i in 10..60 {
        input.send(Ping(i)).expect("buffered");
    }
    assert_eq!(client.stats().buffered, 50);

    // A new listener on the same address gets them in order.
    let second = builder("re").listen_link(h, addr).expect("listening again");
    second.subscribe::<Ping>("in", &col).expect("subscribe");
    assert!(client.wait_connected(WAIT));
    assert!(eventually(|| len(&seen) == 60));
    assert_eq!(
        *seen.lock().expect("lock"),
        (0..60).map(Ping).collect::<Vec<_>>()
    );
    let s = client.stats();
    assert_eq!(
        (s.lost(), s.disconnected_requests, s.disconnects),
        (0, 1, 1)
    );
    assert!(s.connects >= 2);
    h.stop();
    env.run();
}

#[test]
fn child_process() {
    let Some(_role) = child_role() else { return };
    let env = env();
    let h = env.handle();
    let server = listen(h, "x");
    struct Echo(agentry_remote::RemoteMbox);
    impl Agent for Echo {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            def.on(|e: &mut Echo, _: &mut Ctx<Echo>, Ping(n): Ping| {
                e.0.send(Pong(n)).expect("buffered")
            })?
            .on(|_: &mut Echo, ctx: &mut Ctx<Echo>, _: Stop| ctx.stop_env())?;
            Ok(())
        }
    }
    let echo = register(h, Echo(server.mbox("back").expect("name")));
    server.subscribe::<Ping>("in", &echo).expect("subscribe");
    server.subscribe::<Stop>("in", &echo).expect("subscribe");
    server
        .serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");
    say(&format!("ADDR {}", server.local_addr().expect("bound")));
    env.run();
}

#[test]
fn two_processes_talk_over_the_link() {
    if child_role().is_some() {
        return;
    }
    let child = ChildProc::spawn("child_process", "link", &[]);
    let line = child.expect_line();
    let addr: SocketAddr = line
        .strip_prefix("ADDR ")
        .expect("address")
        .parse()
        .expect("address");
    let env = env();
    let h = env.handle();
    let client = connect(h, "x", addr);
    let (c, back) = Collector::<Pong>::new(None);
    client
        .subscribe::<Pong>("back", &register(h, c))
        .expect("subscribe");
    let input = client.mbox("in").expect("name");
    for i in 0..2000 {
        input.send(Ping(i)).expect("buffered");
    }
    assert!(eventually(|| len(&back) == 2000));
    assert_eq!(
        *back.lock().expect("lock"),
        (0..2000).map(Pong).collect::<Vec<_>>()
    );
    let calc = client.mbox("calc").expect("name");
    for i in 0..100 {
        assert_eq!(
            calc.request::<Add, Sum>(Add { a: i, b: i }, WAIT),
            Ok(Sum(2 * i))
        );
    }
    input.send(Stop).expect("buffered");
    assert!(child.wait_success());
    assert!(eventually(|| !client.is_connected()));
    h.stop();
    env.run();
}

#[allow(dead_code)]
fn _unused(_: DecodeError) {}

/// Sends `n` Pings to `out` from its handler, says so, then waits for the test's go before
/// it returns (a wait agentry does not know of: the batch stays open).
struct Burster {
    out: agentry_remote::RemoteMbox,
    n: u32,
    sent: std::sync::mpsc::Sender<()>,
    go: std::sync::mpsc::Receiver<()>,
}

impl Agent for Burster {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|b: &mut Burster, _: &mut Ctx<Burster>, Stop| {
            for i in 0..b.n {
                b.out.send(Ping(i)).expect("buffered");
            }
            b.sent.send(()).expect("test waits");
            b.go.recv_timeout(WAIT).expect("go");
        })?;
        Ok(())
    }
}

/// A burster on `gateway`'s side; returns its mbox, "sent" and "go".
fn burster(
    h: &EnvHandle,
    gateway: &Gateway,
    n: u32,
) -> (
    agentry::Mbox,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    let (sent_tx, sent) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel();
    let b = Burster {
        out: gateway.mbox("out").expect("name"),
        n,
        sent: sent_tx,
        go: go_rx,
    };
    (register(h, b), sent, go)
}

/// The Pings of the Message frames at the front of `p`'s buffer, without reading more.
fn buffered_pings(p: &mut RawPeer) -> usize {
    let mut n = 0;
    while let Some((body, used)) = frame::split(&p.buf) {
        assert!(matches!(
            Frame::decode(body),
            Ok(Frame::Message {
                subject: "batch.v1.m.out",
                ..
            })
        ));
        p.buf.drain(..used);
        n += 1;
    }
    n
}

#[test]
fn what_a_handler_sends_leaves_in_one_write_when_its_batch_ends() {
    let env = env();
    let h = env.handle();
    let server = builder("batch")
        .heartbeat(Duration::from_secs(30), Duration::from_secs(60))
        .listen_link(h, "127.0.0.1:0")
        .expect("listening");
    let mut p = RawPeer::connect(server.local_addr().expect("bound"), "batch");
    assert!(matches!(
        Frame::decode(&p.next_body()),
        Ok(Frame::Hello { .. })
    ));
    assert!(server.wait_connected(WAIT));
    let (mbox, sent, go) = burster(h, &server, 20);
    mbox.send(Stop);
    sent.recv_timeout(WAIT).expect("the handler sent");
    // The handler has sent but not returned: nothing is on the wire yet.
    p.s.set_read_timeout(Some(Duration::from_millis(150)))
        .expect("timeout");
    let mut chunk = [0u8; 1];
    let early = p.s.read(&mut chunk);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "nothing is written before the batch ends: {early:?}"
    );
    assert_eq!(server.stats().buffered, 20);
    go.send(()).expect("go");
    // All 20 frames come in one write: the first read holds them all.
    p.s.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut chunk = vec![0u8; 64 * 1024];
    let n = p.s.read(&mut chunk).expect("read");
    p.buf.extend_from_slice(&chunk[..n]);
    assert_eq!(buffered_pings(&mut p), 20, "one write, one read");
    assert!(eventually(|| server.stats().sent == 20));
    h.stop();
    env.run();
}

#[test]
fn sends_of_a_batch_whose_connection_dropped_wait_for_the_next_one() {
    let env = env();
    let h = env.handle();
    let server = listen(h, "batch");
    let addr = server.local_addr().expect("bound");
    let mut p = RawPeer::connect(addr, "batch");
    p.next_body();
    assert!(server.wait_connected(WAIT));
    let (mbox, sent, go) = burster(h, &server, 30);
    mbox.send(Stop);
    sent.recv_timeout(WAIT).expect("the handler sent");
    drop(p);
    assert!(eventually(|| !server.is_connected()));
    go.send(()).expect("go");
    // The batch ended with no connection: nothing written, nothing lost, all buffered.
    assert!(eventually(|| server.stats().buffered == 30));
    let s = server.stats();
    assert_eq!((s.sent, s.lost(), s.lost_in_flight), (0, 0, 0));
    let mut p = RawPeer::connect(addr, "batch");
    p.next_body();
    let mut got = 0;
    while got < 30 {
        let body = p.next_body();
        match Frame::decode(&body).expect("valid frame") {
            Frame::Message { payload, .. } => {
                assert_eq!(payload, postcard_ping(got), "in order");
                got += 1;
            }
            Frame::Heartbeat | Frame::Hello { .. } => {}
        }
    }
    assert!(eventually(|| server.stats().sent == 30));
    assert_eq!(server.stats().lost(), 0);
    h.stop();
    env.run();
}

/// `Ping(i)` as its payload on the wire.
fn postcard_ping(i: u32) -> Vec<u8> {
    postcard::to_allocvec(&Ping(i)).expect("encodes")
}

/// Asks `calc` from its handler with a blocking request, and reports the outcome.
struct Asker {
    calc: agentry_remote::RemoteMbox,
    out: std::sync::mpsc::Sender<(Result<Sum, RequestError>, Duration)>,
}

impl Agent for Asker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Asker, _: &mut Ctx<Asker>, Stop| {
            let t = std::time::Instant::now();
            let r = a.calc.request::<Add, Sum>(Add { a: 2, b: 3 }, WAIT);
            a.out.send((r, t.elapsed())).expect("test waits");
        })?;
        Ok(())
    }
}

#[test]
fn a_handlers_blocking_request_is_written_before_it_waits() {
    let env = env();
    let h = env.handle();
    let server = listen(h, "ask");
    server
        .serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");
    // No heartbeat for 30 s: only the request's own flush can send it in time.
    let client = builder("ask")
        .heartbeat(Duration::from_secs(30), Duration::from_secs(60))
        .connect_link(h, server.local_addr().expect("bound"))
        .expect("connected");
    let (tx, rx) = std::sync::mpsc::channel();
    // On a thread of its own: the adder, on the default dispatcher, answers meanwhile.
    let own = agentry::disp::OneThreadDispatcher::new(h, "asker").expect("dispatcher");
    let mut coop = h.new_coop();
    let asker = coop.add_with(
        Asker {
            calc: client.mbox("calc").expect("name"),
            out: tx,
        },
        &own.binder(),
    );
    h.register_coop(coop).expect("registered");
    asker.send(Stop);
    let (r, took) = rx.recv_timeout(WAIT).expect("answered");
    assert_eq!(r, Ok(Sum(5)));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    h.stop();
    env.run();
}
