//! The channel agent: one TCP connection, owned by an io thread.
//!
//! # Ground rules
//!
//! - A channel is an ordinary agent bound to an [`IoDispatcher`](crate::IoDispatcher) thread;
//!   it holds its `mio::net::TcpStream` and reads and writes it in its own handlers, on that
//!   thread. It registers the stream with the thread's loop in `on_start` and learns of
//!   readiness through [`IoReady`] (see `reactor.rs`). Nothing else touches the socket.
//! - Reading follows mio's edge-triggered contract: read until `WouldBlock` (or a short read,
//!   which on a stream socket means the receive queue was emptied and new data raises a new
//!   edge — unless the poll already reported the peer's end of stream, which raises no new
//!   edge: then read on to the end); if the channel
//!   stops early — read budget spent (fairness: it re-queues itself with `ReadMore` behind the
//!   thread's other work), owner's inbound credit exhausted, owner's `PauseReading`, or the
//!   unwritten bytes over the high watermark — it sets `read_pending` and resumes by itself
//!   when the cause goes away (`ReadMore`, `CreditReturned`, `ResumeReading`, the low
//!   watermark).
//! - Writing: a send that finds nothing unwritten is written at once if it is the first this
//!   channel makes in the current *turn* of its io loop (a turn ends each time the loop looks
//!   at its sockets) — a lone reply pays no hop. The sends that follow it in the same turn
//!   are *staged* (kept in the write buffer without copying) and the channel queues itself a
//!   `FlushStaged`; the sends that reach it before that message join them, and `FlushStaged`
//!   writes them all with one `writev` — so a reply an owner sends in ten pieces, or the
//!   replies to a burst of requests, cost two calls instead of ten. Staging stops at
//!   `STAGE_MAX` bytes (or `write_high`, if lower) or `writev`'s slice limit: the send that
//!   reaches it writes at once. What the socket does not take stays queued and is written on
//!   the next writable event. A send that would take the unwritten bytes past `write_max`
//!   closes the connection (`WriteOverflow`); watermarks and that limit count the bytes a
//!   write attempt left, never the staged ones.
//! - Watermarks: the *unwritten* bytes are the write buffer plus, with
//!   `pause_reading_on_write_high` (the default), the `SendBytes` / `SendFrame` already sent
//!   to the channel but not yet taken. When they reach `write_high` the owner gets
//!   `WriteHigh` and (with the pause) reading stops; back at `write_low` the owner gets
//!   `WriteLow` and reading resumes. The queued sends are counted on the sender's thread by
//!   insend handlers before the sender's handler returns, so before it returns the credit of
//!   the request it answers (`channel/queued.rs`): replies waiting in the io thread's
//!   cross-thread queue hold the reading back too.
//! - Memory per connection is therefore bounded by `write_max` + `max_frame` (+ prefix), and
//!   the owner's queue by `inbound_max` bytes of received data: nothing grows with what a
//!   peer sends or refuses to read.
//! - Closing happens once (`shut`), for one reason, counted once in the thread's counters;
//!   the owner's last message from the channel is `Closed`. For a peer's end of stream, a
//!   time limit, an oversized frame or the owner's `Close`, the channel then *drains*: it
//!   reads no more, but keeps writing until the owner has dropped every message it was given
//!   (`Closed` included, which holds one byte of inbound credit) and the write buffer is
//!   empty, bounded by `linger`. Whatever the owner sent while handling those messages is
//!   queued at the channel before the credit's `CreditReturned` (one sender's messages
//!   arrive in order), so a reply to the last request is not lost. Errors, write overflow and
//!   shutdown tear down at once. Teardown closes the socket and deregisters the channel's coop
//!   (for a per-connection owner, the owner goes with it).
//! - Time limits (idle timeout, frame deadline, minimum receive rate, maximum lifetime): one
//!   agentry timer per limit and period, never one per message or frame; at expiry the
//!   channel asks its `Limits` (`channel/limits.rs`, sans-IO) whether to close or to re-arm
//!   for the remainder. A read costs them at most one clock read. While the channel holds
//!   reading itself (owner's pause, write high, credit), the frame and rate limits are not
//!   charged to the peer.
//! - Trace context: with a trace-context hook on the environment
//!   ([`EnvBuilder::trace_context`](agentry::EnvBuilder::trace_context)), each read batch runs
//!   in a span of its own (`read`, target `agentry_net::read`, the root of a new trace), so
//!   the `Received` / `Frame` messages it delivers — and whatever the owner's handlers send
//!   on, replies to this channel included — join that trace; messages the channel sends from
//!   its other handlers carry the context those handlers run in. The bytes on the socket
//!   stay the user's: no context is read from or written to them.

mod limits;
mod queued;
mod write_buffer;

use crate::admission::{OpenSlot, OwnerRef};
use crate::config::ChannelConfig;
use crate::credit::{CreditPool, CreditReturned};
use crate::error::ConnectError;
use crate::framing::{Decoder, Framing, TooBig, encode};
use crate::ids::{ConnId, IoKey};
use crate::messages::{
    Accepted, Close, CloseReason, Closed, ConnectFailed, Connected, Frame, PauseReading, Received,
    ResumeReading, SendBytes, SendFrame, WriteHigh, WriteLow,
};
use crate::reactor::{self, IoReady, Readiness};
use crate::stats::Counters;
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Mbox, UserError, timer::TimerHandle};
use limits::{Limits, Verdict};
use mio::Interest;
use mio::net::TcpStream;
use queued::{Pending, Queued};
use std::cell::RefCell;
use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use write_buffer::{Flushed, WriteBuffer};

/// Size of the per-thread read buffer (one read takes at most this much).
const READ_BUF: usize = 64 * 1024;
/// Most bytes staged for the end of the batch (see the ground rules): past it a send writes
/// at once (a larger batch would gain nothing — one `writev` of this much costs far more than
/// the call — and staged bytes are memory the watermarks do not see).
const STAGE_MAX: usize = 64 * 1024;

thread_local! {
    /// Shared by every channel of an io thread: channels run one at a time.
    static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_BUF]);
}

/// Continue reading after yielding to the thread's other agents.
struct ReadMore;
/// Write what was staged since the first send of this batch.
struct FlushStaged;
/// Check the idle timeout.
struct IdleCheck;
/// Check the frame deadline.
struct FrameCheck;
/// A minimum-rate window is over.
struct RateCheck;
/// The maximum lifetime is over.
struct LifetimeOver;
/// The linger time after `Close` is over.
struct LingerExpired;
/// The connect timeout is over.
struct ConnectTimeout;

/// How the channel came to be.
enum Origin {
    Accepted {
        peer: SocketAddr,
        local: SocketAddr,
        slot: Option<OpenSlot>,
    },
    Connect {
        addr: SocketAddr,
        timeout: Duration,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Starting,
    Connecting,
    Open,
    /// `Close` received; writing out the write buffer before `Closed`.
    Closing,
    /// `Closed` sent; waiting for the owner to handle it and for the write buffer to drain.
    Draining,
    /// Torn down.
    Closed,
}

pub(crate) struct Channel {
    conn: ConnId,
    owner: Mbox,
    /// Where a per-connection owner is found at registration.
    pending_owner: Option<Arc<OnceLock<Mbox>>>,
    config: ChannelConfig,
    origin: Origin,
    stream: Option<TcpStream>,
    key: Option<IoKey>,
    phase: Phase,
    decoder: Decoder,
    wbuf: WriteBuffer,
    /// `wbuf` holds only sends no write was tried for yet, and a `FlushStaged` is queued.
    staged: bool,
    /// The io loop's turn (`reactor::turn`) of the last send written at once.
    write_turn: u64,
    /// Draining: the owner has dropped every message it was given (`learn_owner_done`).
    owner_done: bool,
    /// `SendBytes` / `SendFrame` sent to the channel and not yet taken into `wbuf` (counted
    /// only with `pause_reading_on_write_high`; `channel/queued.rs`).
    pending: Pending,
    credit: Option<Arc<CreditPool>>,
    counters: Arc<Counters>,
    read_pending: bool,
    /// The poll reported the peer's end of stream (or an error): read until `WouldBlock` or
    /// the end, a short read proves nothing (no new edge will come).
    read_closed_seen: bool,
    read_more_queued: bool,
    owner_paused: bool,
    /// The owner sent `Close`: later sends are refused.
    owner_closed: bool,
    /// The unwritten bytes reached `write_high` and `WriteHigh` was sent; `WriteLow` is due
    /// (and reading resumes, with `pause_reading_on_write_high`) when they are back at
    /// `write_low`.
    over_high: bool,
    /// Reading stopped because the owner's inbound credit is used up (until `CreditReturned`).
    credit_parked: bool,
    limits: Limits,
    idle_timer: Option<TimerHandle>,
    frame_timer: Option<TimerHandle>,
    rate_timer: Option<TimerHandle>,
    lifetime_timer: Option<TimerHandle>,
    /// The connect timeout while connecting, the linger timer while closing.
    phase_timer: Option<TimerHandle>,
    bytes_in: u64,
    bytes_out: u64,
    /// The environment has a trace-context hook: each read batch runs in a root span (see
    /// the ground rules).
    trace_reads: bool,
}

impl Channel {
    fn new(conn: ConnId, owner: OwnerRef, config: ChannelConfig, origin: Origin) -> Self {
        let (owner, pending_owner) = match owner {
            OwnerRef::Known(owner) => (owner, None),
            // Replaced in `define` (the factory sets the owner before the coop registers).
            OwnerRef::Pending { cell, placeholder } => (placeholder, Some(cell)),
        };
        Channel {
            conn,
            owner,
            pending_owner,
            decoder: Decoder::new(config.framing, config.max_frame),
            limits: Limits::new(&config, Instant::now()),
            config,
            origin,
            stream: None,
            key: None,
            phase: Phase::Starting,
            wbuf: WriteBuffer::default(),
            staged: false,
            write_turn: u64::MAX,
            owner_done: false,
            pending: Pending::default(),
            credit: None,
            counters: Arc::default(),
            read_pending: false,
            read_closed_seen: false,
            read_more_queued: false,
            owner_paused: false,
            owner_closed: false,
            over_high: false,
            credit_parked: false,
            idle_timer: None,
            frame_timer: None,
            rate_timer: None,
            lifetime_timer: None,
            phase_timer: None,
            bytes_in: 0,
            bytes_out: 0,
            trace_reads: false,
        }
    }

    /// A channel for an accepted connection.
    pub(crate) fn accepted(
        conn: ConnId,
        stream: TcpStream,
        peer: SocketAddr,
        local: SocketAddr,
        owner: OwnerRef,
        config: ChannelConfig,
        slot: OpenSlot,
    ) -> Self {
        let mut channel = Channel::new(
            conn,
            owner,
            config,
            Origin::Accepted {
                peer,
                local,
                slot: Some(slot),
            },
        );
        channel.stream = Some(stream);
        channel
    }

    /// A channel that connects to `addr` when it starts.
    pub(crate) fn connecting(
        conn: ConnId,
        addr: SocketAddr,
        timeout: Duration,
        owner: Mbox,
        config: ChannelConfig,
    ) -> Self {
        Channel::new(
            conn,
            OwnerRef::Known(owner),
            config,
            Origin::Connect { addr, timeout },
        )
    }
}

impl Agent for Channel {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        if let Some(owner) = self
            .pending_owner
            .take()
            .and_then(|cell| cell.get().cloned())
        {
            self.owner = owner;
        }
        self.credit = Some(CreditPool::new(self.config.inbound_max, def.mbox().clone()));
        if self.config.pause_reading_on_write_high {
            // Counted on the sender's thread, then handled as `Queued` (`channel/queued.rs`).
            queued::count_sends(def, self.config.framing, &self.pending)?;
        } else {
            def.on(Channel::on_send_bytes)?.on(Channel::on_send_frame)?;
        }
        def.on(Channel::on_ready)?
            .on(Channel::on_queued)?
            .on(Channel::on_close)?
            .on(Channel::on_pause)?
            .on(Channel::on_resume)?
            .on(Channel::on_read_more)?
            .on(Channel::on_flush_staged)?
            .on(Channel::on_credit_returned)?
            .on(Channel::on_idle_check)?
            .on(Channel::on_frame_check)?
            .on(Channel::on_rate_check)?
            .on(Channel::on_lifetime_over)?
            .on(Channel::on_linger_expired)?
            .on(Channel::on_connect_timeout)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let Some(counters) = reactor::counters() else {
            tracing::error!(conn = %self.conn, "a channel must run on an io dispatcher thread");
            self.fail_start(ctx, io::ErrorKind::Unsupported);
            return Ok(());
        };
        self.counters = counters;
        self.trace_reads = ctx.env().trace_context_hook().is_some();
        match self.origin {
            Origin::Accepted { peer, local, .. } => self.open_accepted(ctx, peer, local),
            Origin::Connect { addr, timeout } => self.start_connect(ctx, addr, timeout),
        }
        Ok(())
    }

    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        match self.phase {
            Phase::Starting | Phase::Connecting => {
                if matches!(self.origin, Origin::Connect { .. }) {
                    self.report_connect_failed(ConnectError::Shutdown);
                } else {
                    self.release_socket();
                    self.phase = Phase::Closed;
                }
            }
            Phase::Open | Phase::Closing => {
                self.shut(ctx, CloseReason::Shutdown);
                self.teardown();
            }
            Phase::Draining => self.teardown(),
            Phase::Closed => {}
        }
    }
}

impl Channel {
    // ---- start-up -------------------------------------------------------------------------

    fn open_accepted(&mut self, ctx: &mut Ctx<Self>, peer: SocketAddr, local: SocketAddr) {
        self.announce_accepted(ctx, peer, local);
        if let Some(stream) = &self.stream
            && let Err(e) = stream.set_nodelay(self.config.nodelay)
        {
            tracing::debug!(conn = %self.conn, error = %e, "could not set TCP_NODELAY");
        }
        if let Err(e) = self.register(ctx) {
            self.close(ctx, CloseReason::Error(e.kind()));
            return;
        }
        self.start_limits(ctx);
    }

    /// The accepted connection is open: counted, and the owner's first message sent (so
    /// that even a connection that fails at once reaches its owner as `Accepted`, `Closed`).
    fn announce_accepted(&mut self, ctx: &mut Ctx<Self>, peer: SocketAddr, local: SocketAddr) {
        self.phase = Phase::Open;
        Counters::add(&self.counters.opened, 1);
        self.owner.send(Accepted {
            conn: self.conn,
            channel: ctx.mbox().clone(),
            peer,
            local,
        });
    }

    fn start_connect(&mut self, ctx: &mut Ctx<Self>, addr: SocketAddr, timeout: Duration) {
        match TcpStream::connect(addr) {
            Ok(stream) => self.stream = Some(stream),
            Err(e) => {
                self.connect_failed(ctx, ConnectError::from_io(&e));
                return;
            }
        }
        if let Err(e) = self.register(ctx) {
            self.connect_failed(ctx, ConnectError::from_io(&e));
            return;
        }
        self.phase = Phase::Connecting;
        self.phase_timer = Some(ctx.send_delayed(ctx.mbox(), timeout, ConnectTimeout));
    }

    fn register(&mut self, ctx: &mut Ctx<Self>) -> io::Result<()> {
        let Some(stream) = self.stream.as_mut() else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        match reactor::register(stream, Interest::READABLE | Interest::WRITABLE, ctx.mbox()) {
            Ok(key) => {
                self.key = Some(key);
                Ok(())
            }
            Err(crate::NetError::Io(e)) => Err(e),
            Err(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    fn fail_start(&mut self, ctx: &mut Ctx<Self>, kind: io::ErrorKind) {
        match self.origin {
            Origin::Connect { .. } => self.connect_failed(ctx, ConnectError::Io(kind)),
            Origin::Accepted { peer, local, .. } => {
                self.announce_accepted(ctx, peer, local);
                self.close(ctx, CloseReason::Error(kind));
            }
        }
    }

    fn check_connected(&mut self, ctx: &mut Ctx<Self>, ready: Readiness) {
        let Some(stream) = self.stream.as_ref() else {
            return;
        };
        match stream.take_error() {
            Ok(Some(e)) | Err(e) => {
                self.connect_failed(ctx, ConnectError::from_io(&e));
                return;
            }
            Ok(None) => {}
        }
        let peer = match stream.peer_addr() {
            Ok(peer) => peer,
            Err(e) if e.kind() == io::ErrorKind::NotConnected && !ready.is_error() => return,
            Err(e) => {
                self.connect_failed(ctx, ConnectError::from_io(&e));
                return;
            }
        };
        let local = stream.local_addr().unwrap_or(peer);
        if let Err(e) = stream.set_nodelay(self.config.nodelay) {
            tracing::debug!(conn = %self.conn, error = %e, "could not set TCP_NODELAY");
        }
        self.phase_timer = None;
        self.phase = Phase::Open;
        Counters::add(&self.counters.connected, 1);
        Counters::add(&self.counters.opened, 1);
        tracing::debug!(conn = %self.conn, %peer, "connected");
        self.owner.send(Connected {
            conn: self.conn,
            channel: ctx.mbox().clone(),
            peer,
            local,
        });
        self.start_limits(ctx);
        // Sends made while connecting were buffered.
        self.flush(ctx);
        if self.phase == Phase::Open && ready.is_readable() {
            self.read(ctx);
        }
    }

    /// Reports a failed connection attempt (no `Closed` follows) and deregisters the coop.
    fn connect_failed(&mut self, ctx: &mut Ctx<Self>, error: ConnectError) {
        self.report_connect_failed(error);
        ctx.deregister_coop(DeregReason::Normal);
    }

    fn report_connect_failed(&mut self, error: ConnectError) {
        if self.phase == Phase::Closed {
            return;
        }
        self.phase = Phase::Closed;
        self.release_socket();
        self.phase_timer = None;
        self.wbuf.clear();
        Counters::add(&self.counters.connect_failed, 1);
        let addr = match self.origin {
            Origin::Connect { addr, .. } => addr,
            Origin::Accepted { peer, .. } => peer,
        };
        tracing::debug!(conn = %self.conn, %addr, %error, "connect failed");
        self.owner.send(ConnectFailed {
            conn: self.conn,
            addr,
            error,
        });
    }

    // ---- handlers -------------------------------------------------------------------------

    fn on_ready(&mut self, ctx: &mut Ctx<Self>, IoReady { key }: IoReady) {
        if self.key != Some(key) {
            return;
        }
        let ready = reactor::take_readiness(key);
        if ready.is_read_closed() || ready.is_error() {
            self.read_closed_seen = true;
        }
        match self.phase {
            Phase::Connecting => self.check_connected(ctx, ready),
            Phase::Open => {
                if ready.is_writable() && !self.wbuf.is_empty() {
                    self.flush(ctx);
                }
                if self.phase == Phase::Open && ready.is_readable() {
                    self.read(ctx);
                }
            }
            Phase::Closing | Phase::Draining => {
                if ready.is_writable() {
                    self.flush(ctx);
                }
            }
            Phase::Starting | Phase::Closed => {}
        }
    }

    fn on_send_bytes(&mut self, ctx: &mut Ctx<Self>, SendBytes(data): SendBytes) {
        self.send(ctx, data);
    }

    fn on_send_frame(&mut self, ctx: &mut Ctx<Self>, SendFrame(payload): SendFrame) {
        self.send_frame(ctx, payload);
    }

    fn on_queued(&mut self, ctx: &mut Ctx<Self>, queued: Queued) {
        let Queued {
            data,
            frame,
            counted,
        } = queued;
        self.pending.taken(counted);
        if frame {
            self.send_frame(ctx, data);
        } else {
            self.send(ctx, data);
        }
        self.check_low_watermark(ctx);
    }

    fn send_frame(&mut self, ctx: &mut Ctx<Self>, payload: Vec<u8>) {
        if !self.accepts_sends() {
            Counters::add(&self.counters.sends_after_close, 1);
            return;
        }
        let size = payload.len();
        match encode(self.config.framing, payload) {
            Some(bytes) => {
                if self.config.framing != Framing::Raw {
                    Counters::add(&self.counters.frames_out, 1);
                }
                self.send(ctx, bytes);
            }
            None => {
                // Only a length prefix can refuse (over 4 GiB): the owner broke the protocol.
                tracing::warn!(conn = %self.conn, size, "frame too big to encode");
                let max = self.config.write_max;
                self.close(
                    ctx,
                    CloseReason::WriteOverflow {
                        buffered: self.wbuf.len().saturating_add(size),
                        max,
                    },
                );
            }
        }
    }

    fn on_close(&mut self, ctx: &mut Ctx<Self>, _: Close) {
        self.owner_closed = true;
        match self.phase {
            Phase::Open if self.wbuf.is_empty() => self.close(ctx, CloseReason::ByOwner),
            Phase::Open => {
                self.phase = Phase::Closing;
                self.phase_timer =
                    Some(ctx.send_delayed(ctx.mbox(), self.config.linger, LingerExpired));
            }
            Phase::Starting | Phase::Connecting => {
                self.connect_failed(ctx, ConnectError::Shutdown);
            }
            Phase::Closing | Phase::Draining | Phase::Closed => {}
        }
    }

    fn on_pause(&mut self, _ctx: &mut Ctx<Self>, _: PauseReading) {
        self.owner_paused = true;
        self.sync_hold();
    }

    fn on_resume(&mut self, ctx: &mut Ctx<Self>, _: ResumeReading) {
        self.owner_paused = false;
        self.resume_reading(ctx);
    }

    fn on_read_more(&mut self, ctx: &mut Ctx<Self>, _: ReadMore) {
        self.read_more_queued = false;
        self.resume_reading(ctx);
    }

    fn on_credit_returned(&mut self, ctx: &mut Ctx<Self>, _: CreditReturned) {
        self.credit_parked = false;
        match self.phase {
            Phase::Open => self.resume_reading(ctx),
            Phase::Draining => {
                self.learn_owner_done();
                self.finish_draining(ctx);
            }
            _ => {}
        }
    }

    // Each check decides from the state alone (see `limits.rs`): an expiry whose timer was
    // replaced meanwhile does no harm.

    fn on_idle_check(&mut self, ctx: &mut Ctx<Self>, _: IdleCheck) {
        self.idle_timer = None;
        if self.phase != Phase::Open {
            return;
        }
        match self.limits.idle_check(Instant::now()) {
            Verdict::Expired => {
                tracing::debug!(conn = %self.conn, "idle timeout");
                self.close(ctx, CloseReason::IdleTimeout);
            }
            Verdict::RearmIn(left) => {
                self.idle_timer = Some(ctx.send_delayed(ctx.mbox(), left, IdleCheck));
            }
            Verdict::Disarm => {}
        }
    }

    fn on_frame_check(&mut self, ctx: &mut Ctx<Self>, _: FrameCheck) {
        self.frame_timer = None;
        if self.phase != Phase::Open {
            return;
        }
        match self.limits.frame_check(Instant::now()) {
            Verdict::Expired => {
                let partial = self.decoder.partial();
                tracing::warn!(conn = %self.conn, partial, "frame not finished in time");
                self.close(ctx, CloseReason::FrameTimeout { partial });
            }
            Verdict::RearmIn(left) => {
                self.frame_timer = Some(ctx.send_delayed(ctx.mbox(), left, FrameCheck));
            }
            Verdict::Disarm => {}
        }
    }

    fn on_rate_check(&mut self, ctx: &mut Ctx<Self>, _: RateCheck) {
        self.rate_timer = None;
        if self.phase != Phase::Open {
            return;
        }
        let (verdict, received) = self.limits.rate_check(self.bytes_in);
        match (verdict, self.config.min_receive_rate) {
            (Verdict::Expired, Some(min)) => {
                tracing::warn!(conn = %self.conn, received, ?min, "receiving below the minimum rate");
                self.close(ctx, CloseReason::BelowMinRate { received, min });
            }
            (Verdict::RearmIn(window), _) => {
                self.rate_timer = Some(ctx.send_delayed(ctx.mbox(), window, RateCheck));
            }
            _ => {}
        }
    }

    fn on_lifetime_over(&mut self, ctx: &mut Ctx<Self>, _: LifetimeOver) {
        self.lifetime_timer = None;
        if self.phase == Phase::Open {
            tracing::debug!(conn = %self.conn, "maximum lifetime reached");
            self.close(ctx, CloseReason::LifetimeExceeded);
        }
    }

    fn on_linger_expired(&mut self, ctx: &mut Ctx<Self>, _: LingerExpired) {
        match self.phase {
            Phase::Closing => self.close(ctx, CloseReason::ByOwner),
            Phase::Draining => {
                tracing::debug!(conn = %self.conn, unsent = self.wbuf.len(), "linger time over");
                self.teardown();
                ctx.deregister_coop(DeregReason::Normal);
            }
            _ => {}
        }
    }

    fn on_connect_timeout(&mut self, ctx: &mut Ctx<Self>, _: ConnectTimeout) {
        if self.phase == Phase::Connecting {
            self.connect_failed(ctx, ConnectError::TimedOut);
        }
    }

    // ---- reading --------------------------------------------------------------------------

    fn resume_reading(&mut self, ctx: &mut Ctx<Self>) {
        self.sync_hold();
        if self.phase == Phase::Open && self.read_pending {
            self.read(ctx);
        }
    }

    /// Tells the time limits whether the channel holds reading itself (then the peer is not
    /// charged for the time).
    fn sync_hold(&mut self) {
        let held = self.owner_paused || self.write_paused() || self.credit_parked;
        self.limits.set_held(held, Instant::now);
    }

    /// False if reading must stop for now (and counts a credit or write pause).
    fn may_read(&mut self) -> bool {
        if !(self.owner_paused || self.write_paused()) {
            self.credit_parked = self.credit.as_ref().is_some_and(|c| c.exhausted());
            if self.credit_parked {
                Counters::add(&self.counters.read_pauses, 1);
            } else {
                // After the credit check (`channel/queued.rs`: memory order).
                self.check_high_watermark();
            }
        }
        self.sync_hold();
        !(self.owner_paused || self.write_paused() || self.credit_parked)
    }

    /// Reading stopped because the unwritten bytes reached `write_high`.
    fn write_paused(&self) -> bool {
        self.over_high && self.config.pause_reading_on_write_high
    }

    fn read(&mut self, ctx: &mut Ctx<Self>) {
        let _span = self.trace_reads.then(|| {
            tracing::info_span!(target: "agentry_net::read", parent: None, "read", conn = %self.conn)
                .entered()
        });
        let mut reads = 0;
        while self.phase == Phase::Open {
            if !self.may_read() {
                self.read_pending = true;
                return;
            }
            if reads == self.config.read_budget {
                self.read_pending = true;
                if !self.read_more_queued {
                    self.read_more_queued = true;
                    ctx.mbox().send(ReadMore);
                }
                return;
            }
            reads += 1;
            let outcome = self.read_once();
            if self.frame_timer.is_none()
                && self.limits.frame_running()
                && let Some(timeout) = self.limits.frame_timeout()
            {
                self.frame_timer = Some(ctx.send_delayed(ctx.mbox(), timeout, FrameCheck));
            }
            match outcome {
                Ok(ReadOutcome::Data) => {}
                Ok(ReadOutcome::Drained) => {
                    self.read_pending = false;
                    return;
                }
                Ok(ReadOutcome::End) => {
                    let partial = self.decoder.partial();
                    let reason = if partial > 0 {
                        CloseReason::PeerClosedMidFrame { partial }
                    } else {
                        CloseReason::PeerClosed
                    };
                    self.close(ctx, reason);
                    return;
                }
                Err(ReadFailure::Io(kind)) => {
                    self.close(ctx, CloseReason::Error(kind));
                    return;
                }
                Err(ReadFailure::TooBig(TooBig { size, max })) => {
                    Counters::add(&self.counters.frames_rejected, 1);
                    tracing::warn!(conn = %self.conn, size, max, "frame too big");
                    self.close(ctx, CloseReason::FrameTooBig { size, max });
                    return;
                }
            }
        }
    }

    /// One `read` into the thread's buffer, delivered to the owner.
    fn read_once(&mut self) -> Result<ReadOutcome, ReadFailure> {
        let Channel {
            stream,
            decoder,
            owner,
            credit,
            counters,
            conn,
            config,
            bytes_in,
            limits,
            read_closed_seen,
            ..
        } = self;
        let short_read_drains = !*read_closed_seen;
        let Some(stream) = stream.as_mut() else {
            return Err(ReadFailure::Io(io::ErrorKind::NotConnected));
        };
        let Some(credit) = credit.as_ref() else {
            return Err(ReadFailure::Io(io::ErrorKind::Other));
        };
        READ_BUFFER.with_borrow_mut(|buf| {
            loop {
                match stream.read(buf) {
                    Ok(0) => return Ok(ReadOutcome::End),
                    Ok(n) => {
                        *bytes_in += n as u64;
                        Counters::add(&counters.bytes_in, n as u64);
                        let raw = config.framing == Framing::Raw;
                        let mut frames = 0u64;
                        let fed = decoder.feed(&buf[..n], |data, wire| {
                            let credit = credit.take(wire);
                            if raw {
                                owner.send(Received {
                                    conn: *conn,
                                    data,
                                    credit,
                                });
                            } else {
                                frames += 1;
                                owner.send(Frame {
                                    conn: *conn,
                                    data,
                                    credit,
                                });
                            }
                        });
                        if frames > 0 {
                            Counters::add(&counters.frames_in, frames);
                        }
                        limits.after_read(frames, decoder.partial(), Instant::now);
                        return match fed {
                            // A short read emptied the socket's receive queue: data arriving
                            // later raises a new edge, so no need to read until WouldBlock
                            // (saves a syscall per request).
                            Ok(()) if n < buf.len() && short_read_drains => {
                                Ok(ReadOutcome::Drained)
                            }
                            Ok(()) => Ok(ReadOutcome::Data),
                            Err(too_big) => Err(ReadFailure::TooBig(too_big)),
                        };
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        return Ok(ReadOutcome::Drained);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(ReadFailure::Io(e.kind())),
                }
            }
        })
    }

    // ---- writing --------------------------------------------------------------------------

    /// Sends are taken while open or connecting, and while draining (replies to what the
    /// owner received before `Closed`) — but not after the owner's own `Close`.
    fn accepts_sends(&self) -> bool {
        !self.owner_closed
            && matches!(
                self.phase,
                Phase::Starting | Phase::Connecting | Phase::Open | Phase::Draining
            )
    }

    fn send(&mut self, ctx: &mut Ctx<Self>, data: Vec<u8>) {
        if !self.accepts_sends() {
            Counters::add(&self.counters.sends_after_close, 1);
            return;
        }
        if data.is_empty() {
            return;
        }
        if matches!(self.phase, Phase::Open | Phase::Draining)
            && self.stream.is_some()
            && (self.staged || self.wbuf.is_empty())
        {
            self.wbuf.push(data, 0);
            let turn = reactor::turn();
            if !self.staged && self.write_turn != turn {
                // The first send of this turn of the io loop: written at once, no hop.
                // (`staged` for the flush: what the socket leaves becomes unwritten.)
                self.write_turn = turn;
                self.staged = true;
                self.flush(ctx);
                return;
            }
            if !self.staged {
                self.staged = true;
                ctx.mbox().send(FlushStaged);
            }
            if self.wbuf.len() >= STAGE_MAX.min(self.config.write_high)
                || self.wbuf.chunks() >= write_buffer::MAX_SLICES
            {
                self.flush(ctx);
            }
            return;
        }
        if !self.buffer_unwritten(ctx, data.len()) {
            return;
        }
        self.wbuf.push(data, 0);
        self.check_high_watermark();
    }

    /// `more` bytes join the unwritten ones: past `write_max` the connection closes
    /// (`WriteOverflow`); false then.
    fn buffer_unwritten(&mut self, ctx: &mut Ctx<Self>, more: usize) -> bool {
        let buffered = self.wbuf.len() + more;
        if buffered > self.config.write_max {
            let max = self.config.write_max;
            Counters::add(&self.counters.bytes_unsent, more as u64);
            tracing::warn!(conn = %self.conn, buffered, max, "write buffer overflow");
            self.close(ctx, CloseReason::WriteOverflow { buffered, max });
            return false;
        }
        true
    }

    fn on_flush_staged(&mut self, ctx: &mut Ctx<Self>, _: FlushStaged) {
        if self.staged {
            self.flush(ctx);
        }
    }

    /// Bytes the owner sent that the socket has not taken: the write buffer, plus the sends
    /// queued at the channel when they are counted (`channel/queued.rs`; else 0).
    fn unwritten(&self) -> usize {
        self.wbuf.len() + self.pending.get()
    }

    /// At `write_high` unwritten bytes: `WriteHigh` to the owner and, with
    /// `pause_reading_on_write_high`, reading stops. Checked wherever the channel could see
    /// them rise: a send buffered, before each read.
    fn check_high_watermark(&mut self) {
        if self.over_high {
            return;
        }
        let unwritten = self.unwritten();
        if unwritten >= self.config.write_high {
            self.over_high = true;
            Counters::add(&self.counters.write_high, 1);
            self.owner.send(WriteHigh {
                conn: self.conn,
                unwritten,
            });
            if self.config.pause_reading_on_write_high {
                Counters::add(&self.counters.read_pauses, 1);
                self.sync_hold();
            }
        }
    }

    /// Back at `write_low` unwritten bytes after a `WriteHigh`: `WriteLow` to the owner (while
    /// open) and reading resumes. Checked wherever they fall: a flush, a queued send taken.
    fn check_low_watermark(&mut self, ctx: &mut Ctx<Self>) {
        if !self.over_high {
            return;
        }
        let unwritten = self.unwritten();
        if unwritten <= self.config.write_low {
            self.over_high = false;
            if self.phase == Phase::Open {
                self.owner.send(WriteLow {
                    conn: self.conn,
                    unwritten,
                });
            }
            if self.config.pause_reading_on_write_high {
                self.resume_reading(ctx);
            }
        }
    }

    fn account_written(&mut self, n: u64) {
        if n > 0 {
            self.bytes_out += n;
            Counters::add(&self.counters.bytes_out, n);
            if self.limits.idle_timeout().is_some() {
                self.limits.sent(Instant::now());
            }
        }
    }

    /// A write failed: the peer is gone. `lost` bytes of the current send were not written.
    fn write_failed(&mut self, ctx: &mut Ctx<Self>, kind: io::ErrorKind, lost: usize) {
        Counters::add(&self.counters.bytes_unsent, lost as u64);
        if self.phase == Phase::Draining {
            // Already reported as closed; the rest cannot be delivered.
            self.teardown();
            ctx.deregister_coop(DeregReason::Normal);
        } else {
            self.close(ctx, CloseReason::Error(kind));
        }
    }

    fn flush(&mut self, ctx: &mut Ctx<Self>) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let was_staged = std::mem::take(&mut self.staged);
        let mut written = 0;
        let mut calls = 0;
        let result = self.wbuf.flush(stream, &mut written, &mut calls);
        self.account_written(written);
        Counters::add(&self.counters.write_calls, calls);
        match result {
            Ok(Flushed::Drained | Flushed::Blocked) => {}
            Err(e) => {
                self.write_failed(ctx, e.kind(), 0);
                return;
            }
        }
        if was_staged && !self.wbuf.is_empty() {
            // The staged bytes the socket did not take are now unwritten ones.
            if !self.buffer_unwritten(ctx, 0) {
                return;
            }
            self.check_high_watermark();
        }
        self.check_low_watermark(ctx);
        match self.phase {
            Phase::Closing if self.wbuf.is_empty() => self.close(ctx, CloseReason::ByOwner),
            Phase::Draining => self.finish_draining(ctx),
            _ => {}
        }
    }

    // ---- closing --------------------------------------------------------------------------

    /// The connection is open: the idle period, the first rate window and the lifetime
    /// begin (the frame deadline begins with a frame).
    fn start_limits(&mut self, ctx: &mut Ctx<Self>) {
        self.limits.opened(Instant::now(), self.bytes_in);
        if let Some(timeout) = self.limits.idle_timeout() {
            self.idle_timer = Some(ctx.send_delayed(ctx.mbox(), timeout, IdleCheck));
        }
        if let Some(window) = self.limits.rate_window() {
            self.rate_timer = Some(ctx.send_delayed(ctx.mbox(), window, RateCheck));
        }
        if let Some(lifetime) = self.config.max_lifetime {
            self.lifetime_timer = Some(ctx.send_delayed(ctx.mbox(), lifetime, LifetimeOver));
        }
    }

    fn cancel_limits(&mut self) {
        self.idle_timer = None;
        self.frame_timer = None;
        self.rate_timer = None;
        self.lifetime_timer = None;
    }

    /// Closes the connection for `reason`: the owner gets `Closed`; then the channel drains
    /// or tears down at once (see the ground rules).
    fn close(&mut self, ctx: &mut Ctx<Self>, reason: CloseReason) {
        if !self.shut(ctx, reason) {
            return;
        }
        let drains = matches!(
            reason,
            CloseReason::PeerClosed
                | CloseReason::PeerClosedMidFrame { .. }
                | CloseReason::IdleTimeout
                | CloseReason::FrameTooBig { .. }
                | CloseReason::FrameTimeout { .. }
                | CloseReason::BelowMinRate { .. }
                | CloseReason::LifetimeExceeded
                | CloseReason::ByOwner
        );
        if drains && self.stream.is_some() {
            self.phase = Phase::Draining;
            self.phase_timer =
                Some(ctx.send_delayed(ctx.mbox(), self.config.linger, LingerExpired));
            self.learn_owner_done();
            self.finish_draining(ctx);
        } else {
            self.teardown();
            ctx.deregister_coop(DeregReason::Normal);
        }
    }

    /// Reports the close once (counted, logged, `Closed` sent); false if already reported.
    fn shut(&mut self, _ctx: &mut Ctx<Self>, reason: CloseReason) -> bool {
        if matches!(self.phase, Phase::Draining | Phase::Closed) {
            return false;
        }
        self.phase = Phase::Draining;
        self.counters.closed(&reason);
        self.cancel_limits();
        self.phase_timer = None;
        self.read_pending = false;
        tracing::debug!(
            conn = %self.conn,
            ?reason,
            bytes_in = self.bytes_in,
            bytes_out = self.bytes_out,
            "connection closed"
        );
        let Some(credit) = self.credit.as_ref() else {
            return true;
        };
        self.owner.send(Closed {
            conn: self.conn,
            reason,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            credit: credit.take(1),
        });
        true
    }

    /// While draining: whether the owner has dropped every message it was given (else the
    /// release that brings the credit to zero sends `CreditReturned`). Asked only where that
    /// answer is ordered after the owner's sends — as the drain begins and on
    /// `CreditReturned` —, never after a write: a write may run while replies the owner sent
    /// before dropping its last message still wait in this channel's queue.
    fn learn_owner_done(&mut self) {
        self.owner_done = self.credit.as_ref().is_none_or(|c| c.drained());
    }

    /// While draining: tears down once the owner is done (`learn_owner_done`) and the write
    /// buffer is empty.
    fn finish_draining(&mut self, ctx: &mut Ctx<Self>) {
        if self.phase == Phase::Draining && self.owner_done && self.wbuf.is_empty() {
            self.teardown();
            ctx.deregister_coop(DeregReason::Normal);
        }
    }

    fn release_socket(&mut self) {
        if let (Some(key), Some(stream)) = (self.key.take(), self.stream.as_mut())
            && let Err(e) = reactor::deregister(key, stream)
        {
            tracing::debug!(conn = %self.conn, error = %e, "deregistering the socket failed");
        }
        self.stream = None;
        if let Origin::Accepted { slot, .. } = &mut self.origin {
            *slot = None;
        }
    }

    /// Closes the socket (a FIN if everything was written) and drops what is buffered.
    fn teardown(&mut self) {
        if self.phase == Phase::Closed {
            return;
        }
        self.phase = Phase::Closed;
        if self.wbuf.is_empty()
            && let Some(stream) = &self.stream
        {
            let _ = stream.shutdown(Shutdown::Write);
        }
        self.release_socket();
        let unsent = self.wbuf.clear();
        if unsent > 0 {
            Counters::add(&self.counters.bytes_unsent, unsent as u64);
            tracing::debug!(conn = %self.conn, unsent, "bytes not sent");
        }
        if let Some(credit) = &self.credit {
            credit.close();
        }
        self.cancel_limits();
        self.phase_timer = None;
    }
}

enum ReadOutcome {
    /// Bytes were read and delivered; there may be more.
    Data,
    /// `WouldBlock`, or a short read (the receive queue is empty): wait for the next
    /// readiness event.
    Drained,
    /// End of stream.
    End,
}

enum ReadFailure {
    Io(io::ErrorKind),
    TooBig(TooBig),
}
