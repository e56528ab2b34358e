//! Slow clients cannot hold connections: a client that trickles a frame byte by byte (each
//! byte is activity, so no idle timeout fires) is closed at the frame deadline; a raw client
//! below the minimum receive rate is closed; any connection is closed at its maximum
//! lifetime. Each is closed with its own reason, counted once; others are served, and the
//! listener's slots come back.

mod common;

use agentry_net::{
    ChannelConfig, CloseReason, ConnId, Framing, ListenerConfig, MinRate, PauseReading,
    ResumeReading, SendBytes,
};
use common::{
    DEADLINE, Event, Mode, Server, accepted_in, client, closed_in, read_to_close, round_trip,
    trickle,
};
use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

#[test]
fn clients_trickling_unfinished_frames_are_closed_at_the_frame_deadline_and_free_their_slots() {
    const SLOW: usize = 4;
    let config = ListenerConfig::default().max_connections(SLOW + 1).channel(
        ChannelConfig::default()
            .framing(Framing::Lines)
            .max_frame(1024)
            .frame_timeout(Some(300 * MS)),
    );
    let server = Server::start(2, config, Mode::Echo);
    let mut log = Vec::new();
    // The slow clients connect (silent for now: no frame, no deadline yet) ...
    let slow: Vec<_> = (0..SLOW).map(|_| client(server.addr())).collect();
    server.record_until(&mut log, "the slow clients accepted", |log| {
        accepted_in(log).len() == SLOW
    });
    let slow_conns: HashSet<ConnId> = accepted_in(&log).into_iter().map(|(c, _)| c).collect();
    // ... a normal client takes the last slot, so the listener is full.
    let mut normal = client(server.addr());
    assert_eq!(round_trip(&mut normal, b"hello\n"), b"hello\n");
    let mut extra = client(server.addr());
    assert!(read_to_close(&mut extra).is_empty(), "refused: no slot");
    assert_eq!(server.listener.stats().refused_over_limit, 1);

    // Each slow client sends a byte every 50 ms and never ends its line.
    let tricklers: Vec<_> = slow
        .into_iter()
        .map(|s| trickle(s, b'z', 50 * MS, 200))
        .collect();
    // The normal client is served meanwhile.
    for i in 0..10 {
        let line = format!("line {i}\n");
        assert_eq!(round_trip(&mut normal, line.as_bytes()), line.as_bytes());
    }
    server.record_until(&mut log, "the slow clients closed", |log| {
        closed_in(log).len() == SLOW
    });
    let closed = closed_in(&log);
    assert_eq!(
        closed.iter().map(|c| c.conn).collect::<HashSet<_>>(),
        slow_conns,
        "exactly the slow clients were closed"
    );
    for c in &closed {
        assert!(
            matches!(c.reason, CloseReason::FrameTimeout { partial } if partial >= 1
                && partial as u64 == c.bytes_in),
            "{c:?}"
        );
    }
    for t in tricklers {
        let (sent, refused) = t.join().expect("trickler");
        assert!(
            refused,
            "the server closed the slow client ({sent} bytes sent)"
        );
    }
    let stats = server.io.stats();
    assert_eq!(stats.closed_frame_timeout, SLOW as u64);
    assert_eq!(stats.closed(), SLOW as u64);

    // Their slots are free again: as many newcomers are accepted and served.
    common::wait_until("the slow clients' slots given back", || {
        server.listener.stats().open == 1
    });
    let mut newcomers: Vec<_> = (0..SLOW).map(|_| client(server.addr())).collect();
    for (i, n) in newcomers.iter_mut().enumerate() {
        let line = format!("newcomer {i}\n");
        assert_eq!(round_trip(n, line.as_bytes()), line.as_bytes());
    }
    assert_eq!(round_trip(&mut normal, b"still here\n"), b"still here\n");
    let listener = server.listener.stats();
    assert_eq!(
        (listener.accepted, listener.refused_over_limit),
        (SLOW as u64 * 2 + 1, 1)
    );
    server.stop();
}

#[test]
fn raw_clients_below_the_minimum_rate_are_closed_and_a_busy_one_is_not() {
    let min = MinRate::new(64, 200 * MS);
    let config =
        ListenerConfig::default().channel(ChannelConfig::default().min_receive_rate(Some(min)));
    let server = Server::start(1, config, Mode::EchoQuiet);
    let mut log = Vec::new();
    let slow = client(server.addr());
    let _silent = client(server.addr());
    server.record_until(&mut log, "two accepted", |log| accepted_in(log).len() == 2);
    let trickler = trickle(slow, b'.', 50 * MS, 200);
    // A busy client: round trips until both others are closed.
    let mut busy = client(server.addr());
    server.record_until(&mut log, "the busy client accepted", |log| {
        accepted_in(log).len() == 3
    });
    let deadline = Instant::now() + DEADLINE;
    while closed_in(&log).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for the slow ones"
        );
        assert_eq!(round_trip(&mut busy, &[7; 256]), vec![7; 256]);
        log.extend(server.events.try_iter());
    }
    let accepted = accepted_in(&log);
    let closed = closed_in(&log);
    let (slow_conn, silent_conn) = (accepted[0].0, accepted[1].0);
    let reason_of = |conn| {
        closed
            .iter()
            .find(|c| c.conn == conn)
            .map(|c| c.reason)
            .expect("closed")
    };
    assert!(
        matches!(reason_of(slow_conn), CloseReason::BelowMinRate { received, min: m } if received < 64 && m == min),
        "{:?}",
        reason_of(slow_conn)
    );
    // Silence is below any rate.
    assert_eq!(
        reason_of(silent_conn),
        CloseReason::BelowMinRate { received: 0, min }
    );
    let (_, refused) = trickler.join().expect("trickler");
    assert!(refused);
    assert_eq!(server.io.stats().closed_below_min_rate, 2);
    // The busy one leaves on its own.
    busy.shutdown(std::net::Shutdown::Write)
        .expect("half close");
    assert!(read_to_close(&mut busy).is_empty());
    let busy_conn = accepted[2].0;
    let busy_closed = server.closed(busy_conn);
    assert_eq!(busy_closed.reason, CloseReason::PeerClosed);
    let stats = server.io.stats();
    assert_eq!((stats.closed_below_min_rate, stats.closed()), (2, 3));
    server.stop();
}

#[test]
fn a_busy_connection_is_closed_at_its_maximum_lifetime_after_its_replies() {
    let config =
        ListenerConfig::default().channel(ChannelConfig::default().max_lifetime(Some(300 * MS)));
    let server = Server::start(1, config, Mode::EchoQuiet);
    let mut busy = client(server.addr());
    let (conn, _) = server.accepted();
    // Round trips until the server ends the stream: every reply before the end is whole.
    let mut trips = 0u32;
    let deadline = Instant::now() + DEADLINE;
    loop {
        assert!(Instant::now() < deadline, "never closed");
        let msg = trips.to_be_bytes();
        if busy.write_all(&msg).is_err() {
            break;
        }
        let mut back = [0u8; 4];
        match busy.read_exact(&mut back) {
            Ok(()) => assert_eq!(back, msg),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                ) =>
            {
                break;
            }
            Err(e) => panic!("client read failed: {e}"),
        }
        trips += 1;
    }
    assert!(trips > 0);
    let closed = server.closed(conn);
    assert_eq!(closed.reason, CloseReason::LifetimeExceeded);
    let stats = server.io.stats();
    assert_eq!((stats.closed_lifetime, stats.closed()), (1, 1));
    // Each connection has its own lifetime: a newcomer is served.
    let mut newcomer = client(server.addr());
    assert_eq!(round_trip(&mut newcomer, b"new"), b"new");
    server.stop();
}

#[test]
fn time_the_channel_holds_reading_is_not_charged_to_the_peers_frame() {
    let config = ListenerConfig::default().channel(
        ChannelConfig::default()
            .framing(Framing::Lines)
            .frame_timeout(Some(200 * MS)),
    );
    let server = Server::start(1, config, Mode::Report);
    let mut c = client(server.addr());
    let (conn, channel) = server.accepted();
    // Half a line is read: its deadline runs.
    c.write_all(b"hal").expect("written");
    common::wait_until("half a line read", || server.io.stats().bytes_in == 3);
    // The owner pauses reading; the reply after the pause proves it is in effect.
    channel.send(PauseReading);
    channel.send(SendBytes(b"paused\n".to_vec()));
    let mut ack = [0u8; 7];
    c.read_exact(&mut ack).expect("acknowledged");
    // The rest of the line waits in the kernel for three times the frame timeout.
    c.write_all(b"f\n").expect("written");
    std::thread::sleep(600 * MS);
    assert!(
        !server
            .events
            .try_iter()
            .any(|e| matches!(e, Event::Closed(_))),
        "not closed while the channel held reading"
    );
    channel.send(ResumeReading);
    let line = server.wait_for("the line", |e| match e {
        Event::Frame(_, f) => Some(f),
        Event::Closed(c) => panic!("closed: {c:?}"),
        _ => None,
    });
    assert_eq!(line, b"half");
    // The deadline still applies to the next frame.
    c.write_all(b"never ends").expect("written");
    let closed = server.closed(conn);
    assert_eq!(closed.reason, CloseReason::FrameTimeout { partial: 10 });
    server.stop();
}
