//! The close reason of every connection is observable exactly: one client per reason (the
//! peer leaving, mid-frame, with a reset, an oversized line, a trickled line, the owner's
//! `Close`, a client that never reads while the server pushes, silence under an idle
//! timeout, under a minimum rate, a maximum lifetime, and the listener's shutdown). Each
//! owner sees one `Closed` with that reason, and the io dispatcher counts each close once
//! under it: the per-reason counters sum to the connections closed, which is every
//! connection opened.

mod common;

use agentry_net::{
    ChannelConfig, Close, CloseReason, ConnId, Framing, ListenerConfig, MinRate, NetStats,
    SendBytes,
};
use common::{Event, Mode, Server, accepted_in, client, closed_in, trickle};
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

/// What a connection's close reason must be.
type Expect = fn(&CloseReason) -> bool;

/// Connects a client to `addr` and waits for its `Accepted` (keeping every other event).
fn connect(
    server: &Server,
    log: &mut Vec<Event>,
    addr: SocketAddr,
) -> (TcpStream, ConnId, agentry::Mbox) {
    let before = accepted_in(log).len();
    let s = client(addr);
    server.record_until(log, "Accepted", |log| accepted_in(log).len() > before);
    let (conn, channel) = accepted_in(log)[before].clone();
    (s, conn, channel)
}

fn closed_of(log: &[Event], conn: ConnId) -> Option<CloseReason> {
    closed_in(log)
        .into_iter()
        .find(|c| c.conn == conn)
        .map(|c| c.reason)
}

#[test]
fn every_closed_connection_is_counted_once_under_the_reason_its_owner_saw() {
    // Lines, small frames, a frame deadline, a small write maximum.
    let lines = ListenerConfig::default().channel(
        ChannelConfig::default()
            .framing(Framing::Lines)
            .max_frame(64)
            .frame_timeout(Some(300 * MS))
            .write_watermarks(32 * 1024, 128 * 1024)
            .write_max(256 * 1024),
    );
    let server = Server::start(2, lines, Mode::Report);
    let idle = server.listen(
        ListenerConfig::default().channel(ChannelConfig::default().idle_timeout(Some(200 * MS))),
    );
    let min = MinRate::new(64, 200 * MS);
    let rate = server.listen(
        ListenerConfig::default().channel(ChannelConfig::default().min_receive_rate(Some(min))),
    );
    let lifetime = server.listen(
        ListenerConfig::default().channel(ChannelConfig::default().max_lifetime(Some(200 * MS))),
    );
    let mut log = Vec::new();
    let mut expected: Vec<(ConnId, Expect)> = Vec::new();
    let addr = server.addr();

    // The peer leaves between frames.
    let (mut c, conn, _) = connect(&server, &mut log, addr);
    c.write_all(b"bye\n").expect("written");
    drop(c);
    expected.push((conn, |r| *r == CloseReason::PeerClosed));

    // The peer leaves in the middle of a line.
    let (mut c, conn, _) = connect(&server, &mut log, addr);
    c.write_all(b"one\ntw").expect("written");
    drop(c);
    expected.push((conn, |r| {
        *r == CloseReason::PeerClosedMidFrame { partial: 2 }
    }));

    // The peer resets: it leaves with bytes from the server unread.
    let (c, conn, channel) = connect(&server, &mut log, addr);
    channel.send(SendBytes(b"unread\n".to_vec()));
    let mut peek = [0u8; 1];
    assert_eq!(c.peek(&mut peek).expect("arrived"), 1);
    drop(c);
    expected.push((conn, |r| {
        *r == CloseReason::Error(io::ErrorKind::ConnectionReset)
    }));

    // An overlong line.
    let (mut too_big, conn, _) = connect(&server, &mut log, addr);
    too_big.write_all(&[b'x'; 100]).expect("written");
    expected.push((
        conn,
        |r| matches!(r, CloseReason::FrameTooBig { size, max: 64 } if *size > 64),
    ));

    // A line trickled a byte every 50 ms.
    let (slow, conn, _) = connect(&server, &mut log, addr);
    let trickler = trickle(slow, b's', 50 * MS, 200);
    expected.push((
        conn,
        |r| matches!(r, CloseReason::FrameTimeout { partial } if *partial >= 1),
    ));

    // The owner closes.
    let (_closed_by_owner, conn, channel) = connect(&server, &mut log, addr);
    channel.send(Close);
    expected.push((conn, |r| *r == CloseReason::ByOwner));

    // A peer that never reads while the server pushes: closed at the write maximum.
    let (_sleeper, conn, channel) = connect(&server, &mut log, addr);
    for _ in 0..512 {
        channel.send(SendBytes(vec![1u8; 64 * 1024]));
    }
    expected.push((conn, |r| {
        matches!(r, CloseReason::WriteOverflow { buffered, max: 262_144 } if *buffered > 262_144)
    }));

    // Silent clients under the idle timeout, the minimum rate and the maximum lifetime.
    let (_silent_idle, conn, _) = connect(&server, &mut log, idle.local_addr());
    expected.push((conn, |r| *r == CloseReason::IdleTimeout));
    let (_silent_rate, conn, _) = connect(&server, &mut log, rate.local_addr());
    expected.push((conn, |r| {
        matches!(r, CloseReason::BelowMinRate { received: 0, .. })
    }));
    let (_silent_life, conn, _) = connect(&server, &mut log, lifetime.local_addr());
    expected.push((conn, |r| *r == CloseReason::LifetimeExceeded));

    server.record_until(&mut log, "every misbehaving client closed", |log| {
        expected
            .iter()
            .all(|(conn, _)| closed_of(log, *conn).is_some())
    });
    // Last, the listener closes its remaining connection.
    let (_held, conn, _) = connect(&server, &mut log, addr);
    expected.push((conn, |r| *r == CloseReason::Shutdown));
    server.listener.close();
    server.record_until(&mut log, "the held connection closed", |log| {
        closed_of(log, conn).is_some()
    });
    let (_, refused) = trickler.join().expect("trickler");
    assert!(refused, "the trickler was closed by the server");

    // Each owner saw its connection's reason ...
    for (conn, is_expected) in &expected {
        let reason = closed_of(&log, *conn).expect("closed");
        assert!(is_expected(&reason), "{conn}: {reason:?}");
    }
    // ... exactly once per connection, and nothing else closed.
    let closed = closed_in(&log);
    let mut per_conn: HashMap<ConnId, usize> = HashMap::new();
    for c in &closed {
        *per_conn.entry(c.conn).or_default() += 1;
    }
    assert!(per_conn.values().all(|&n| n == 1), "{per_conn:?}");
    assert_eq!(per_conn.len(), expected.len());
    assert_eq!(accepted_in(&log).len(), expected.len());

    // The counters: one close per connection, under the reason its owner saw; every kind of
    // reason occurred, and the per-reason counters sum to the connections opened.
    let stats: NetStats = server.io.stats();
    let mut seen: Vec<CloseReason> = Vec::new();
    for c in &closed {
        let kind = std::mem::discriminant(&c.reason);
        if seen.iter().all(|s| std::mem::discriminant(s) != kind) {
            seen.push(c.reason);
        }
    }
    assert_eq!(seen.len(), 11, "one of each kind of reason: {seen:?}");
    for reason in &seen {
        let owners_saw = closed
            .iter()
            .filter(|c| std::mem::discriminant(&c.reason) == std::mem::discriminant(reason))
            .count() as u64;
        assert_eq!(stats.closed_for(reason), owners_saw, "{reason:?}");
    }
    let per_reason_sum: u64 = seen.iter().map(|r| stats.closed_for(r)).sum();
    assert_eq!(per_reason_sum, closed.len() as u64);
    assert_eq!(stats.closed(), per_reason_sum);
    assert_eq!(stats.opened, closed.len() as u64);
    assert_eq!(stats.open(), 0);
    drop(too_big);
    server.stop();
}
