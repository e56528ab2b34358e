//! Many connections that stay silent: a listener holds at most its limit (the rest are
//! closed at once and counted), silent connections are closed by the idle timeout, and
//! other clients keep being served.

mod common;

use agentry_net::{ChannelConfig, CloseReason, ListenerConfig};
use common::{Event, Mode, Server, client, read_to_close, round_trip};
use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

#[test]
fn connections_over_the_limit_are_refused_and_counted() {
    let server = Server::start(2, ListenerConfig::default().max_connections(50), Mode::Echo);
    let mut silent: Vec<_> = (0..50).map(|_| client(server.addr())).collect();
    let mut conns = Vec::new();
    for _ in 0..50 {
        conns.push(server.accepted().0);
    }
    // Twenty more: each is accepted by the kernel, then closed by the server at once.
    for _ in 0..20 {
        let mut extra = client(server.addr());
        assert!(read_to_close(&mut extra).is_empty());
    }
    let stats = server.listener.stats();
    assert_eq!(
        (stats.accepted, stats.refused_over_limit, stats.open),
        (50, 20, 50)
    );
    assert_eq!(server.io.stats().refused_over_limit, 20);
    // The silent ones are still served.
    assert_eq!(round_trip(&mut silent[7], b"awake"), b"awake");
    // One leaves: its slot is given back when its channel is torn down.
    let leaving = silent.remove(0);
    drop(leaving);
    server.wait_for("a Closed", |e| match e {
        Event::Closed(c) => {
            assert_eq!(c.reason, CloseReason::PeerClosed);
            Some(())
        }
        _ => None,
    });
    common::wait_until("a free slot", || server.listener.stats().open == 49);
    let mut newcomer = client(server.addr());
    assert_eq!(round_trip(&mut newcomer, b"in"), b"in");
    assert_eq!(server.listener.stats().accepted, 51);
    drop(silent);
    server.stop();
}

#[test]
fn silent_connections_are_closed_by_the_idle_timeout_and_others_are_served() {
    let config = ListenerConfig::default()
        .channel(ChannelConfig::default().idle_timeout(Some(Duration::from_millis(200))));
    let server = Server::start(2, config, Mode::Echo);
    let mut silent: Vec<_> = (0..30).map(|_| client(server.addr())).collect();
    let mut conns = HashSet::new();
    for _ in 0..30 {
        conns.insert(server.accepted().0);
    }
    // An active client gets its answers (it may be idle-closed too once it stops).
    let mut active = client(server.addr());
    for i in 0..10u8 {
        assert_eq!(round_trip(&mut active, &[i; 10]), vec![i; 10]);
    }
    // Each silent client sees the server close its connection...
    for s in &mut silent {
        assert!(read_to_close(s).is_empty());
    }
    // ... for the idle timeout.
    let mut idle_closed = 0;
    while idle_closed < 30 {
        server.wait_for("Closed", |e| match e {
            Event::Closed(c) if conns.contains(&c.conn) => {
                assert_eq!(c.reason, CloseReason::IdleTimeout);
                Some(())
            }
            _ => None,
        });
        idle_closed += 1;
    }
    assert!(server.io.stats().closed_idle >= 30);
    active.write_all(b"x").ok();
    server.stop();
}
