//! A client that floods requests and never reads the replies is held back by TCP flow
//! control, not closed (`docs/SEMANTICS.md` §18.4) — also when the owner that echoes the
//! requests runs on another io thread than the channel and the channel's thread is busy.
//!
//! The race: the owner's replies reach the channel through its io thread's cross-thread
//! queue, served at most a batch per round and behind whatever other threads sent to that
//! thread's agents; the channel's own reading goes on every round (its readiness and its
//! `ReadMore` take the thread's local queue). The owner returns each request's inbound
//! credit as soon as it has sent the reply, so the credit does not stop the channel; and the
//! write buffer, the only thing that did, sees the replies only once they are taken out of
//! the queue. Replies queued at the channel now count towards the watermarks from the moment
//! they are sent.
//!
//! The tests make the race deterministic: the kernel's buffers towards the client are filled
//! first (so that replies go to the write buffer at once), then the channel's io thread gets
//! [`BUSY`] cross-thread messages for another agent (a busy thread), and the client floods.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use agentry_net::{
    Accepted, ChannelConfig, CloseReason, Closed, ConnId, ConnOwner, Frame, Framing, IoDispatcher,
    ListenerConfig, Received, SendBytes, SendFrame, WriteHigh, WriteLow, reactor,
};
use common::{DEADLINE, client, localhost, wait_for};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

/// A flood whose write blocks this long is held back.
const HELD_BACK: Duration = Duration::from_millis(1000);
/// A flood that writes this much without being held back fails the test (the server
/// buffers what it reads).
const FLOOD_CAP: u64 = 256 * 1024 * 1024;
/// Cross-thread messages for another agent of the channel's io thread, sent as the flood
/// begins: the owner's replies queue behind them for about `BUSY / 256` rounds of the
/// thread, while the channel reads each round.
const BUSY: usize = 100 * 1024;
/// What each of them costs the thread.
const BUSY_FOR: Duration = Duration::from_micros(3);

/// What the echo owner saw.
#[derive(Debug)]
enum Seen {
    Accepted(ConnId, Mbox, Option<usize>),
    WriteHigh(WriteHigh),
    WriteLow(WriteLow),
    Closed(ConnId, CloseReason),
}

/// Echoes each frame as `SendFrame` and each chunk as `SendBytes`; ignores `WriteHigh` (the
/// soak's and the guide's echo owner); reports what it sees.
struct Echo {
    channels: HashMap<ConnId, Mbox>,
    seen: Sender<Seen>,
}

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|e: &mut Echo, _: &mut Ctx<Echo>, a: Accepted| {
            e.channels.insert(a.conn, a.channel.clone());
            let thread = reactor::io_thread_index();
            let _ = e.seen.send(Seen::Accepted(a.conn, a.channel, thread));
        })?
        .on(
            |e: &mut Echo, _: &mut Ctx<Echo>, Frame { conn, data, .. }: Frame| {
                if let Some(ch) = e.channels.get(&conn) {
                    ch.send(SendFrame(data));
                }
            },
        )?
        .on(
            |e: &mut Echo, _: &mut Ctx<Echo>, Received { conn, data, .. }: Received| {
                if let Some(ch) = e.channels.get(&conn) {
                    ch.send(SendBytes(data));
                }
            },
        )?
        .on(|e: &mut Echo, _: &mut Ctx<Echo>, w: WriteHigh| {
            let _ = e.seen.send(Seen::WriteHigh(w));
        })?
        .on(|e: &mut Echo, _: &mut Ctx<Echo>, w: WriteLow| {
            let _ = e.seen.send(Seen::WriteLow(w));
        })?
        .on(|e: &mut Echo, _: &mut Ctx<Echo>, c: Closed| {
            e.channels.remove(&c.conn);
            let _ = e.seen.send(Seen::Closed(c.conn, c.reason));
        })?;
        Ok(())
    }
}

/// Another agent of the channel's io thread: each `Busy` keeps the thread for a while.
struct Other;

struct Busy(Duration);

impl Agent for Other {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Other, _: &mut Ctx<Other>, Busy(d): Busy| {
            let start = Instant::now();
            while start.elapsed() < d {
                std::hint::spin_loop();
            }
        })?;
        Ok(())
    }
}

/// How a flood ended.
#[derive(Debug)]
struct Flood {
    written: u64,
    held_back: bool,
    error: Option<io::ErrorKind>,
}

/// Writes `block` over and over, never reads; stops when a write blocks for [`HELD_BACK`]
/// (held back), when a write fails (the server closed the connection) or at [`FLOOD_CAP`].
fn flood(s: &mut TcpStream, block: &[u8]) -> Flood {
    s.set_write_timeout(Some(HELD_BACK)).expect("timeout");
    let mut f = Flood {
        written: 0,
        held_back: false,
        error: None,
    };
    let started = Instant::now();
    while f.written < FLOOD_CAP && started.elapsed() < DEADLINE {
        match s.write(block) {
            Ok(n) => f.written += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                f.held_back = true;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                f.error = Some(e.kind());
                break;
            }
        }
    }
    f
}

/// A listener with `framing` and otherwise the default configuration (the soak's line
/// listener: watermarks 64 / 256 KiB, `write_max` 4 MiB, `inbound_max` 1 MiB, reading paused
/// over the high watermark), owned by an echo owner on io thread 0, the connection's channel
/// on io thread 1; the client floods `block`s after the set-up of the module docs and must
/// be held back; then it reads, and every request is answered.
fn flood_across_threads(framing: Framing, block: &[u8], unanswered: u64) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::builder("flood")
        .threads(2)
        .build(env.handle())
        .expect("io dispatcher");
    let (tx, seen) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    let owner = coop.add_with(
        Echo {
            channels: HashMap::new(),
            seen: tx,
        },
        &io.binder_at(0).expect("thread 0"),
    );
    let other = coop.add_with(Other, &io.binder_at(1).expect("thread 1"));
    env.handle().register_coop(coop).expect("registered");
    let config = ChannelConfig::default().framing(framing);
    assert!(config.pause_reading_on_write_high);
    // The acceptor takes the next thread of the round robin (0: nothing else used it), its
    // first connection the one after it (1).
    let listener = io
        .listen(
            localhost(),
            ListenerConfig::default().channel(config),
            ConnOwner::Mbox(owner),
        )
        .expect("listening");
    let mut s = client(listener.local_addr());
    let (conn, channel, owner_thread) = wait_for(&seen, "Accepted", &mut |s| match s {
        Seen::Accepted(c, ch, t) => Some((c, ch, t)),
        _ => None,
    });
    assert_eq!(owner_thread, Some(0), "the owner runs on io thread 0");

    // 1. Fill the kernel's buffers towards the client, up to the high watermark.
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < DEADLINE, "no WriteHigh");
        channel.send(SendBytes(vec![b'p'; 64 * 1024]));
        if let Ok(Seen::WriteHigh(w)) = seen.recv_timeout(Duration::from_millis(5)) {
            assert_eq!(w.conn, conn);
            break;
        }
    }
    // 2. The client reads until the buffer is back at the low watermark: the kernel's
    //    buffers stay about full, reading is allowed again. `WriteLow` reaches the test
    //    through the owner's thread: on a loaded machine it can come after the client has
    //    read all there is, so reads wait briefly and the whole wait is bounded instead.
    let mut buf = vec![0u8; 16 * 1024];
    s.set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let started = Instant::now();
    loop {
        match seen.try_recv() {
            Ok(Seen::WriteLow(w)) if w.conn == conn => break,
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => {}
        }
        assert!(started.elapsed() < DEADLINE, "no WriteLow");
        match s.read(&mut buf) {
            Ok(n) => assert!(n > 0 && buf[..n].iter().all(|&b| b == b'p')),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("the pushed bytes: {e}"),
        }
    }
    s.set_read_timeout(Some(DEADLINE)).expect("timeout");
    // 3. The channel's thread gets busy with another agent's cross-thread messages, and the
    //    client floods.
    for _ in 0..BUSY {
        other.send(Busy(BUSY_FOR));
    }
    let outcome = flood(&mut s, block);
    let stats = io.stats();
    let closed = seen.try_iter().find_map(|s| match s {
        Seen::Closed(c, reason) if c == conn => Some(reason),
        _ => None,
    });
    assert!(
        outcome.held_back && closed.is_none() && stats.closed_write_overflow == 0,
        "the flooder must be held back, not closed: {outcome:?}, closed: {closed:?}, {stats:?}"
    );
    assert!(stats.read_pauses >= 1, "{stats:?}");
    // 4. Held, not stuck: once the client reads, the channel reads on and every request is
    //    answered (but for an unfinished last line, less than `unanswered` bytes).
    let mut echoed = 0u64;
    while echoed + unanswered < outcome.written {
        let n = s.read(&mut buf).expect("the replies");
        assert!(n > 0, "the server closed after {echoed} of {outcome:?}");
        echoed += buf[..n].iter().filter(|&&b| b != b'p').count() as u64;
    }
    // 5. The client leaves.
    drop(s);
    let reason = wait_for(&seen, "Closed", &mut |s| match s {
        Seen::Closed(c, reason) if c == conn => Some(reason),
        _ => None,
    });
    assert!(
        matches!(
            reason,
            CloseReason::PeerClosed
                | CloseReason::PeerClosedMidFrame { .. }
                | CloseReason::Error(io::ErrorKind::ConnectionReset)
        ),
        "{reason:?}"
    );
    assert_eq!(io.stats().closed_write_overflow, 0);
    env.handle().stop();
    env.run();
    assert!(io.wait_threads(DEADLINE));
}

#[test]
fn a_line_flood_is_held_back_when_the_owner_runs_on_another_io_thread() {
    // Lines of 1,000 bytes, as the soak's line floods.
    let mut block = vec![b'f'; 64 * 1000];
    for i in (999..block.len()).step_by(1000) {
        block[i] = b'\n';
    }
    flood_across_threads(Framing::Lines, &block, 1000);
}

#[test]
fn a_raw_flood_is_held_back_when_the_owner_runs_on_another_io_thread() {
    flood_across_threads(Framing::Raw, &[7u8; 64 * 1024], 0);
}
