//! The TCP part: an echo owner agent on an `agentry-net` io dispatcher behind two listeners,
//! and client threads of every kind (`net/clients.rs`). Checked at each phase end, once every
//! client has finished and every connection is closed (`docs/SEMANTICS.md` §18):
//! every connection the soak opened got exactly one `Closed`, with the reason its kind
//! must get (slow → `FrameTimeout` / `BelowMinRate`, raw flood → `WriteOverflow`, normal →
//! `PeerClosed` with every echo equal to what was sent; a line flood is held back by
//! backpressure); the io dispatcher's per-reason counters equal the owner's tally and sum to
//! the connections accepted.
//!
//! The listeners:
//! - *lines*: `Framing::Lines`, frame deadline [`FRAME_TIMEOUT`], reading paused on the
//!   write high watermark (the default);
//! - *raw*: `Framing::Raw`, minimum receive rate [`MIN_RATE_BYTES`] per [`MIN_RATE_WINDOW`],
//!   never paused, write maximum [`RAW_WRITE_MAX`].

mod clients;

use crate::soak::check::Checks;
use crate::soak::tally::Tally;
use crate::soak::{Part, stream_rng, wait_until};
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox};
use agentry_net::{
    Accepted, ChannelConfig, CloseReason, Closed, ConnId, ConnOwner, Frame, Framing, IoDispatcher,
    Listener, ListenerConfig, MinRate, NetStats, Received, SendBytes, SendFrame, WriteHigh,
    WriteLow,
};
use clients::{ClientRecord, Kind, Side};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

pub const FRAME_TIMEOUT: Duration = Duration::from_millis(1500);
pub const MIN_RATE_BYTES: u64 = 64;
pub const MIN_RATE_WINDOW: Duration = Duration::from_secs(2);
pub const RAW_WRITE_MAX: usize = 256 * 1024;
/// Clients connected at once, at most.
const MAX_CLIENTS: usize = 10;
/// How long the phase end waits for clients to finish and connections to close.
const DRAIN: Duration = Duration::from_secs(40);

/// What the owner saw (shared with the audit).
#[derive(Default)]
struct Book {
    /// Connections accepted and not yet closed: peer and listener addresses.
    open: HashMap<ConnId, (SocketAddr, SocketAddr)>,
    /// Closed connections of the phase, by their two ends (a client port may be used
    /// towards both listeners at once), in close order.
    closed: HashMap<Ends, VecDeque<CloseReason>>,
    /// Every close of the run, by reason kind (NetStats' order).
    by_reason: [u64; REASONS],
    accepted: u64,
    duplicate_accepts: u64,
    unknown_closes: u64,
    write_high: u64,
}

type SharedBook = Arc<Mutex<Book>>;

/// A connection's ends: the client's address and the listener's.
type Ends = (SocketAddr, SocketAddr);

fn lock(book: &SharedBook) -> MutexGuard<'_, Book> {
    book.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const REASONS: usize = 11;

/// The reason kinds, in `NetStats`' order, with a representative of each.
fn reason_kinds() -> [(&'static str, CloseReason); REASONS] {
    [
        ("PeerClosed", CloseReason::PeerClosed),
        (
            "PeerClosedMidFrame",
            CloseReason::PeerClosedMidFrame { partial: 0 },
        ),
        ("Error", CloseReason::Error(std::io::ErrorKind::Other)),
        ("IdleTimeout", CloseReason::IdleTimeout),
        ("FrameTooBig", CloseReason::FrameTooBig { size: 0, max: 0 }),
        (
            "WriteOverflow",
            CloseReason::WriteOverflow {
                buffered: 0,
                max: 0,
            },
        ),
        ("ByOwner", CloseReason::ByOwner),
        ("Shutdown", CloseReason::Shutdown),
        ("FrameTimeout", CloseReason::FrameTimeout { partial: 0 }),
        (
            "BelowMinRate",
            CloseReason::BelowMinRate {
                received: 0,
                min: MinRate::new(0, Duration::ZERO),
            },
        ),
        ("LifetimeExceeded", CloseReason::LifetimeExceeded),
    ]
}

/// The index of `r`'s kind in [`reason_kinds`], and its name.
fn reason_kind(r: &CloseReason) -> (usize, &'static str) {
    reason_kinds()
        .iter()
        .enumerate()
        .find(|(_, (_, k))| std::mem::discriminant(k) == std::mem::discriminant(r))
        .map(|(i, (name, _))| (i, *name))
        .expect("invariant: reason_kinds lists every kind")
}

/// Echoes every connection of both listeners and books every accept and close.
struct EchoOwner {
    book: SharedBook,
    channels: HashMap<ConnId, Mbox>,
}

impl Agent for EchoOwner {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|o: &mut EchoOwner, _: &mut Ctx<EchoOwner>, a: Accepted| {
            let mut b = lock(&o.book);
            b.accepted += 1;
            if b.open.insert(a.conn, (a.peer, a.local)).is_some() {
                b.duplicate_accepts += 1;
            }
            drop(b);
            o.channels.insert(a.conn, a.channel);
        })?
        .on(|o: &mut EchoOwner, _: &mut Ctx<EchoOwner>, f: Frame| {
            let (conn, data, _credit) = f.into_parts();
            if let Some(ch) = o.channels.get(&conn) {
                ch.send(SendFrame(data));
            }
        })?
        .on(|o: &mut EchoOwner, _: &mut Ctx<EchoOwner>, r: Received| {
            let (conn, data, _credit) = r.into_parts();
            if let Some(ch) = o.channels.get(&conn) {
                ch.send(SendBytes(data));
            }
        })?
        .on(|o: &mut EchoOwner, _: &mut Ctx<EchoOwner>, _: WriteHigh| {
            lock(&o.book).write_high += 1;
        })?
        .on(|_: &mut EchoOwner, _: &mut Ctx<EchoOwner>, _: WriteLow| {})?
        .on(|o: &mut EchoOwner, _: &mut Ctx<EchoOwner>, c: Closed| {
            o.channels.remove(&c.conn);
            let mut b = lock(&o.book);
            b.by_reason[reason_kind(&c.reason).0] += 1;
            match b.open.remove(&c.conn) {
                Some(ends) => b.closed.entry(ends).or_default().push_back(c.reason),
                None => b.unknown_closes += 1,
            }
        })?;
        Ok(())
    }
}

/// The TCP part.
pub struct NetSoak {
    env: Option<Env>,
    handle: EnvHandle,
    io: IoDispatcher,
    lines: Listener,
    raw: Listener,
    book: SharedBook,
    stop: Arc<AtomicBool>,
    driver: Option<JoinHandle<Vec<JoinHandle<ClientRecord>>>>,
    /// Numbers the clients in connection order.
    seq: Arc<AtomicU64>,
    /// Connections the soak's clients made over the run.
    connected: u64,
    /// The run's counts at the last phase end (each phase reports its own share).
    reported: Tally,
}

impl NetSoak {
    /// # Errors
    /// The environment, the io dispatcher or a listener could not start.
    pub fn new() -> Result<Self, String> {
        let env = Env::builder()
            .autoshutdown(false)
            .build()
            .map_err(|e| format!("tcp environment: {e}"))?;
        let handle = env.handle().clone();
        let io = IoDispatcher::builder("soak-io")
            .threads(2)
            .build(&handle)
            .map_err(|e| format!("io dispatcher: {e}"))?;
        let book = SharedBook::default();
        let mut coop = handle.new_coop();
        let owner = coop.add_with(
            EchoOwner {
                book: Arc::clone(&book),
                channels: HashMap::new(),
            },
            &io.binder(),
        );
        handle
            .register_coop(coop)
            .map_err(|e| format!("echo owner: {e}"))?;
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let listen = |channel: ChannelConfig| {
            io.listen(
                loopback,
                ListenerConfig::default()
                    .max_connections(1000)
                    .channel(channel),
                ConnOwner::Mbox(owner.clone()),
            )
            .map_err(|e| format!("listener: {e}"))
        };
        let lines = listen(
            ChannelConfig::default()
                .framing(Framing::Lines)
                .max_frame(4096)
                .frame_timeout(Some(FRAME_TIMEOUT)),
        )?;
        let raw = listen(
            ChannelConfig::default()
                .framing(Framing::Raw)
                .min_receive_rate(Some(MinRate::new(MIN_RATE_BYTES, MIN_RATE_WINDOW)))
                .pause_reading_on_write_high(false)
                .write_watermarks(32 * 1024, 128 * 1024)
                .write_max(RAW_WRITE_MAX),
        )?;
        Ok(NetSoak {
            env: Some(env),
            handle,
            io,
            lines,
            raw,
            book,
            stop: Arc::new(AtomicBool::new(false)),
            driver: None,
            seq: Arc::default(),
            connected: 0,
            reported: Tally::default(),
        })
    }
}

/// Starts clients (at most [`MAX_CLIENTS`] at once) until `stop`; returns their threads.
fn drive(
    addrs: (SocketAddr, SocketAddr),
    mut rng: crate::xorshift::XorShift,
    stop: &AtomicBool,
    seq: &AtomicU64,
) -> Vec<JoinHandle<ClientRecord>> {
    let active = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        if active.load(Ordering::SeqCst) < MAX_CLIENTS {
            let kind = match rng.below(100) {
                0..60 => Kind::Normal,
                60..80 => Kind::Slow,
                _ => Kind::Flood,
            };
            let (side, addr) = if rng.below(2) == 0 {
                (Side::Lines, addrs.0)
            } else {
                (Side::Raw, addrs.1)
            };
            let seq = seq.fetch_add(1, Ordering::SeqCst);
            let client_rng = crate::xorshift::XorShift::for_index(rng.next_u64());
            let done = Arc::clone(&active);
            active.fetch_add(1, Ordering::SeqCst);
            let spawned = std::thread::Builder::new()
                .name("soak-tcp-client".into())
                .spawn(move || {
                    let r = clients::run(seq, kind, side, addr, client_rng);
                    done.fetch_sub(1, Ordering::SeqCst);
                    r
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(_) => {
                    active.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    threads
}

/// The close reasons a client of `kind` on `side` may get.
fn expected(kind: Kind, side: Side, reason: &CloseReason) -> bool {
    match (kind, side) {
        (Kind::Normal, _) => *reason == CloseReason::PeerClosed,
        (Kind::Slow, Side::Lines) => matches!(reason, CloseReason::FrameTimeout { .. }),
        (Kind::Slow, Side::Raw) => matches!(reason, CloseReason::BelowMinRate { .. }),
        (Kind::Flood, Side::Raw) => matches!(reason, CloseReason::WriteOverflow { .. }),
        // Held back by TCP while the channel does not read; it then resets the connection.
        (Kind::Flood, Side::Lines) => matches!(
            reason,
            CloseReason::Error(_)
                | CloseReason::PeerClosed
                | CloseReason::PeerClosedMidFrame { .. }
        ),
    }
}

impl Part for NetSoak {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn start_phase(&mut self, seed: u64, phase: u32) {
        self.stop.store(false, Ordering::SeqCst);
        let addrs = (self.lines.local_addr(), self.raw.local_addr());
        let rng = stream_rng(seed, phase, 20);
        let (stop, seq) = (Arc::clone(&self.stop), Arc::clone(&self.seq));
        self.driver = Some(
            std::thread::Builder::new()
                .name("soak-tcp".into())
                .spawn(move || drive(addrs, rng, &stop, &seq))
                .expect("invariant: the soak can start its driver threads"),
        );
    }

    fn end_phase(&mut self) -> (Tally, Checks) {
        let mut t = Tally::default();
        let mut checks = Checks::default();
        self.stop.store(true, Ordering::SeqCst);
        let mut records = Vec::new();
        let mut panicked = 0;
        if let Some(driver) = self.driver.take() {
            match driver.join() {
                Ok(threads) => {
                    for c in threads {
                        match c.join() {
                            Ok(r) => records.push(r),
                            Err(_) => panicked += 1,
                        }
                    }
                }
                Err(_) => panicked += 1,
            }
        }
        checks.eq(
            "tcp",
            "client or driver threads that panicked == 0",
            panicked,
            0,
        );
        let closed = wait_until(DRAIN, || {
            lock(&self.book).open.is_empty() && self.io.stats().open() == 0
        });
        if !closed {
            t.one("phase end: connections still open after the deadline");
        }
        records.sort_by_key(|r| r.seq);
        self.connected += records.iter().filter(|r| r.local.is_some()).count() as u64;
        let mut book = lock(&self.book);
        let mut closes = std::mem::take(&mut book.closed);
        per_client(&records, &mut closes, &mut checks, &mut t);
        let unmatched: Vec<String> = closes
            .iter()
            .flat_map(|((peer, listener), rs)| {
                rs.iter()
                    .map(move |r| format!("{peer} → {listener}: {r:?}"))
            })
            .collect();
        checks.for_all(
            "tcp",
            "every Closed the owner got belongs to a connection the soak opened",
            unmatched.len() as u64,
            unmatched,
        );
        let net = self.io.stats();
        totals(&book, &net, self, &mut checks);
        // These only grow: the phase reports what changed since the last one.
        let mut run = Tally::default();
        run.add("WriteHigh (owner)", book.write_high);
        drop(book);
        run.add("NetStats read_pauses", net.read_pauses);
        run.add("NetStats bytes_in", net.bytes_in);
        t.merge(&run.since(&self.reported));
        self.reported = run;
        (t, checks)
    }

    fn finish(&mut self) -> Checks {
        let mut checks = Checks::default();
        let Some(env) = self.env.take() else {
            return checks;
        };
        self.lines.close();
        self.raw.close();
        self.handle.stop();
        env.run();
        checks.eq(
            "tcp",
            "io threads exited after the shutdown (1 = yes)",
            u64::from(self.io.wait_threads(Duration::from_secs(10))),
            1,
        );
        let net = self.io.stats();
        checks.eq(
            "tcp",
            "final NetStats: opened == closed()",
            net.opened,
            net.closed(),
        );
        checks
    }
}

/// Matches each client to its connection's close and checks it.
fn per_client(
    records: &[ClientRecord],
    closes: &mut HashMap<Ends, VecDeque<CloseReason>>,
    checks: &mut Checks,
    t: &mut Tally,
) {
    let mut offenders = Vec::new();
    for r in records {
        let reason = r
            .local
            .and_then(|a| closes.get_mut(&(a, r.server)).and_then(VecDeque::pop_front));
        let kind = format!("{:?} {:?}", r.kind, r.side);
        t.one(format!("clients: {kind}"));
        let why = match (&reason, r.kind) {
            (None, _) => Some(format!("no Closed (client error {:?})", r.error)),
            (Some(reason), _) if !expected(r.kind, r.side, reason) => {
                Some(format!("closed with {reason:?}"))
            }
            (_, Kind::Normal) if r.echoes_bad > 0 || !r.completed => Some(format!(
                "{} echoes correct, {} wrong, completed {} ({:?})",
                r.echoes_ok, r.echoes_bad, r.completed, r.error
            )),
            (_, Kind::Flood) if r.side == Side::Lines && !r.held_back => Some(format!(
                "not held back after writing {} bytes ({:?})",
                r.bytes_written, r.error
            )),
            _ => None,
        };
        if let Some(reason) = reason {
            t.one(format!("closed: {kind} → {}", reason_kind(&reason).1));
        }
        t.add("echoes verified", r.echoes_ok);
        if r.kind == Kind::Flood {
            t.add(
                format!("flood bytes written ({:?})", r.side),
                r.bytes_written,
            );
        }
        if let Some(why) = why {
            offenders.push(format!(
                "client #{} {kind} from {:?}: {why} (client: {} echoes right, {} wrong, \
                 completed {}, held back {}, {} bytes written, error {:?})",
                r.seq,
                r.local,
                r.echoes_ok,
                r.echoes_bad,
                r.completed,
                r.held_back,
                r.bytes_written,
                r.error
            ));
        }
    }
    checks.for_all(
        "tcp",
        "each client's connection closed once, with its kind's reason (normal: every echo right)",
        records.len() as u64,
        offenders,
    );
}

/// The run's totals: the io dispatcher's counters against the owner's book and the clients.
fn totals(book: &Book, net: &NetStats, soak: &NetSoak, checks: &mut Checks) {
    let mut offenders = Vec::new();
    for (i, (name, kind)) in reason_kinds().iter().enumerate() {
        let counted = net.closed_for(kind);
        if counted != book.by_reason[i] {
            offenders.push(format!(
                "{name}: NetStats {counted}, owner {}",
                book.by_reason[i]
            ));
        }
    }
    checks.for_all(
        "tcp",
        "NetStats per-reason close counter == the owner's Closed messages of that reason",
        REASONS as u64,
        offenders,
    );
    checks.eq(
        "tcp",
        "Σ NetStats closed_* == NetStats::accepted",
        net.closed(),
        net.accepted,
    );
    checks.eq(
        "tcp",
        "NetStats::accepted == connections the soak's clients made",
        net.accepted,
        soak.connected,
    );
    checks.eq(
        "tcp",
        "Accepted messages the owner got == NetStats::accepted",
        book.accepted,
        net.accepted,
    );
    checks.eq(
        "tcp",
        "listeners' accepted (lines + raw) == NetStats::accepted",
        soak.lines.stats().accepted + soak.raw.stats().accepted,
        net.accepted,
    );
    checks.eq(
        "tcp",
        "Accepted twice, or Closed without Accepted == 0",
        book.duplicate_accepts + book.unknown_closes,
        0,
    );
    checks.eq(
        "tcp",
        "refused_over_limit + accept_errors == 0",
        net.refused_over_limit + net.accept_errors,
        0,
    );
}
