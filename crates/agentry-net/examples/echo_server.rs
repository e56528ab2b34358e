//! `echo_server` — a TCP echo server: every byte a client sends comes back.
//!
//! - One `Echo` agent owns every connection (`ConnOwner::Mbox`); it runs on the io
//!   dispatcher's thread, like the channels, so each echo is two local hops: the channel's
//!   `Received` to the owner, the owner's `SendBytes` back to the channel.
//! - Backpressure needs no code here: a client that sends without reading fills its
//!   channel's write buffer to the high watermark, the channel stops reading, and TCP holds
//!   the client back. The owner only logs `WriteHigh` / `WriteLow`.
//! - Untrusted clients: at most 1,000 connections, closed after 60 s of silence.
//!
//! ```text
//! cargo run -p agentry-net --example echo_server          # listens on 127.0.0.1:7007
//! nc 127.0.0.1 7007
//! ```

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox};
use agentry_net::{
    Accepted, ChannelConfig, Closed, ConnId, ConnOwner, IoDispatcher, ListenerConfig, NetStats,
    Received, SendBytes, WriteHigh, WriteLow,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

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
            tracing::info!(conn = %w.conn, buffered = w.buffered, "client not reading: paused");
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

/// Runs the echo server on `addr` until the environment is stopped; `ready` gets the bound
/// address and a handle to stop it. Returns the final counters.
pub fn run(
    addr: SocketAddr,
    ready: impl FnOnce(SocketAddr, EnvHandle),
) -> Result<NetStats, Box<dyn std::error::Error>> {
    let env = Env::builder().autoshutdown(false).build()?;
    let io = IoDispatcher::new(env.handle(), "echo")?;
    let mut coop = env.handle().new_coop();
    let echo = coop.add_with(Echo::default(), &io.binder());
    env.handle().register_coop(coop)?;
    let config = ListenerConfig::default()
        .max_connections(1000)
        .channel(ChannelConfig::default().idle_timeout(Some(Duration::from_secs(60))));
    let listener = io.listen(addr, config, ConnOwner::Mbox(echo))?;
    ready(listener.local_addr(), env.handle().clone());
    env.run();
    io.wait_threads(Duration::from_secs(10));
    Ok(io.stats())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7007".into())
        .parse()?;
    let stats = run(addr, |addr, _| {
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
    use super::run;
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
            run("127.0.0.1:0".parse().expect("addr"), move |addr, env| {
                let _ = ready_tx.send((addr, env));
            })
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
}
