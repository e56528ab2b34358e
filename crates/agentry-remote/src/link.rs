//! The direct TCP link: two processes, no broker — SObjectizer 4.4's SOP channel in modern
//! form, with the same envelope and codec as NATS. Socket handling lives here, on
//! `std::net` blocking sockets and plain threads (no dependency on `agentry-net`).
//!
//! # Ground rules
//!
//! - **Roles.** One side listens (accepts one peer at a time; a new connection replaces the
//!   old), the other connects and reconnects with backoff. Both first exchange a Hello
//!   frame (magic, protocol version, namespace, gateway id); a mismatch refuses the
//!   connection (`handshake_failures`).
//! - **Threads.** A listening link has an acceptor thread and one reader thread per
//!   connection; a connecting link has one supervisor thread that dials, handshakes and then
//!   reads. A reader decodes frames and dispatches them inline (delivery to local mboxes,
//!   request routing, reply completion) — no extra hop.
//! - **Writes: what a batch of handlers sent leaves at the end of the batch, on their
//!   thread.** Whoever writes takes the writer role (one at a time), drains the outbound
//!   buffer in batches, encodes each batch into one byte buffer and writes it with one
//!   syscall, and re-checks the buffer after releasing the role. A push made while a
//!   dispatcher thread serves a batch of demands (a handler's send, request or reply)
//!   registers the link's flush with that batch (`agentry::disp::at_batch_end`): once the
//!   batch's last handler has returned (or before one blocks in an agentry request), the
//!   dispatcher thread writes everything buffered in one write — no thread hop, no wake-up
//!   per message, no timing guess. A push from any other thread: into an empty buffer more
//!   than `LINGER` (5 µs) after the previous such push (a lone message) it is written at
//!   once on the sender's thread; one that follows closely (a burst) wakes the link's
//!   writer thread instead, which then takes everything that accumulated in one write. A
//!   writer — a dispatcher thread too — may block while the socket buffer is full, at most
//!   the heartbeat timeout; then the connection is considered dead.
//! - **Heartbeats.** The reader wakes every heartbeat interval; if nothing was written for
//!   an interval it sends a Heartbeat frame (through the writer role, ahead of data); if
//!   nothing was read for the heartbeat timeout, the connection is closed
//!   (`heartbeat_timeouts`) and the connecting side reconnects.
//! - **Bad input.** A frame longer than `max_frame` is skipped unread and counted as
//!   oversized; a frame that does not decode is counted as malformed; both leave the
//!   connection up (framing is intact). Only I/O errors and silence end a connection.
//! - **Loss.** On a dropped connection, envelopes the writer had taken are counted in
//!   `lost_in_flight` only if their write failed; bytes the kernel accepted may still be
//!   lost with the peer (at-most-once). Requests in flight fail with `Disconnected`;
//!   buffered envelopes wait for the next connection.

pub mod frame;

use crate::backoff::backoff;
use crate::core::outbound::OutMsg;
use crate::core::pending::ReplyBytes;
use crate::core::{Core, Transport};
use crate::error::{DecodeError, FlushError, RemoteFailure, StartError};
use crate::event::LossReason;
use crate::stats::inc;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Link settings (set through [`GatewayBuilder`](crate::GatewayBuilder)).
#[derive(Debug, Clone)]
pub(crate) struct LinkOptions {
    pub(crate) backoff: (Duration, Duration),
    pub(crate) connect_timeout: Duration,
    pub(crate) retry_initial_connect: bool,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) heartbeat_timeout: Duration,
    pub(crate) max_frame: usize,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            backoff: (Duration::from_millis(50), Duration::from_secs(2)),
            connect_timeout: Duration::from_secs(2),
            retry_initial_connect: false,
            heartbeat_interval: Duration::from_secs(1),
            heartbeat_timeout: Duration::from_secs(5),
            max_frame: 1024 * 1024 + 4096,
        }
    }
}

/// Envelopes per write batch.
const BATCH: usize = 1024;
/// Frame bytes that are not payload, at most (subjects, type name, fixed fields).
const FRAME_OVERHEAD: usize = 1280;
/// Largest Hello frame accepted.
const MAX_HELLO: usize = 1024;
/// Pushes from outside a dispatcher batch closer together than this are left to the writer
/// thread (batched). A burst from a loop pushes every microsecond or so; a lone request
/// follows the previous one by a round trip (≥ 10 µs even over loopback).
const LINGER_NANOS: u64 = 5_000;

struct Conn {
    stream: TcpStream,
    dead: AtomicBool,
    /// Nanoseconds since the link's epoch of the last successful write.
    last_write: AtomicU64,
}

impl Conn {
    fn kill(&self) {
        if !self.dead.swap(true, Ordering::AcqRel) {
            let _ = self.stream.shutdown(Shutdown::Both);
        }
    }
    fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }
}

#[derive(Default)]
struct WriterState {
    busy: bool,
    heartbeat: bool,
    buf: Vec<u8>,
    batch: Vec<OutMsg>,
}

pub(crate) struct LinkShared {
    core: Arc<Core>,
    opts: LinkOptions,
    epoch: Instant,
    current: Mutex<Option<Arc<Conn>>>,
    writer: Mutex<WriterState>,
    writer_idle: Condvar,
    /// Nanoseconds since the epoch of the last push made outside a dispatcher batch.
    last_push: AtomicU64,
    /// The writer thread has work (set by a burst, cleared by the thread).
    writer_kick: Mutex<bool>,
    writer_kick_cv: Condvar,
    closed: AtomicBool,
    stop: Mutex<bool>,
    stop_cv: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    local_addr: Option<SocketAddr>,
    close_timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LinkShared {
    fn new(
        core: Arc<Core>,
        opts: LinkOptions,
        local_addr: Option<SocketAddr>,
        close_timeout: Duration,
    ) -> Arc<LinkShared> {
        core.limit_max_payload(opts.max_frame.saturating_sub(FRAME_OVERHEAD));
        let link = Arc::new(LinkShared {
            core: Arc::clone(&core),
            opts,
            epoch: Instant::now(),
            current: Mutex::new(None),
            writer: Mutex::new(WriterState::default()),
            writer_idle: Condvar::new(),
            last_push: AtomicU64::new(0),
            writer_kick: Mutex::new(false),
            writer_kick_cv: Condvar::new(),
            closed: AtomicBool::new(false),
            stop: Mutex::new(false),
            stop_cv: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            local_addr,
            close_timeout,
        });
        core.set_transport(Box::new(Handoff(Arc::downgrade(&link))));
        link
    }

    pub(crate) fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    fn now_nanos(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn spawn(
        self: &Arc<Self>,
        name: &str,
        body: impl FnOnce(Arc<LinkShared>) + Send + 'static,
    ) -> std::io::Result<()> {
        let this = Arc::clone(self);
        let join = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(this))?;
        let mut threads = lock(&self.threads);
        threads.retain(|t| !t.is_finished());
        threads.push(join);
        Ok(())
    }

    /// A link that dials `addrs` (first successful address wins) and keeps reconnecting.
    pub(crate) fn connect(
        core: Arc<Core>,
        addrs: Vec<SocketAddr>,
        opts: LinkOptions,
        close_timeout: Duration,
    ) -> Result<Arc<LinkShared>, StartError> {
        let retry = opts.retry_initial_connect;
        let link = LinkShared::new(core, opts, None, close_timeout);
        link.spawn("agentry-link-writer", |l| l.run_writer())
            .map_err(StartError::Runtime)?;
        let first = match link.dial(&addrs) {
            Ok(c) => Some(c),
            Err(e) if retry => {
                tracing::warn!(error = %e, "link: first connection failed; retrying in the background");
                None
            }
            Err(e) => return Err(StartError::Io(e)),
        };
        link.spawn("agentry-link", move |l| l.run_connector(addrs, first))
            .map_err(StartError::Runtime)?;
        Ok(link)
    }

    /// A link that accepts one peer at a time on `listener`.
    pub(crate) fn listen(
        core: Arc<Core>,
        listener: TcpListener,
        opts: LinkOptions,
        close_timeout: Duration,
    ) -> Result<Arc<LinkShared>, StartError> {
        let addr = listener.local_addr().map_err(StartError::Io)?;
        let link = LinkShared::new(core, opts, Some(addr), close_timeout);
        link.spawn("agentry-link-writer", |l| l.run_writer())
            .map_err(StartError::Runtime)?;
        link.spawn("agentry-link-accept", move |l| l.run_acceptor(listener))
            .map_err(StartError::Runtime)?;
        Ok(link)
    }

    fn dial(self: &Arc<Self>, addrs: &[SocketAddr]) -> std::io::Result<(Arc<Conn>, TcpStream)> {
        let mut last = std::io::Error::new(ErrorKind::InvalidInput, "no address to connect to");
        for a in addrs {
            match TcpStream::connect_timeout(a, self.opts.connect_timeout) {
                Ok(s) => match self.handshake(&s) {
                    Ok(()) => return self.install(s),
                    Err(e) => {
                        inc(&self.core.counters.handshake_failures);
                        tracing::warn!(peer = %a, error = %e, "link handshake failed");
                        last = std::io::Error::new(ErrorKind::InvalidData, e);
                    }
                },
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Exchanges Hello frames; checks protocol and namespace.
    fn handshake(&self, s: &TcpStream) -> Result<(), String> {
        let t = Some(self.opts.heartbeat_timeout);
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_read_timeout(t).map_err(|e| e.to_string())?;
        s.set_write_timeout(t).map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        frame::encode_hello(
            &mut buf,
            self.core.scheme.namespace(),
            &self.core.gateway_id,
        );
        (&*s).write_all(&buf).map_err(|e| e.to_string())?;
        let mut len = [0u8; 4];
        (&*s).read_exact(&mut len).map_err(|e| e.to_string())?;
        let n = u32::from_be_bytes(len) as usize;
        if n > MAX_HELLO {
            return Err(format!("first frame of {n} bytes is not a Hello"));
        }
        let mut body = vec![0u8; n];
        (&*s).read_exact(&mut body).map_err(|e| e.to_string())?;
        match frame::Frame::decode(&body) {
            Ok(frame::Frame::Hello {
                protocol,
                namespace,
                gateway,
            }) => {
                if protocol != frame::PROTOCOL {
                    return Err(format!(
                        "peer speaks link protocol {protocol}, we speak {}",
                        frame::PROTOCOL
                    ));
                }
                if namespace != self.core.scheme.namespace() {
                    return Err(format!(
                        "peer is in namespace `{namespace}`, we are in `{}`",
                        self.core.scheme.namespace()
                    ));
                }
                tracing::info!(peer_gateway = gateway, "link handshake done");
                Ok(())
            }
            Ok(_) => Err("first frame is not a Hello".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Makes `s` the current connection and sends what is buffered.
    fn install(self: &Arc<Self>, s: TcpStream) -> std::io::Result<(Arc<Conn>, TcpStream)> {
        s.set_read_timeout(Some(self.opts.heartbeat_interval))?;
        let conn = Arc::new(Conn {
            stream: s.try_clone()?,
            dead: AtomicBool::new(false),
            last_write: AtomicU64::new(self.now_nanos()),
        });
        let old = lock(&self.current).replace(Arc::clone(&conn));
        if let Some(old) = old {
            old.kill();
            self.core.set_disconnected();
        }
        if self.closed.load(Ordering::Acquire) {
            conn.kill();
        } else {
            self.core.set_connected();
            self.flush_queue();
        }
        Ok((conn, s))
    }

    fn current_conn(&self) -> Option<Arc<Conn>> {
        lock(&self.current).clone().filter(|c| !c.is_dead())
    }

    fn conn_ended(&self, conn: &Arc<Conn>) {
        conn.kill();
        let mut cur = lock(&self.current);
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *cur = None;
            drop(cur);
            self.core.set_disconnected();
        }
    }

    /// Sleeps `d` unless the link closes first; true if closed.
    fn sleep_unless_closed(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut stop = lock(&self.stop);
        loop {
            if *stop {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stop = self
                .stop_cv
                .wait_timeout(stop, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn run_connector(
        self: Arc<Self>,
        addrs: Vec<SocketAddr>,
        mut next: Option<(Arc<Conn>, TcpStream)>,
    ) {
        let mut attempt = 0usize;
        loop {
            if let Some((conn, stream)) = next.take() {
                attempt = 0;
                self.read_loop(&conn, stream);
            }
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            if self.sleep_unless_closed(backoff(attempt, self.opts.backoff)) {
                return;
            }
            attempt += 1;
            match self.dial(&addrs) {
                Ok(c) => next = Some(c),
                Err(e) => tracing::debug!(error = %e, attempt, "link: reconnect failed"),
            }
        }
    }

    fn run_acceptor(self: Arc<Self>, listener: TcpListener) {
        for stream in listener.incoming() {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            let s = match stream {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "link: accept failed");
                    if self.sleep_unless_closed(Duration::from_millis(20)) {
                        return;
                    }
                    continue;
                }
            };
            if let Err(e) = self.handshake(&s) {
                inc(&self.core.counters.handshake_failures);
                tracing::warn!(peer = ?s.peer_addr().ok(), error = %e, "link handshake failed");
                continue;
            }
            let (conn, stream) = match self.install(s) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "link: could not set up the connection");
                    continue;
                }
            };
            let spawned = self.spawn("agentry-link-reader", move |l| l.read_loop(&conn, stream));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "link: could not start a reader thread");
            }
        }
    }

    fn read_loop(&self, conn: &Arc<Conn>, mut stream: TcpStream) {
        // buf[start..end] holds received bytes not yet decoded.
        let mut buf = vec![0u8; 256 * 1024];
        let (mut start, mut end) = (0usize, 0usize);
        let mut skip: u64 = 0;
        let mut last_read = Instant::now();
        let interval_nanos =
            u64::try_from(self.opts.heartbeat_interval.as_nanos()).unwrap_or(u64::MAX);
        loop {
            if conn.is_dead() || self.closed.load(Ordering::Acquire) {
                break;
            }
            if end == buf.len() {
                if start > 0 {
                    buf.copy_within(start..end, 0);
                    end -= start;
                    start = 0;
                } else {
                    // One frame (at most max_frame + 4 bytes, checked) larger than the buffer.
                    buf.resize(buf.len() * 2, 0);
                }
            }
            match stream.read(&mut buf[end..]) {
                Ok(0) => {
                    tracing::debug!("link: peer closed the connection");
                    break;
                }
                Ok(n) => {
                    end += n;
                    last_read = Instant::now();
                    start += self.process(&buf[start..end], &mut skip);
                    if start == end {
                        (start, end) = (0, 0);
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if last_read.elapsed() >= self.opts.heartbeat_timeout {
                        inc(&self.core.counters.heartbeat_timeouts);
                        tracing::warn!("link: peer silent for the heartbeat timeout; closing");
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(error = %e, "link: read failed");
                    break;
                }
            }
            let idle = self
                .now_nanos()
                .saturating_sub(conn.last_write.load(Ordering::Relaxed));
            if idle >= interval_nanos {
                lock(&self.writer).heartbeat = true;
                self.write_pending();
            }
        }
        self.conn_ended(conn);
    }

    /// Decodes and dispatches every complete frame at the front of `data`; returns the
    /// bytes consumed (including skipped bytes of an oversized frame).
    fn process(&self, data: &[u8], skip: &mut u64) -> usize {
        let mut pos = 0usize;
        if *skip > 0 {
            let k = usize::try_from(*skip).unwrap_or(usize::MAX).min(data.len());
            pos = k;
            *skip -= k as u64;
        }
        while let Some(len) = frame::peek_len(&data[pos..]) {
            let len = len as usize;
            if len > self.opts.max_frame {
                self.core.reject(
                    "(link frame)",
                    DecodeError::Oversized {
                        size: len,
                        max: self.opts.max_frame,
                    },
                );
                let avail = data.len() - pos - 4;
                if avail >= len {
                    pos += 4 + len;
                    continue;
                }
                *skip = (len - avail) as u64;
                return data.len();
            }
            let Some((body, used)) = frame::split(&data[pos..]) else {
                break;
            };
            self.handle_frame(body);
            pos += used;
        }
        pos
    }

    fn handle_frame(&self, body: &[u8]) {
        let core = &self.core;
        match frame::Frame::decode(body) {
            Err(e) => core.reject("(link frame)", e),
            Ok(frame::Frame::Heartbeat) => {}
            Ok(frame::Frame::Hello { .. }) => core.reject(
                "(link frame)",
                DecodeError::malformed("frame", "unexpected Hello"),
            ),
            Ok(frame::Frame::Message {
                subject,
                reply,
                envelope,
                payload,
            }) => {
                if subject.starts_with(core.scheme.reply_prefix()) {
                    core.dispatch_reply(
                        subject,
                        false,
                        Ok(envelope),
                        ReplyBytes::Borrowed(payload),
                    );
                } else if let Some(tables) = core.tables_of(subject) {
                    for t in &tables {
                        core.dispatch(t, subject, reply, Ok(envelope.clone()), payload);
                    }
                } else {
                    inc(&core.counters.received);
                    inc(&core.counters.unrouted);
                    tracing::debug!(subject, "link: nothing routes this subject here");
                    if let Some(r) = reply {
                        core.send_failure(r, envelope.corr, RemoteFailure::NoRoute);
                    }
                }
            }
        }
    }

    /// Writes what is buffered now, on this thread.
    pub(crate) fn flush_queue(&self) {
        self.write_pending();
    }

    /// Called after every push (on the pushing thread). Inside a dispatcher batch, the
    /// link's flush is left to the batch's end. Elsewhere, a push into an empty buffer that
    /// follows the previous such push by at least `LINGER` is a lone envelope, written at
    /// once; one that follows closely is part of a burst and wakes the writer thread (see
    /// the ground rules).
    pub(crate) fn on_push(self: &Arc<Self>, was_empty: bool) {
        if agentry::disp::at_batch_end(self) {
            return;
        }
        let now = self.now_nanos();
        let last = self.last_push.swap(now, Ordering::Relaxed);
        if !was_empty {
            return;
        }
        if now.saturating_sub(last) >= LINGER_NANOS {
            self.write_pending();
        } else {
            let mut k = lock(&self.writer_kick);
            if !*k {
                *k = true;
                self.writer_kick_cv.notify_one();
            }
        }
    }

    fn run_writer(self: Arc<Self>) {
        loop {
            {
                let mut k = lock(&self.writer_kick);
                while !*k && !self.closed.load(Ordering::Acquire) {
                    k = self
                        .writer_kick_cv
                        .wait(k)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if self.closed.load(Ordering::Acquire) {
                    return;
                }
                *k = false;
            }
            self.write_pending();
        }
    }

    /// Takes the writer role (unless someone holds it) and writes until the buffer is empty.
    fn write_pending(&self) {
        loop {
            let Some(conn) = self.current_conn() else {
                return;
            };
            let (mut buf, mut batch, heartbeat) = {
                let mut w = lock(&self.writer);
                if w.busy {
                    return;
                }
                w.busy = true;
                (
                    std::mem::take(&mut w.buf),
                    std::mem::take(&mut w.batch),
                    std::mem::take(&mut w.heartbeat),
                )
            };
            let mut failed = false;
            if heartbeat {
                buf.clear();
                frame::encode_heartbeat(&mut buf);
                failed = self.write(&conn, &buf).is_err();
            }
            while !failed {
                batch.clear();
                self.core.drain(&mut batch, BATCH);
                if batch.is_empty() {
                    break;
                }
                buf.clear();
                for m in &batch {
                    frame::encode_message(
                        &mut buf,
                        m.subject.as_str(),
                        m.reply.as_ref().map(|r| r.as_str()),
                        &m.envelope,
                        &m.payload,
                    );
                }
                if self.write(&conn, &buf).is_ok() {
                    self.core.handed_over(&batch);
                    batch.clear();
                } else {
                    for m in batch.drain(..) {
                        self.core.lose(m, LossReason::InFlight);
                    }
                    failed = true;
                }
                self.core.done_writing();
            }
            self.core.done_writing();
            {
                let mut w = lock(&self.writer);
                w.busy = false;
                if buf.capacity() > 4 * 1024 * 1024 {
                    buf = Vec::new();
                }
                w.buf = buf;
                w.batch = batch;
            }
            self.writer_idle.notify_all();
            if failed || self.core.queue_len() == 0 {
                return;
            }
        }
    }

    fn write(&self, conn: &Conn, bytes: &[u8]) -> std::io::Result<()> {
        match (&conn.stream).write_all(bytes) {
            Ok(()) => {
                conn.last_write.store(self.now_nanos(), Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "link: write failed; dropping the connection");
                conn.kill();
                Err(e)
            }
        }
    }

    pub(crate) fn flush(&self, timeout: Duration) -> Result<(), FlushError> {
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        if self.core.is_closed() {
            return Err(FlushError::Closed);
        }
        self.write_pending();
        if self.core.wait_until(deadline, |c| c.is_drained()) {
            return Ok(());
        }
        Err(if self.core.is_connected() {
            FlushError::Timeout
        } else {
            FlushError::Disconnected
        })
    }

    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.core.is_connected() {
            let deadline = Instant::now() + self.close_timeout;
            self.write_pending();
            self.core
                .wait_until(deadline, |c| c.is_drained() || !c.is_connected());
        }
        self.core.close();
        *lock(&self.stop) = true;
        self.stop_cv.notify_all();
        {
            let _k = lock(&self.writer_kick);
            self.writer_kick_cv.notify_all();
        }
        if let Some(c) = lock(&self.current).take() {
            c.kill();
        }
        if let Some(addr) = self.local_addr {
            // Wake the acceptor blocked in accept().
            let wake = match addr {
                SocketAddr::V4(a) if a.ip().is_unspecified() => {
                    SocketAddr::from(([127, 0, 0, 1], a.port()))
                }
                SocketAddr::V6(a) if a.ip().is_unspecified() => {
                    SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port()))
                }
                a => a,
            };
            let _ = TcpStream::connect_timeout(&wake, Duration::from_millis(500));
        }
        let me = std::thread::current().id();
        let threads = std::mem::take(&mut *lock(&self.threads));
        for t in threads {
            if t.thread().id() != me && t.join().is_err() {
                tracing::error!("a link thread panicked");
            }
        }
        tracing::debug!(gateway = %self.core.gateway_id, "link closed");
    }
}

/// The end of a dispatcher batch in which handlers pushed: write what they sent.
impl agentry::disp::BatchEnd for LinkShared {
    fn batch_ended(&self) {
        self.write_pending();
    }
}

/// What the core asks of the link: every push is handed to [`LinkShared::on_push`]. The
/// link never publishes through the core's direct path: its lone-envelope write on the
/// sender's thread happens in `on_push`, under the writer role.
struct Handoff(std::sync::Weak<LinkShared>);

impl Transport for Handoff {
    fn wake_writer(&self) {
        if let Some(link) = self.0.upgrade() {
            link.write_pending();
        }
    }

    fn pushed(&self, was_empty: bool) {
        if let Some(link) = self.0.upgrade() {
            link.on_push(was_empty);
        }
    }

    fn publishes_directly(&self) -> bool {
        false
    }

    fn publish_now(&self, _: &OutMsg) -> bool {
        false
    }
}
