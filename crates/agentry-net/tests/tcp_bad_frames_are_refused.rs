//! Untrusted framing input: oversized frames (announced or sent), overlong lines and a
//! disconnect in the middle of a frame each close that connection with a clear reason,
//! counted; frames before them are delivered; the server keeps serving other clients.

mod common;

use agentry_net::{ChannelConfig, CloseReason, Framing, ListenerConfig};
use common::{Event, Mode, Server, client, frame, read_to_close, round_trip};
use std::io::{Read, Write};

fn server(framing: Framing, max: usize) -> Server {
    let config =
        ListenerConfig::default().channel(ChannelConfig::default().framing(framing).max_frame(max));
    Server::start(1, config, Mode::Echo)
}

fn frames_of(server: &Server, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            server.wait_for("Frame", |e| match e {
                Event::Frame(_, f) => Some(f),
                _ => None,
            })
        })
        .collect()
}

/// A good client, served while (or after) another misbehaves.
fn good_client_is_served(server: &Server, framing: Framing) {
    let mut c = client(server.addr());
    let (request, reply) = match framing {
        Framing::Lines => (b"still here\n".to_vec(), b"still here\n".to_vec()),
        _ => (frame(b"still here"), frame(b"still here")),
    };
    assert_eq!(round_trip(&mut c, &request), reply);
}

#[test]
fn frames_split_into_single_bytes_arrive_whole() {
    let server = server(Framing::LengthPrefixed, 1024);
    let mut c = client(server.addr());
    let mut wire = frame(b"hello");
    wire.extend(frame(b""));
    wire.extend(frame(&[9; 1000]));
    for b in &wire {
        c.write_all(&[*b]).expect("written");
    }
    let mut back = vec![0; wire.len()];
    c.read_exact(&mut back).expect("echoed as frames");
    assert_eq!(back, wire);
    assert_eq!(
        frames_of(&server, 3),
        vec![b"hello".to_vec(), Vec::new(), vec![9; 1000]]
    );
    assert_eq!(server.io.stats().frames_in, 3);
    assert_eq!(server.io.stats().frames_out, 3);
    server.stop();
}

#[test]
fn an_announced_oversized_frame_closes_the_connection_with_frame_too_big() {
    let server = server(Framing::LengthPrefixed, 1024);
    let mut bad = client(server.addr());
    let (conn, _) = server.accepted();
    let mut wire = frame(b"fine");
    wire.extend_from_slice(&(1_000_000u32).to_be_bytes());
    wire.extend_from_slice(&[0; 100]);
    bad.write_all(&wire).expect("written");
    // The frame before the bad one is echoed, then the server closes.
    assert_eq!(read_to_close(&mut bad), frame(b"fine"));
    let closed = server.closed(conn);
    assert_eq!(
        closed.reason,
        CloseReason::FrameTooBig {
            size: 1_000_000,
            max: 1024
        }
    );
    let stats = server.io.stats();
    assert_eq!(stats.frames_rejected, 1);
    assert_eq!(stats.closed_frame_too_big, 1);
    good_client_is_served(&server, Framing::LengthPrefixed);
    server.stop();
}

#[test]
fn an_overlong_line_closes_the_connection_with_frame_too_big() {
    let server = server(Framing::Lines, 64);
    let mut bad = client(server.addr());
    let (conn, _) = server.accepted();
    bad.write_all(b"short\r\n").expect("written");
    bad.write_all(&[b'x'; 65]).expect("written");
    assert_eq!(read_to_close(&mut bad), b"short\n");
    let closed = server.closed(conn);
    assert!(
        matches!(closed.reason, CloseReason::FrameTooBig { size, max: 64 } if size > 64),
        "{closed:?}"
    );
    assert_eq!(server.io.stats().frames_rejected, 1);
    good_client_is_served(&server, Framing::Lines);
    server.stop();
}

#[test]
fn a_disconnect_in_the_middle_of_a_frame_is_reported_with_the_partial_size() {
    let server = server(Framing::LengthPrefixed, 1024);
    let mut bad = client(server.addr());
    let (conn, _) = server.accepted();
    let mut wire = frame(b"complete");
    wire.extend_from_slice(&100u32.to_be_bytes());
    wire.extend_from_slice(&[1; 30]);
    bad.write_all(&wire).expect("written");
    bad.shutdown(std::net::Shutdown::Write).expect("half close");
    assert_eq!(read_to_close(&mut bad), frame(b"complete"));
    let closed = server.closed(conn);
    assert_eq!(
        closed.reason,
        CloseReason::PeerClosedMidFrame { partial: 34 }
    );
    assert_eq!(frames_of(&server, 0).len(), 0);
    let stats = server.io.stats();
    assert_eq!(stats.closed_mid_frame, 1);
    assert_eq!(stats.frames_in, 1);
    good_client_is_served(&server, Framing::LengthPrefixed);
    server.stop();
}

#[test]
fn a_line_client_that_vanishes_mid_line_is_reported() {
    // Reporting only: had the server echoed "one", the client's close with unread data would
    // be a reset (reported as `Error(ConnectionReset)`).
    let config = ListenerConfig::default().channel(
        ChannelConfig::default()
            .framing(Framing::Lines)
            .max_frame(1024),
    );
    let server = Server::start(1, config, Mode::Report);
    let mut bad = client(server.addr());
    let (conn, _) = server.accepted();
    bad.write_all(b"one\ntw").expect("written");
    drop(bad);
    assert_eq!(frames_of(&server, 1), vec![b"one".to_vec()]);
    let closed = server.closed(conn);
    assert_eq!(
        closed.reason,
        CloseReason::PeerClosedMidFrame { partial: 2 }
    );
    let mut good = client(server.addr());
    good.write_all(b"still here\n").expect("written");
    assert_eq!(frames_of(&server, 1), vec![b"still here".to_vec()]);
    server.stop();
}
