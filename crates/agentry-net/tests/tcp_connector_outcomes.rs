//! The connector: a connection to a listener is established and carries data both ways; a
//! refused connection and a connection that cannot complete in time are reported as typed
//! `ConnectFailed` errors, and counted.

mod common;

use agentry::{Env, Mbox};
use agentry_net::{
    ChannelConfig, CloseReason, ConnectConfig, ConnectError, Framing, IoDispatcher, SendFrame,
};
use common::{Event, Mode, Probe, frame, localhost, wait_for};
use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::Duration;

fn client_side() -> (Env, IoDispatcher, Mbox, mpsc::Receiver<Event>) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::new(env.handle(), "connector").expect("io");
    let (tx, rx) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    let probe = coop.add_with(Probe::new(tx, Mode::Report), &io.binder());
    env.handle().register_coop(coop).expect("registered");
    (env, io, probe, rx)
}

fn stop(env: Env, io: IoDispatcher) {
    env.handle().stop();
    env.run();
    assert!(io.wait_threads(common::DEADLINE));
}

#[test]
fn a_connection_is_established_and_carries_frames_both_ways() {
    let (env, io, probe, rx) = client_side();
    let server = std::net::TcpListener::bind(localhost()).expect("bound");
    let config =
        ConnectConfig::default().channel(ChannelConfig::default().framing(Framing::LengthPrefixed));
    let conn = io
        .connect(server.local_addr().expect("addr"), config, &probe)
        .expect("connecting");
    let (mut peer, _) = server.accept().expect("accepted");
    peer.set_read_timeout(Some(common::DEADLINE))
        .expect("timeout");
    let channel = wait_for(&rx, "Connected", &mut |e| match e {
        Event::Connected(c, ch) if c == conn => Some(ch),
        _ => None,
    });
    channel.send(SendFrame(b"hello server".to_vec()));
    let mut got = vec![0; frame(b"hello server").len()];
    peer.read_exact(&mut got).expect("frame");
    assert_eq!(got, frame(b"hello server"));
    peer.write_all(&frame(b"hello client")).expect("written");
    let f = wait_for(&rx, "Frame", &mut |e| match e {
        Event::Frame(c, f) if c == conn => Some(f),
        _ => None,
    });
    assert_eq!(f, b"hello client");
    drop(peer);
    let closed = wait_for(&rx, "Closed", &mut |e| match e {
        Event::Closed(c) if c.conn == conn => Some(c),
        _ => None,
    });
    assert_eq!(closed.reason, CloseReason::PeerClosed);
    assert_eq!(io.stats().connected, 1);
    stop(env, io);
}

#[test]
fn a_refused_connection_is_reported() {
    let (env, io, probe, rx) = client_side();
    // A port that was just free: nothing listens there.
    let addr = std::net::TcpListener::bind(localhost())
        .expect("bound")
        .local_addr()
        .expect("addr");
    let conn = io
        .connect(addr, ConnectConfig::default(), &probe)
        .expect("connecting");
    let failed = wait_for(&rx, "ConnectFailed", &mut |e| match e {
        Event::ConnectFailed(f) => Some(f),
        _ => None,
    });
    assert_eq!(failed.conn, conn);
    assert_eq!(failed.addr, addr);
    assert_eq!(failed.error, ConnectError::Refused);
    assert_eq!(io.stats().connect_failed, 1);
    assert_eq!(io.stats().opened, 0);
    stop(env, io);
}

#[test]
fn a_connection_that_cannot_complete_in_time_is_reported_as_timed_out() {
    let (env, io, probe, rx) = client_side();
    // A listener that never accepts: once its accept queue is full the kernel drops further
    // SYNs, so a connect to it cannot complete.
    let full = std::net::TcpListener::bind(localhost()).expect("bound");
    let addr = full.local_addr().expect("addr");
    let mut fillers = Vec::new();
    let mut saturated = false;
    for _ in 0..4096 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
            Ok(s) => fillers.push(s),
            Err(_) => {
                saturated = true;
                break;
            }
        }
    }
    assert!(saturated, "the accept queue filled up");
    let conn = io
        .connect(
            addr,
            ConnectConfig::default().timeout(Duration::from_millis(200)),
            &probe,
        )
        .expect("connecting");
    let failed = wait_for(&rx, "ConnectFailed", &mut |e| match e {
        Event::ConnectFailed(f) => Some(f),
        _ => None,
    });
    assert_eq!((failed.conn, failed.error), (conn, ConnectError::TimedOut));
    drop(fillers);
    stop(env, io);
}
