//! What an owner sends to a channel in one turn of the io loop leaves in at most two system
//! calls (the channel's ground rules, "Writing"): the first send at once, the rest staged and
//! written with one `writev`, in order; staged bytes are neither lost at a close nor seen by
//! the watermarks.

mod common;

use agentry_net::{ChannelConfig, CloseReason, ListenerConfig};
use common::{Mode, Server, client, read_to_close, round_trip};
use std::net::Shutdown;

const ROUNDS: u64 = 100;
const REQUEST: usize = 100;

fn request(round: u64) -> Vec<u8> {
    (0..REQUEST).map(|i| (i as u64 ^ round) as u8).collect()
}

/// `ROUNDS` request/reply rounds of `REQUEST` bytes, each reply checked.
fn exchange(server: &Server) {
    let mut s = client(server.addr());
    for round in 0..ROUNDS {
        let data = request(round);
        assert_eq!(round_trip(&mut s, &data), data, "round {round}");
    }
    s.shutdown(Shutdown::Write).expect("half close");
    assert!(read_to_close(&mut s).is_empty());
    let (conn, _) = server.accepted();
    assert_eq!(server.closed(conn).reason, CloseReason::PeerClosed);
}

#[test]
fn the_ten_pieces_of_a_reply_leave_in_two_writes() {
    let server = Server::start(1, ListenerConfig::default(), Mode::EchoInPieces(10));
    exchange(&server);
    let stats = server.io.stats();
    assert_eq!(stats.bytes_out, ROUNDS * REQUEST as u64);
    // The client sends the next request only after the whole reply: the first piece at
    // once, the nine others in one `writev` (ten calls without staging).
    assert_eq!(stats.write_calls, 2 * ROUNDS);
    assert_eq!(stats.write_high, 0);
    server.stop();
}

#[test]
fn staging_stops_at_the_high_watermark_and_raises_no_write_high() {
    // 64 bytes high: of a 100-byte reply in pieces of 10, the first is written at once, the
    // next seven when the staged ones reach the watermark, the last two at the end of the
    // turn. The socket takes it all, so the unwritten bytes never reach the watermark.
    let config =
        ListenerConfig::default().channel(ChannelConfig::default().write_watermarks(32, 64));
    let server = Server::start(1, config, Mode::EchoInPieces(10));
    exchange(&server);
    let stats = server.io.stats();
    assert_eq!(stats.bytes_out, ROUNDS * REQUEST as u64);
    assert_eq!(stats.write_calls, 3 * ROUNDS);
    assert_eq!(stats.write_high, 0, "staged bytes are not unwritten ones");
    server.stop();
}

#[test]
fn staged_replies_reach_a_peer_that_closed_its_half() {
    // The client writes everything and half-closes at once: the channel reads the end of
    // stream while replies may still be staged; it drains them before it closes.
    let server = Server::start(1, ListenerConfig::default(), Mode::EchoInPieces(7));
    common::write_all_then_half_close(&server, 200_000);
    common::wait_until("the channel torn down", || {
        server.listener.stats().open == 0
    });
    let stats = server.io.stats();
    assert_eq!(stats.bytes_out, 200_000);
    assert_eq!(stats.bytes_unsent, 0);
    assert!(
        stats.write_calls < stats.bytes_out / 64,
        "{} writes for {} bytes: the pieces were not batched",
        stats.write_calls,
        stats.bytes_out
    );
    server.stop();
}
