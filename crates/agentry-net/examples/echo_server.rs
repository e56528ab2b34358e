//! `echo_server` — a TCP echo server: every byte a client sends comes back.
//!
//! - One `Echo` agent owns every connection (`ConnOwner::Mbox`); it runs on the io
//!   dispatcher's thread, like the channels, so each echo is two local hops: the channel's
//!   `Received` to the owner, the owner's `SendBytes` back to the channel.
//! - Backpressure needs no code here: a client that sends without reading fills its
//!   channel's write buffer to the high watermark, the channel stops reading, and TCP holds
//!   the client back. The owner only logs `WriteHigh` / `WriteLow`.
//! - Untrusted clients, with limits from the command line (`support/limits.rs`): by default
//!   at most 1,000 connections, closed after 60 s of silence and after 10 minutes whatever
//!   they do, 4 MiB waiting for a client that does not read. The stream is raw bytes, so
//!   there is no frame deadline; a client trickling a byte a second is bounded by the
//!   lifetime, or, with `--min-rate`, closed within a window. The minimum rate is off by
//!   default because a person typing into `nc` is slow too; for machine clients, turn it on.
//!
//! ```text
//! cargo run -p agentry-net --example echo_server          # listens on 127.0.0.1:7007
//! cargo run -p agentry-net --example echo_server -- 0.0.0.0:7007 --min-rate 64/10s \
//!     --max-connections 10000 --max-lifetime 1h
//! nc 127.0.0.1 7007
//! ```

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox};
use agentry_net::{
    Accepted, ChannelConfig, Closed, ConnId, ConnOwner, IoDispatcher, NetStats, Received,
    SendBytes, WriteHigh, WriteLow,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

#[path = "support/limits.rs"]
mod limits;
use limits::Limits;

/// The echo server's limits when no flag changes them.
pub fn default_limits() -> Limits {
    Limits {
        threads: 1,
        max_connections: 1000,
        max_frame: ChannelConfig::default().max_frame,
        write_max: 4 * 1024 * 1024,
        idle_timeout: Some(Duration::from_secs(60)),
        frame_timeout: None,
        min_rate: None,
        max_lifetime: Some(Duration::from_secs(600)),
    }
}

/// Echoes every connection's bytes back to it.
#[derive(Default)]
struct Echo {
    channels: HashMap<ConnId, Mbox>,
}

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|e: &mut Echo, _: &mut Ctx<Echo>, a: Accepted| {
            tracing::info!(conn = %a.conn, peer = %a.peer, "client connected");
            e.channels.insert(a.conn, a.channel);
        })?
        .on(
            |e: &mut Echo, _: &mut Ctx<Echo>, Received { conn, data, .. }: Received| {
                if let Some(channel) = e.channels.get(&conn) {
                    channel.send(SendBytes(data));
                }
            },
        )?
        .on(|_: &mut Echo, _: &mut Ctx<Echo>, w: WriteHigh| {
            tracing::info!(conn = %w.conn, unwritten = w.unwritten, "client not reading: paused");
        })?
        .on(|_: &mut Echo, _: &mut Ctx<Echo>, w: WriteLow| {
            tracing::info!(conn = %w.conn, "client reading again");
        })?
        .on(|e: &mut Echo, _: &mut Ctx<Echo>, c: Closed| {
            tracing::info!(conn = %c.conn, reason = ?c.reason, "client gone");
            e.channels.remove(&c.conn);
        })?;
        Ok(())
    }
}

/// Runs the echo server on `addr` with `limits` until the environment is stopped; `ready`
/// gets the bound address and a handle to stop it. Returns the final counters.
pub fn run(
    addr: SocketAddr,
    limits: &Limits,
    ready: impl FnOnce(SocketAddr, EnvHandle),
) -> Result<NetStats, Box<dyn std::error::Error>> {
    let env = Env::builder().autoshutdown(false).build()?;
    let io = IoDispatcher::builder("echo")
        .threads(limits.threads)
        .build(env.handle())?;
    let mut coop = env.handle().new_coop();
    let echo = coop.add_with(Echo::default(), &io.binder());
    env.handle().register_coop(coop)?;
    let config = limits.listener(ChannelConfig::default());
    let listener = io.listen(addr, config, ConnOwner::Mbox(echo))?;
    ready(listener.local_addr(), env.handle().clone());
    env.run();
    io.wait_threads(Duration::from_secs(10));
    Ok(io.stats())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, limits) = match default_limits().parse(std::env::args().skip(1), true) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("echo_server: {message}");
            std::process::exit(2);
        }
    };
    let addr = addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7007)));
    let stats = run(addr, &limits, |addr, _| {
        println!(
            "echo server on {addr} (try: nc {} {})",
            addr.ip(),
            addr.port()
        );
    })?;
    println!("{stats:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{default_limits, run};
    use agentry_net::{CloseReason, MinRate};
    use std::io::{self, Read, Write};
    use std::net::{Shutdown, TcpStream};
    use std::sync::mpsc;
    use std::time::Duration;

    const DEADLINE: Duration = Duration::from_secs(10);

    fn client(addr: std::net::SocketAddr) -> TcpStream {
        let s = TcpStream::connect(addr).expect("connected");
        s.set_read_timeout(Some(DEADLINE)).expect("timeout");
        s.set_write_timeout(Some(DEADLINE)).expect("timeout");
        s
    }

    #[test]
    fn echoes_concurrent_clients_while_one_floods_without_reading() {
        let (ready_tx, ready_rx) = mpsc::channel();
        let server = std::thread::spawn(move || {
            run(
                "127.0.0.1:0".parse().expect("addr"),
                &default_limits(),
                move |addr, env| {
                    let _ = ready_tx.send((addr, env));
                },
            )
            .expect("server ran")
        });
        let (addr, env) = ready_rx.recv_timeout(DEADLINE).expect("server ready");

        // A flooder: writes until TCP holds it back (the server stopped reading from it).
        let mut flooder = client(addr);
        flooder
            .set_write_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let chunk = vec![b'f'; 64 * 1024];
        let mut flooded = 0usize;
        loop {
            match flooder.write(&chunk) {
                Ok(n) => flooded += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break;
                }
                Err(e) => panic!("flooder: {e}"),
            }
            assert!(flooded < 1 << 30, "the server never pushed back");
        }

        // Meanwhile three well-behaved clients are echoed byte for byte.
        let clients: Vec<_> = (0..3u8)
            .map(|c| {
                std::thread::spawn(move || {
                    let mut s = client(addr);
                    for round in 0..200u32 {
                        let msg = format!("client {c} round {round}\n").into_bytes();
                        s.write_all(&msg).expect("written");
                        let mut back = vec![0; msg.len()];
                        s.read_exact(&mut back).expect("echoed");
                        assert_eq!(back, msg);
                    }
                    s.shutdown(Shutdown::Write).expect("half close");
                    let mut rest = Vec::new();
                    s.read_to_end(&mut rest).expect("closed");
                    assert!(rest.is_empty());
                })
            })
            .collect();
        for c in clients {
            c.join().expect("client");
        }
        drop(flooder);
        env.stop();
        let stats = server.join().expect("server thread");
        assert_eq!(stats.accepted, 4);
        assert!(stats.write_high >= 1, "the flooder hit the high watermark");
        assert_eq!(
            stats.closed_write_overflow, 0,
            "paused, never over the maximum"
        );
        assert!(stats.closed_peer >= 3);
        assert_eq!(stats.open(), 0);
    }

    #[test]
    fn slow_and_silent_clients_are_closed_below_the_minimum_rate_from_the_command_line() {
        let args = [
            "127.0.0.1:0",
            "--min-rate",
            "64/200ms",
            "--max-connections",
            "3",
        ];
        let (addr, limits) = default_limits()
            .parse(args.map(String::from), true)
            .expect("flags");
        let min = MinRate::new(64, Duration::from_millis(200));
        assert_eq!(limits.min_rate, Some(min));
        assert_eq!(limits.max_connections, 3);
        assert!(
            default_limits()
                .parse(["--frame-timeout".into(), "1s".into()], true)
                .is_err(),
            "a raw server has no frames"
        );
        let (ready_tx, ready_rx) = mpsc::channel();
        let server = std::thread::spawn(move || {
            run(addr.expect("an address"), &limits, move |addr, env| {
                let _ = ready_tx.send((addr, env));
            })
            .expect("server ran")
        });
        let (addr, env) = ready_rx.recv_timeout(DEADLINE).expect("server ready");

        // A busy client is echoed.
        let mut busy = client(addr);
        for round in 0..20u8 {
            busy.write_all(&[round; 100]).expect("written");
            let mut back = [0u8; 100];
            busy.read_exact(&mut back).expect("echoed");
            assert_eq!(back, [round; 100]);
        }
        busy.shutdown(Shutdown::Write).expect("half close");
        let mut rest = Vec::new();
        busy.read_to_end(&mut rest).expect("closed");
        // One client sends a byte every 50 ms, another nothing: both are below 64 bytes per
        // 200 ms, and the server closes them.
        let mut silent = client(addr);
        let mut slow = client(addr);
        let trickler = std::thread::spawn(move || {
            for _ in 0..200 {
                if slow.write_all(b".").is_err() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        });
        let mut rest = Vec::new();
        match silent.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty()),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset),
        }
        assert!(trickler.join().expect("trickler"), "the server closed it");
        env.stop();
        let stats = server.join().expect("server thread");
        assert_eq!(stats.accepted, 3);
        assert_eq!((stats.closed_peer, stats.closed_below_min_rate), (1, 2));
        assert_eq!(
            stats.closed_for(&CloseReason::BelowMinRate { received: 0, min }),
            2
        );
        assert_eq!(stats.open(), 0);
    }
}
