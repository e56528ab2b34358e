//! Helpers shared by the integration tests: a probe owner agent that reports every message a
//! channel sends it (and can echo), a server fixture, bounded client I/O. Every wait is
//! bounded by [`DEADLINE`]; nothing sleeps to synchronise.

#![allow(dead_code)]

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use agentry_net::{
    Accepted, ChannelConfig, CloseReason, Closed, ConnId, ConnOwner, ConnectFailed, Connected,
    Frame, IoBuilder, IoDispatcher, Listener, ListenerConfig, Received, SendBytes, SendFrame,
    WriteHigh, WriteLow,
};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

/// Every blocking wait of a test gives up after this long.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// What a probe saw.
#[derive(Debug, Clone)]
pub enum Event {
    Accepted(ConnId, Mbox),
    Connected(ConnId, Mbox),
    ConnectFailed(ConnectFailed),
    Data(ConnId, Vec<u8>),
    Frame(ConnId, Vec<u8>),
    WriteHigh(WriteHigh),
    WriteLow(WriteLow),
    Closed(ClosedInfo),
}

/// A `Closed` without its credit (the probe has handled it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedInfo {
    pub conn: ConnId,
    pub reason: CloseReason,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// What a probe does with what it receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Report only.
    Report,
    /// Report, and echo data (`SendBytes`) and frames (`SendFrame`) back.
    Echo,
    /// Echo without reporting data (for volume tests).
    EchoQuiet,
    /// Echo received bytes as this many `SendBytes` (the last takes the remainder), sent in
    /// one handler, without reporting data; frames as `EchoQuiet`.
    EchoInPieces(usize),
}

/// An owner agent that reports to a channel.
pub struct Probe {
    pub events: Sender<Event>,
    pub mode: Mode,
    pub channels: std::collections::HashMap<ConnId, Mbox>,
}

impl Probe {
    pub fn new(events: Sender<Event>, mode: Mode) -> Self {
        Probe {
            events,
            mode,
            channels: Default::default(),
        }
    }

    fn report(&self, e: Event) {
        let _ = self.events.send(e);
    }
}

impl Agent for Probe {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Probe, _: &mut Ctx<Probe>, a: Accepted| {
            p.channels.insert(a.conn, a.channel.clone());
            p.report(Event::Accepted(a.conn, a.channel));
        })?
        .on(|p: &mut Probe, _: &mut Ctx<Probe>, c: Connected| {
            p.channels.insert(c.conn, c.channel.clone());
            p.report(Event::Connected(c.conn, c.channel));
        })?
        .on(|p: &mut Probe, _: &mut Ctx<Probe>, f: ConnectFailed| {
            p.report(Event::ConnectFailed(f))
        })?
        .on(
            |p: &mut Probe, _: &mut Ctx<Probe>, Received { conn, data, .. }: Received| match p.mode
            {
                Mode::Report => p.report(Event::Data(conn, data)),
                Mode::Echo => {
                    if let Some(ch) = p.channels.get(&conn) {
                        ch.send(SendBytes(data.clone()));
                    }
                    p.report(Event::Data(conn, data));
                }
                Mode::EchoQuiet => {
                    if let Some(ch) = p.channels.get(&conn) {
                        ch.send(SendBytes(data));
                    }
                }
                Mode::EchoInPieces(pieces) => {
                    if let Some(ch) = p.channels.get(&conn) {
                        let size = data.len().div_ceil(pieces.max(1)).max(1);
                        for piece in data.chunks(size) {
                            ch.send(SendBytes(piece.to_vec()));
                        }
                    }
                }
            },
        )?
        .on(
            |p: &mut Probe, _: &mut Ctx<Probe>, Frame { conn, data, .. }: Frame| match p.mode {
                Mode::Report => p.report(Event::Frame(conn, data)),
                Mode::Echo => {
                    if let Some(ch) = p.channels.get(&conn) {
                        ch.send(SendFrame(data.clone()));
                    }
                    p.report(Event::Frame(conn, data));
                }
                Mode::EchoQuiet | Mode::EchoInPieces(_) => {
                    if let Some(ch) = p.channels.get(&conn) {
                        ch.send(SendFrame(data));
                    }
                }
            },
        )?
        .on(|p: &mut Probe, _: &mut Ctx<Probe>, w: WriteHigh| p.report(Event::WriteHigh(w)))?
        .on(|p: &mut Probe, _: &mut Ctx<Probe>, w: WriteLow| p.report(Event::WriteLow(w)))?
        .on(|p: &mut Probe, _: &mut Ctx<Probe>, c: Closed| {
            p.channels.remove(&c.conn);
            p.report(Event::Closed(ClosedInfo {
                conn: c.conn,
                reason: c.reason,
                bytes_in: c.bytes_in,
                bytes_out: c.bytes_out,
            }));
        })?;
        Ok(())
    }
}

/// A server: an environment, an io dispatcher, a probe owning every connection of a listener.
pub struct Server {
    pub env: Env,
    pub io: IoDispatcher,
    pub listener: Listener,
    pub probe: Mbox,
    pub events: Receiver<Event>,
}

impl Server {
    pub fn start(threads: usize, config: ListenerConfig, mode: Mode) -> Server {
        Server::start_on(IoDispatcher::builder("test").threads(threads), config, mode)
    }

    /// [`start`](Self::start) on an io dispatcher built from `io`.
    pub fn start_on(io: &IoBuilder, config: ListenerConfig, mode: Mode) -> Server {
        let env = Env::builder().autoshutdown(false).build().expect("env");
        let io = io.build(env.handle()).expect("io dispatcher");
        let (tx, events) = mpsc::channel();
        let mut coop = env.handle().new_coop();
        let probe = coop.add_with(Probe::new(tx, mode), &io.binder());
        env.handle().register_coop(coop).expect("probe registered");
        let listener = io
            .listen(localhost(), config, ConnOwner::Mbox(probe.clone()))
            .expect("listening");
        Server {
            env,
            io,
            listener,
            probe,
            events,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// The next event satisfying `pick`, skipping others; fails after the deadline.
    pub fn wait_for<T>(&self, what: &str, mut pick: impl FnMut(Event) -> Option<T>) -> T {
        wait_for(&self.events, what, &mut pick)
    }

    /// Waits for the `Closed` of `conn`.
    pub fn closed(&self, conn: ConnId) -> ClosedInfo {
        self.wait_for("Closed", |e| match e {
            Event::Closed(c) if c.conn == conn => Some(c),
            _ => None,
        })
    }

    /// Another listener on the same io dispatcher, owned by the same probe (its events
    /// arrive on `events` too).
    pub fn listen(&self, config: ListenerConfig) -> Listener {
        self.io
            .listen(localhost(), config, ConnOwner::Mbox(self.probe.clone()))
            .expect("listening")
    }

    /// Keeps every event in `log` until `done(log)` holds; fails after the deadline. Unlike
    /// [`wait_for`](Self::wait_for), nothing is skipped: a test that waits for one
    /// connection's event keeps the others'.
    pub fn record_until(
        &self,
        log: &mut Vec<Event>,
        what: &str,
        mut done: impl FnMut(&[Event]) -> bool,
    ) {
        let deadline = Instant::now() + DEADLINE;
        while !done(log) {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("timed out waiting for {what}"));
            let e = self
                .events
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
            log.push(e);
        }
    }

    /// Waits for the next `Accepted`.
    pub fn accepted(&self) -> (ConnId, Mbox) {
        self.wait_for("Accepted", |e| match e {
            Event::Accepted(c, m) => Some((c, m)),
            _ => None,
        })
    }

    /// Stops the environment and waits for it and the io threads.
    pub fn stop(self) -> agentry::EnvStats {
        let Server { env, io, .. } = self;
        env.handle().stop();
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let stats = env.run();
            let _ = done_tx.send(stats);
        });
        let stats = done_rx
            .recv_timeout(DEADLINE)
            .expect("Env::run() returned before the deadline");
        assert!(io.wait_threads(DEADLINE), "io threads exited");
        stats
    }
}

pub fn wait_for<E, T>(rx: &Receiver<E>, what: &str, pick: &mut impl FnMut(E) -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .unwrap_or_else(|| panic!("timed out waiting for {what}"));
        let e = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
        if let Some(t) = pick(e) {
            return t;
        }
    }
}

/// Polls `condition` until it holds (a 1 ms pause between looks), failing after the deadline.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().expect("address")
}

/// A blocking client with bounded reads and writes.
pub fn client(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("client connected");
    s.set_read_timeout(Some(DEADLINE)).expect("timeout");
    s.set_write_timeout(Some(DEADLINE)).expect("timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// Reads until the server closes the connection (EOF or reset); returns what was read.
pub fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                ) =>
            {
                return out;
            }
            Err(e) => panic!("client read failed before the server closed: {e}"),
        }
    }
}

/// A client writes `bytes` bytes (a repeating pattern) and half-closes at once; checks that
/// exactly those bytes come back before the server's end of stream and that the server
/// reports the peer's close with every byte read.
pub fn write_all_then_half_close(server: &Server, bytes: u32) {
    let mut s = client(server.addr());
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    s.write_all(&data).expect("written");
    s.shutdown(std::net::Shutdown::Write).expect("half close");
    let back = read_to_close(&mut s);
    assert_eq!(back.len(), data.len());
    assert_eq!(back, data);
    let (conn, _) = server.accepted();
    let closed = server.closed(conn);
    assert_eq!(closed.reason, CloseReason::PeerClosed);
    assert_eq!(closed.bytes_in, u64::from(bytes));
}

/// Writes `data` and reads back exactly as many bytes.
pub fn round_trip(s: &mut TcpStream, data: &[u8]) -> Vec<u8> {
    s.write_all(data).expect("written");
    let mut back = vec![0; data.len()];
    s.read_exact(&mut back).expect("echoed");
    back
}

/// A length-prefixed frame.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(payload);
    f
}

pub fn echo_config() -> ListenerConfig {
    ListenerConfig::default().channel(ChannelConfig::default())
}

/// The connections accepted, in order, in a log of events.
pub fn accepted_in(log: &[Event]) -> Vec<(ConnId, Mbox)> {
    log.iter()
        .filter_map(|e| match e {
            Event::Accepted(c, m) => Some((*c, m.clone())),
            _ => None,
        })
        .collect()
}

/// The `Closed` of each connection in a log of events, in order.
pub fn closed_in(log: &[Event]) -> Vec<ClosedInfo> {
    log.iter()
        .filter_map(|e| match e {
            Event::Closed(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// A client that sends one byte (`byte`) every `every` on its own thread, never a frame's
/// end, until a write fails (the server closed the connection) or `max` bytes are sent.
/// Returns the bytes sent and whether a write failed.
pub fn trickle(
    mut s: TcpStream,
    byte: u8,
    every: Duration,
    max: usize,
) -> std::thread::JoinHandle<(usize, bool)> {
    std::thread::spawn(move || {
        for sent in 0..max {
            if s.write_all(&[byte]).is_err() {
                return (sent, true);
            }
            std::thread::sleep(every);
        }
        (max, false)
    })
}
