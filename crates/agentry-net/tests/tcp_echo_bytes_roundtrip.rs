//! Bytes sent by clients come back intact and in order, from many clients at once over
//! several io threads; the counters add up.

mod common;

use agentry_net::{CloseReason, IoDispatcher, ListenerConfig};
use common::{Event, Mode, Server, client, read_to_close, round_trip};
use std::net::Shutdown;
use std::time::Duration;

#[test]
fn every_byte_comes_back_in_order_on_every_connection() {
    let server = Server::start(2, ListenerConfig::default(), Mode::EchoQuiet);
    let addr = server.addr();
    let clients: Vec<_> = (0..8u8)
        .map(|c| {
            std::thread::spawn(move || {
                let mut s = client(addr);
                let mut total = 0u64;
                for round in 0..50u32 {
                    let len = 1 + (round as usize * 97 + c as usize * 13) % 3000;
                    let data: Vec<u8> = (0..len).map(|i| (i as u8) ^ c ^ round as u8).collect();
                    assert_eq!(round_trip(&mut s, &data), data, "client {c} round {round}");
                    total += len as u64;
                }
                s.shutdown(Shutdown::Write).expect("shutdown");
                assert!(read_to_close(&mut s).is_empty());
                total
            })
        })
        .collect();
    let sent: u64 = clients.into_iter().map(|c| c.join().expect("client")).sum();
    let mut closed = 0;
    while closed < 8 {
        server.wait_for("Closed", |e| match e {
            Event::Closed(c) => {
                assert_eq!(c.reason, CloseReason::PeerClosed);
                assert_eq!(c.bytes_in, c.bytes_out);
                Some(())
            }
            _ => None,
        });
        closed += 1;
    }
    // Each channel tears down once the probe has handled its `Closed`; then its slot is free.
    common::wait_until("every channel torn down", || {
        server.listener.stats().open == 0
    });
    let stats = server.io.stats();
    assert_eq!(stats.accepted, 8);
    assert_eq!(stats.opened, 8);
    assert_eq!(stats.closed_peer, 8);
    assert_eq!(stats.open(), 0);
    assert_eq!(stats.bytes_in, sent);
    assert_eq!(stats.bytes_out, sent);
    assert_eq!(server.listener.stats().open, 0);
    let env_stats = server.stop();
    assert_eq!(env_stats.dead_letters, 0);
}

#[test]
fn a_client_that_writes_then_closes_gets_everything_back() {
    // The server closes when it reads the end of stream; everything before it was echoed
    // (written before the close).
    let server = Server::start(1, ListenerConfig::default(), Mode::Echo);
    common::write_all_then_half_close(&server, 100_000);
    server.stop();
}

#[test]
fn a_spinning_io_thread_serves_its_sockets_while_it_spins() {
    // Spinning 30 s after each piece of work: the loop never reaches `epoll_wait`'s block
    // while the client keeps it busy, so every request was picked up by the spin's own look
    // at the sockets (a spin that looked only for messages would block after each reply).
    let mut io = IoDispatcher::builder("spin");
    io.spin(Duration::from_secs(30));
    let server = Server::start_on(&io, ListenerConfig::default(), Mode::EchoQuiet);
    let mut s = client(server.addr());
    for round in 0..100u32 {
        let data = round.to_le_bytes().repeat(25);
        assert_eq!(round_trip(&mut s, &data), data, "round {round}");
    }
    assert_eq!(server.io.stats().loop_blocks, 0);
    drop(s);
    server.stop();
}
