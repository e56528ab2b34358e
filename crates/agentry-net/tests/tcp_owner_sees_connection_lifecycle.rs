//! The owner's view of a connection: `Accepted` first, data in order, `Closed` last and
//! once; a per-connection owner lives exactly as long as its connection, on its channel's
//! thread; replies sent while handling the last request and `Closed` itself are still
//! delivered; `Close` flushes what is buffered; closing a listener closes its connections.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, UserError};
use agentry_net::{
    Accepted, ChannelConfig, Close, CloseReason, Closed, ConnId, ConnOwner, Frame, Framing,
    IoDispatcher, ListenerConfig, SendBytes, SendFrame, WriteHigh, WriteLow, reactor,
};
use common::{DEADLINE, Event, Mode, Server, client, localhost, read_to_close};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::sync::mpsc::{self, Sender};

/// What a session saw, in order, reported from `on_finish`.
#[derive(Debug)]
struct Life {
    conn: Option<ConnId>,
    log: Vec<String>,
    same_thread: bool,
}

/// A per-connection owner: answers each line with `ok:<line>`; answers `Closed` with `bye`.
struct Session {
    channel: Mbox,
    io_thread: Option<usize>,
    life: Life,
    report: Sender<Life>,
}

impl Agent for Session {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Session, _: &mut Ctx<Session>, a: Accepted| {
            s.life.conn = Some(a.conn);
            s.life.log.push("accepted".into());
        })?
        .on(
            |s: &mut Session, _: &mut Ctx<Session>, Frame { data, .. }: Frame| {
                let line = String::from_utf8_lossy(&data).into_owned();
                s.channel.send(SendFrame(format!("ok:{line}").into_bytes()));
                s.life.log.push(line);
            },
        )?
        .on(|s: &mut Session, _: &mut Ctx<Session>, c: Closed| {
            s.channel.send(SendFrame(b"bye".to_vec()));
            s.life.log.push(format!("closed:{:?}", c.reason));
        })?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.io_thread = reactor::io_thread_index();
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.life.same_thread =
            self.io_thread.is_some() && self.io_thread == reactor::io_thread_index();
        let life = std::mem::replace(
            &mut self.life,
            Life {
                conn: None,
                log: Vec::new(),
                same_thread: false,
            },
        );
        let _ = self.report.send(life);
    }
}

#[test]
fn a_per_connection_owner_sees_accepted_first_closed_last_and_its_last_words_are_sent() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::builder("sessions")
        .threads(2)
        .build(env.handle())
        .expect("io");
    let (tx, lives) = mpsc::channel();
    let config =
        ListenerConfig::default().channel(ChannelConfig::default().framing(Framing::Lines));
    let owner = ConnOwner::per_connection(move |info, coop| {
        coop.add_with(
            Session {
                channel: info.channel.clone(),
                io_thread: None,
                life: Life {
                    conn: None,
                    log: Vec::new(),
                    same_thread: false,
                },
                report: tx.clone(),
            },
            &info.binder,
        )
    });
    let listener = io.listen(localhost(), config, owner).expect("listening");
    for n in 0..4 {
        let mut c = client(listener.local_addr());
        c.write_all(format!("a{n}\nb{n}\n").as_bytes())
            .expect("written");
        c.shutdown(Shutdown::Write).expect("half close");
        // The replies to both lines and the answer to `Closed` arrive before the end.
        let back = read_to_close(&mut c);
        assert_eq!(back, format!("ok:a{n}\nok:b{n}\nbye\n").as_bytes());
        let life = lives.recv_timeout(DEADLINE).expect("the session finished");
        assert!(life.conn.is_some());
        assert_eq!(
            life.log,
            vec![
                "accepted".to_string(),
                format!("a{n}"),
                format!("b{n}"),
                "closed:PeerClosed".to_string()
            ]
        );
        assert!(
            life.same_thread,
            "the session runs on its channel's io thread"
        );
    }
    let stats = io.stats();
    assert_eq!(
        (
            stats.accepted,
            stats.closed_peer,
            stats.frames_in,
            stats.frames_out
        ),
        (4, 4, 8, 12)
    );
    env.handle().stop();
    let env_stats = env.run();
    assert_eq!(env_stats.dead_letters, 0);
    assert_eq!(env_stats.unhandled, 0);
    assert!(io.wait_threads(DEADLINE));
}

/// Bytes of the write-buffer test's stream: byte `i` is `i % 253`.
fn pattern(from: usize, len: usize) -> Vec<u8> {
    (from..from + len).map(|i| (i % 253) as u8).collect()
}

/// Sent by [`Closer`] to itself: send the next chunk.
struct More;

/// What a [`Closer`] tells the test.
#[derive(Debug)]
enum CloserReport {
    /// `Close` and the late send were sent (from the `WriteHigh` handler); `sent` bytes
    /// were sent before them.
    Closing { sent: usize, channel: Mbox },
    /// No `WriteHigh` after this many bytes.
    GaveUp { sent: usize },
    /// `Closed` was handled; what the owner saw, in order.
    Done(Vec<String>),
}

/// An owner that fills its channel's write buffer, then closes it and sends once more.
///
/// It sends `CHUNK`-byte chunks of [`pattern`] one handler at a time until the channel
/// reports `WriteHigh` (the kernel's socket buffers are full and at least `write_high` bytes
/// are buffered or queued at the channel: the peer does not read yet). From that handler it sends `Close`, then
/// a last `SendBytes` — after `Close`, from the channel's owner, while the channel provably
/// exists: both are in the channel's queue before this handler returns, and the channel
/// cannot be torn down before then — on the single io thread it does not even run until
/// then (and its teardown waits for this owner to handle `Closed`, or for the linger time
/// to run out, both of which start only once the channel has handled `Close`).
struct Closer {
    channel: Option<Mbox>,
    sent: usize,
    closing: bool,
    log: Vec<String>,
    report: Sender<CloserReport>,
}

impl Closer {
    const CHUNK: usize = 256 * 1024;
    const GIVE_UP: usize = 64 * 1024 * 1024;

    fn send_more(&mut self, ctx: &mut Ctx<Closer>) {
        let Some(channel) = &self.channel else { return };
        if self.sent >= Closer::GIVE_UP {
            let _ = self.report.send(CloserReport::GaveUp { sent: self.sent });
            return;
        }
        channel.send(SendBytes(pattern(self.sent, Closer::CHUNK)));
        self.sent += Closer::CHUNK;
        ctx.mbox().send(More);
    }
}

impl Agent for Closer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Closer, ctx: &mut Ctx<Closer>, a: Accepted| {
            s.channel = Some(a.channel);
            s.log.push("accepted".into());
            s.send_more(ctx);
        })?
        .on(|s: &mut Closer, ctx: &mut Ctx<Closer>, _: More| {
            if !s.closing {
                s.send_more(ctx);
            }
        })?
        .on(|s: &mut Closer, _: &mut Ctx<Closer>, _: WriteHigh| {
            s.log.push("write high".into());
            if let (false, Some(channel)) = (s.closing, &s.channel) {
                s.closing = true;
                channel.send(Close);
                channel.send(SendBytes(b"too late".to_vec()));
                let _ = s.report.send(CloserReport::Closing {
                    sent: s.sent,
                    channel: channel.clone(),
                });
            }
        })?
        .on(|s: &mut Closer, _: &mut Ctx<Closer>, _: WriteLow| {
            s.log.push("write low".into());
        })?
        .on(|s: &mut Closer, _: &mut Ctx<Closer>, c: Closed| {
            s.log
                .push(format!("closed:{:?} bytes_out={}", c.reason, c.bytes_out));
            let _ = s
                .report
                .send(CloserReport::Done(std::mem::take(&mut s.log)));
        })?;
        Ok(())
    }
}

#[test]
fn close_by_the_owner_flushes_what_is_buffered_first() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    // One io thread: the owner and the channel run on it one message at a time.
    let io = IoDispatcher::builder("closer")
        .threads(1)
        .build(env.handle())
        .expect("io");
    let (tx, reports) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    let owner = coop.add_with(
        Closer {
            channel: None,
            sent: 0,
            closing: false,
            log: Vec::new(),
            report: tx,
        },
        &io.binder(),
    );
    env.handle().register_coop(coop).expect("owner registered");
    // `write_low == 0`: the owner gets `WriteLow` only if the buffer empties while open, so
    // a log without it proves the buffer still held bytes when `Close` was handled.
    const WRITE_HIGH: usize = 1024 * 1024;
    let config =
        ListenerConfig::default().channel(ChannelConfig::default().write_watermarks(0, WRITE_HIGH));
    let listener = io
        .listen(localhost(), config, ConnOwner::Mbox(owner))
        .expect("listening");
    // The client reads nothing until the owner has sent `Close`.
    let mut c = client(listener.local_addr());
    let (sent, channel) = match reports.recv_timeout(DEADLINE).expect("the owner reported") {
        CloserReport::Closing { sent, channel } => (sent, channel),
        CloserReport::GaveUp { sent } => panic!("no `WriteHigh` after {sent} bytes"),
        other => panic!("expected the owner's `Close`, got {other:?}"),
    };
    let mut back = Vec::new();
    c.read_to_end(&mut back).expect("read to the end");
    assert_eq!(back.len(), sent, "everything sent before `Close` arrives");
    assert!(back == pattern(0, sent), "in order, intact");
    let log = match reports.recv_timeout(DEADLINE).expect("the owner reported") {
        CloserReport::Done(log) => log,
        other => panic!("expected `Closed`, got {other:?}"),
    };
    // `WriteHigh`, no `WriteLow`: bytes were still buffered when `Close` was handled (the
    // flushing path, not an immediate close); `Closed` comes after the flush.
    assert_eq!(
        log,
        vec![
            "accepted".to_string(),
            "write high".to_string(),
            format!("closed:ByOwner bytes_out={sent}"),
        ]
    );
    common::wait_until("torn down", || listener.stats().open == 0);
    // The owner's send after its `Close` reached the channel before its teardown: counted.
    let stats = io.stats();
    assert_eq!(stats.closed_by_owner, 1);
    assert_eq!(stats.write_high, 1);
    assert_eq!(stats.sends_after_close, 1);
    assert_eq!(stats.bytes_out, sent as u64);
    assert_eq!(stats.bytes_unsent, 0);
    // A send from another thread after `Closed` races the teardown: the channel counts it
    // (`sends_after_close`) or agentry refuses it (`dead_letters`) — one of the two, once.
    channel.send(SendBytes(b"later".to_vec()));
    env.handle().stop();
    let env_stats = env.run();
    assert!(io.wait_threads(DEADLINE));
    assert_eq!(
        io.stats().sends_after_close - 1 + env_stats.dead_letters,
        1,
        "the late send from another thread is counted exactly once"
    );
}

#[test]
fn closing_a_listener_closes_its_connections_with_shutdown() {
    let server = Server::start(2, ListenerConfig::default(), Mode::Echo);
    let mut clients: Vec<_> = (0..5).map(|_| client(server.addr())).collect();
    for _ in 0..5 {
        server.accepted();
    }
    server.listener.close();
    for c in &mut clients {
        assert!(read_to_close(c).is_empty());
    }
    for _ in 0..5 {
        server.wait_for("Closed", |e| match e {
            Event::Closed(c) => {
                assert_eq!(c.reason, CloseReason::Shutdown);
                Some(())
            }
            _ => None,
        });
    }
    assert_eq!(server.io.stats().closed_shutdown, 5);
    // The acceptor goes after its connections (children first), then nothing listens.
    common::wait_until("the listener closed", || {
        std::net::TcpStream::connect(server.addr()).is_err()
    });
    server.stop();
}

#[test]
fn a_panicking_owner_factory_costs_its_connection_not_the_listener() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::new(env.handle(), "factory").expect("io");
    let (tx, rx) = mpsc::channel();
    let calls = AtomicUsize::new(0);
    let owner = ConnOwner::per_connection(move |info, coop| {
        if calls.fetch_add(1, Ordering::Relaxed) == 0 {
            panic!("the first connection's owner cannot be made");
        }
        coop.add_with(common::Probe::new(tx.clone(), Mode::Echo), &info.binder)
    });
    let listener = io
        .listen(localhost(), ListenerConfig::default(), owner)
        .expect("listening");
    let mut refused = client(listener.local_addr());
    assert!(read_to_close(&mut refused).is_empty());
    let mut served = client(listener.local_addr());
    assert_eq!(common::round_trip(&mut served, b"ok"), b"ok");
    let stats = listener.stats();
    assert_eq!((stats.accepted, stats.accept_errors), (1, 1));
    drop(rx);
    env.handle().stop();
    env.run();
    assert!(io.wait_threads(DEADLINE));
}
