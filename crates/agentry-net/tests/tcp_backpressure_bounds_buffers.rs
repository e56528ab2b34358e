//! Backpressure: a client that floods without reading is slowed down by TCP (the channel
//! stops reading over the high watermark) instead of filling the server's memory; a peer
//! that does not read what the server pushes is closed at the write maximum; an owner that
//! does not keep up stops the channel from reading (inbound credit). Other clients are
//! served throughout.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use agentry_net::{
    Accepted, ChannelConfig, CloseReason, ConnOwner, IoDispatcher, ListenerConfig, Received,
    SendBytes,
};
use common::{DEADLINE, Event, Mode, Server, client, localhost, round_trip};
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Writes 64 KiB chunks until told to stop; never reads. Returns the bytes written.
fn flood(addr: std::net::SocketAddr, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let s = client(addr);
    s.set_write_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    std::thread::spawn(move || {
        let mut s = s;
        let chunk = vec![7u8; 64 * 1024];
        let mut written = 0u64;
        while !stop.load(Ordering::Relaxed) {
            match s.write(&chunk) {
                Ok(n) => written += n as u64,
                // Blocked: the server stopped reading (what the test is about); try again
                // until told to stop.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        written
    })
}

#[test]
fn a_client_flooding_without_reading_is_paused_not_buffered() {
    let config = ListenerConfig::default().channel(
        ChannelConfig::default()
            .write_watermarks(16 * 1024, 64 * 1024)
            .write_max(1024 * 1024)
            .inbound_max(128 * 1024),
    );
    let server = Server::start(1, config, Mode::EchoQuiet);
    let stop = Arc::new(AtomicBool::new(false));
    let flooder = flood(server.addr(), Arc::clone(&stop));
    let (conn, _) = server.accepted();
    let high = server.wait_for("WriteHigh", |e| match e {
        Event::WriteHigh(w) if w.conn == conn => Some(w),
        _ => None,
    });
    assert!(
        high.unwritten >= 64 * 1024 && high.unwritten <= 1024 * 1024,
        "{high:?}"
    );
    // The flooder is held by TCP flow control; another client is served meanwhile.
    let mut good = client(server.addr());
    for i in 0..20u8 {
        assert_eq!(round_trip(&mut good, &[i; 100]), vec![i; 100]);
    }
    let stats = server.io.stats();
    assert_eq!(
        stats.closed_write_overflow, 0,
        "paused, never over the maximum"
    );
    assert!(stats.read_pauses >= 1);
    stop.store(true, Ordering::Relaxed);
    let written = flooder.join().expect("flooder");
    assert!(written > 0);
    // The flooder goes away with unread data: a reset (or an end of stream).
    let closed = server.closed(conn);
    assert!(
        matches!(
            closed.reason,
            CloseReason::Error(io::ErrorKind::ConnectionReset) | CloseReason::PeerClosed
        ),
        "{closed:?}"
    );
    server.stop();
}

#[test]
fn a_peer_that_never_reads_is_closed_at_the_write_maximum() {
    let config = ListenerConfig::default().channel(
        ChannelConfig::default()
            .write_watermarks(32 * 1024, 128 * 1024)
            .write_max(512 * 1024)
            .pause_reading_on_write_high(false),
    );
    let server = Server::start(1, config, Mode::Report);
    let _sleeper = client(server.addr());
    let (conn, channel) = server.accepted();
    // Push far more than the kernel buffers and the write maximum hold together.
    for _ in 0..512 {
        channel.send(SendBytes(vec![1u8; 64 * 1024]));
    }
    let high = server.wait_for("WriteHigh", |e| match e {
        Event::WriteHigh(w) if w.conn == conn => Some(w),
        _ => None,
    });
    assert!(high.unwritten >= 128 * 1024);
    let closed = server.closed(conn);
    assert!(
        matches!(closed.reason, CloseReason::WriteOverflow { buffered, max: 524_288 } if buffered > 524_288),
        "{closed:?}"
    );
    common::wait_until("the channel torn down", || {
        server.listener.stats().open == 0
    });
    let stats = server.io.stats();
    assert_eq!(stats.closed_write_overflow, 1);
    assert_eq!(stats.write_high, 1);
    assert!(stats.bytes_unsent > 0);
    // The rest of the pushes were refused and counted: by the closed channel while its agent
    // lived, as dead letters once it was gone (which one depends on how far the test thread
    // got before the close).
    let dead_letters = server.env.handle().stats().dead_letters;
    assert!(
        stats.sends_after_close + dead_letters > 0,
        "the rest of the pushes were refused and counted: {} after close, {dead_letters} dead",
        stats.sends_after_close
    );
    // Others are served.
    let mut good = client(server.addr());
    let (_, good_channel) = server.accepted();
    good_channel.send(SendBytes(b"hi".to_vec()));
    let mut buf = [0u8; 2];
    good.read_exact(&mut buf).expect("pushed");
    assert_eq!(&buf, b"hi");
    server.stop();
}

/// Keeps every `Received` (and so its credit) until told to let go.
struct Hoarder {
    held: Vec<Received>,
    total: usize,
}

struct HeldBytes;
struct LetGo;

impl Agent for Hoarder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Hoarder, _: &mut Ctx<Hoarder>, _: Accepted| {})?
            .on(|h: &mut Hoarder, _: &mut Ctx<Hoarder>, r: Received| {
                h.total += r.data.len();
                h.held.push(r);
            })?
            .on(|h: &mut Hoarder, _: &mut Ctx<Hoarder>, _: LetGo| h.held.clear())?
            .on(|_: &mut Hoarder, _: &mut Ctx<Hoarder>, _: agentry_net::Closed| {})?
            .on_request(|h: &mut Hoarder, _: &mut Ctx<Hoarder>, _: HeldBytes| {
                (h.held.iter().map(|r| r.data.len()).sum::<usize>(), h.total)
            })?;
        Ok(())
    }
}

#[test]
fn an_owner_that_does_not_keep_up_stops_the_channel_from_reading() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::new(env.handle(), "credit").expect("io");
    let mut coop = env.handle().new_coop();
    let hoarder: Mbox = coop.add_with(
        Hoarder {
            held: Vec::new(),
            total: 0,
        },
        &io.binder(),
    );
    env.handle().register_coop(coop).expect("registered");
    let inbound_max = 64 * 1024;
    let listener = io
        .listen(
            localhost(),
            ListenerConfig::default().channel(ChannelConfig::default().inbound_max(inbound_max)),
            ConnOwner::Mbox(hoarder.clone()),
        )
        .expect("listening");
    let stop = Arc::new(AtomicBool::new(false));
    let flooder = flood(listener.local_addr(), Arc::clone(&stop));
    common::wait_until("the channel parks", || io.stats().read_pauses >= 1);
    let (held, total) = hoarder
        .request::<HeldBytes, (usize, usize)>(HeldBytes, DEADLINE)
        .expect("answered");
    // At most the maximum plus one read (64 KiB) ahead of the owner.
    assert!(
        held >= inbound_max && held <= inbound_max + 64 * 1024,
        "held {held}"
    );
    assert_eq!(held, total);
    // Letting go resumes reading.
    hoarder.send(LetGo);
    common::wait_until("reading resumed", || {
        hoarder
            .request::<HeldBytes, (usize, usize)>(HeldBytes, DEADLINE)
            .expect("answered")
            .1
            > total
    });
    stop.store(true, Ordering::Relaxed);
    flooder.join().expect("flooder");
    env.handle().stop();
    env.run();
    assert!(io.wait_threads(DEADLINE));
}
