//! `tcp_echo` (SObjectizer 4.4 b5 `tcp_echo_client_server`): a client sends a packet of
//! `packet` bytes and waits for the whole echo before the next; `requests` packets per
//! connection, `connections` connections each with one request outstanding. Measures
//! requests per second (aggregate) and the round-trip time's p50 / p99.
//!
//! Servers, in the same process as the client, on 127.0.0.1:
//! - [`Server::Agentry`]: an [`IoDispatcher`] (`server_threads` io threads); each connection
//!   has a channel and an owner agent on the same io thread that answers every `Received`
//!   with `SendBytes` of the same bytes.
//! - [`Server::Plain`]: `std::net`, one blocking thread per connection (`read` → `write_all`),
//!   the seed's "primitive echo server".
//!
//! Clients: one connection — a blocking `std::net` loop; more — one thread driving all the
//! connections through `mio`. Every echo is checked (its sequence number and length).

use crate::benches::support::setup;
use crate::harness::BenchError;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use agentry_net::mio::net::TcpStream as MioStream;
use agentry_net::mio::{Events, Interest, Poll, Token};
use agentry_net::{
    Accepted, ChannelConfig, Closed, ConnOwner, IoDispatcher, ListenerConfig, Received, SendBytes,
};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The seed's figure for SObjectizer's RAW channels, 256-byte packets (packets per second).
pub const SEED_SOBJECTIZER: f64 = 10_500.0;
/// The seed's figure for its primitive blocking echo pair (packets per second).
pub const SEED_PLAIN: f64 = 28_000.0;

/// One `tcp_echo` configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchoSpec {
    /// Bytes per packet (the seed: 256).
    pub packet: usize,
    /// Concurrent connections, one request outstanding on each.
    pub connections: usize,
    /// Requests per connection (the seed: ≥ 10,000 on one connection).
    pub requests: usize,
    /// Io threads of the agentry server.
    pub server_threads: usize,
    /// How long the agentry server's idle io threads busy-poll before they block
    /// ([`IoBuilder::spin`](agentry_net::IoBuilder::spin); 0 by default).
    pub spin: Duration,
}

impl EchoSpec {
    /// The seed's run: 256-byte packets, one connection, 10,000 requests.
    pub fn seed() -> Self {
        EchoSpec {
            packet: 256,
            connections: 1,
            requests: 10_000,
            server_threads: 1,
            spin: Duration::ZERO,
        }
    }

    /// 100 connections × 1 outstanding request, 200 requests each.
    pub fn hundred_connections() -> Self {
        EchoSpec {
            packet: 256,
            connections: 100,
            requests: 200,
            server_threads: 1,
            spin: Duration::ZERO,
        }
    }
}

/// Which echo server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// Agentry channels on an io dispatcher.
    Agentry,
    /// Blocking `std::net`, a thread per connection.
    Plain,
}

/// The figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct EchoResult {
    /// Requests answered (and checked).
    pub requests: u64,
    /// Wall time from the first request to the last answer.
    pub elapsed: Duration,
    /// Median round-trip time.
    pub p50: Duration,
    /// 99th-percentile round-trip time.
    pub p99: Duration,
}

impl EchoResult {
    /// Requests per second (aggregate over the connections).
    pub fn per_sec(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs `spec` against `server`; `limit` bounds the whole run.
pub fn run(server: Server, spec: &EchoSpec, limit: Duration) -> Result<EchoResult, BenchError> {
    if spec.packet < 8 || spec.connections == 0 || spec.requests == 0 {
        return Err(BenchError::Harness(
            "packet >= 8 bytes, connections and requests > 0".into(),
        ));
    }
    match server {
        Server::Agentry => {
            let env = Env::builder()
                .autoshutdown(false)
                .build()
                .map_err(setup("environment"))?;
            let io = IoDispatcher::builder("echo")
                .threads(spec.server_threads.max(1))
                .spin(spec.spin)
                .build(env.handle())
                .map_err(setup("io dispatcher"))?;
            let owner = ConnOwner::per_connection(|info, coop| {
                coop.add_with(
                    EchoSession {
                        channel: info.channel.clone(),
                    },
                    &info.binder,
                )
            });
            let config = ListenerConfig::default()
                .channel(ChannelConfig::default())
                .max_connections(spec.connections + 16);
            let listener = io
                .listen(localhost(), config, owner)
                .map_err(setup("listener"))?;
            let result = drive(listener.local_addr(), spec, limit);
            env.handle().stop();
            env.run();
            io.wait_threads(Duration::from_secs(10));
            result
        }
        Server::Plain => {
            let listener = TcpListener::bind(localhost())?;
            let addr = listener.local_addr()?;
            let connections = spec.connections;
            let acceptor = std::thread::spawn(move || {
                let mut workers = Vec::with_capacity(connections);
                for _ in 0..connections {
                    let Ok((stream, _)) = listener.accept() else {
                        break;
                    };
                    workers.push(std::thread::spawn(move || plain_echo(stream)));
                }
                for w in workers {
                    let _ = w.join();
                }
            });
            let result = drive(addr, spec, limit);
            if result.is_err() {
                // Unblock the acceptor if the client gave up early.
                for _ in 0..connections {
                    let _ = TcpStream::connect(addr);
                }
            }
            let _ = acceptor.join();
            result
        }
    }
}

/// The run did not finish within `limit` (a lost packet or a hang).
fn timeout(limit: Duration) -> BenchError {
    BenchError::Harness(format!("the run did not finish within {limit:?}"))
}

fn localhost() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// The agentry server's owner of one connection.
struct EchoSession {
    channel: Mbox,
}

impl Agent for EchoSession {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |s: &mut EchoSession, _: &mut Ctx<EchoSession>, Received { data, .. }: Received| {
                s.channel.send(SendBytes(data));
            },
        )?
        .on(|_: &mut EchoSession, _: &mut Ctx<EchoSession>, _: Accepted| {})?
        .on(|_: &mut EchoSession, _: &mut Ctx<EchoSession>, _: Closed| {})?;
        Ok(())
    }
}

fn plain_echo(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut buf = [0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stream.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

fn drive(addr: SocketAddr, spec: &EchoSpec, limit: Duration) -> Result<EchoResult, BenchError> {
    if spec.connections == 1 {
        blocking_client(addr, spec, limit)
    } else {
        mio_client(addr, spec, limit)
    }
}

fn packet(spec: &EchoSpec, seq: u64) -> Vec<u8> {
    let mut p = vec![0xA5u8; spec.packet];
    p[..8].copy_from_slice(&seq.to_le_bytes());
    p
}

fn check(spec: &EchoSpec, seq: u64, echo: &[u8]) -> Result<(), BenchError> {
    if echo.len() != spec.packet || echo[..8] != seq.to_le_bytes() {
        return Err(BenchError::Verify(format!(
            "echo of request {seq}: wrong bytes"
        )));
    }
    Ok(())
}

fn blocking_client(
    addr: SocketAddr,
    spec: &EchoSpec,
    limit: Duration,
) -> Result<EchoResult, BenchError> {
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(limit))?;
    let mut rtts = Vec::with_capacity(spec.requests);
    let mut echo = vec![0u8; spec.packet];
    let start = Instant::now();
    for seq in 0..spec.requests as u64 {
        let p = packet(spec, seq);
        let t = Instant::now();
        s.write_all(&p)?;
        s.read_exact(&mut echo)?;
        rtts.push(t.elapsed());
        check(spec, seq, &echo)?;
        if start.elapsed() > limit {
            return Err(timeout(limit));
        }
    }
    let elapsed = start.elapsed();
    Ok(summarise(rtts, elapsed))
}

struct ClientConn {
    stream: MioStream,
    seq: u64,
    sent_at: Instant,
    got: Vec<u8>,
    done: bool,
}

fn mio_client(
    addr: SocketAddr,
    spec: &EchoSpec,
    limit: Duration,
) -> Result<EchoResult, BenchError> {
    let mut poll = Poll::new()?;
    let mut conns = Vec::with_capacity(spec.connections);
    for i in 0..spec.connections {
        let std_stream = TcpStream::connect(addr)?;
        std_stream.set_nodelay(true)?;
        std_stream.set_nonblocking(true)?;
        let mut stream = MioStream::from_std(std_stream);
        poll.registry()
            .register(&mut stream, Token(i), Interest::READABLE)?;
        conns.push(ClientConn {
            stream,
            seq: 0,
            sent_at: Instant::now(),
            got: Vec::with_capacity(spec.packet),
            done: false,
        });
    }
    let total = (spec.connections * spec.requests) as u64;
    let mut rtts = Vec::with_capacity(total as usize);
    let mut events = Events::with_capacity(1024);
    let mut finished = 0;
    let mut buf = vec![0u8; 64 * 1024];
    let start = Instant::now();
    for c in conns.iter_mut() {
        c.sent_at = Instant::now();
        write_packet(&mut c.stream, &packet(spec, 0))?;
    }
    while finished < spec.connections {
        let left = limit
            .checked_sub(start.elapsed())
            .ok_or_else(|| timeout(limit))?;
        poll.poll(&mut events, Some(left))?;
        for event in events.iter() {
            let Some(c) = conns.get_mut(event.token().0) else {
                continue;
            };
            loop {
                match c.stream.read(&mut buf) {
                    Ok(0) => {
                        return Err(BenchError::Verify("the server closed a connection".into()));
                    }
                    Ok(n) => c.got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.into()),
                }
            }
            while c.got.len() >= spec.packet && !c.done {
                rtts.push(c.sent_at.elapsed());
                check(spec, c.seq, &c.got[..spec.packet])?;
                c.got.drain(..spec.packet);
                c.seq += 1;
                if c.seq == spec.requests as u64 {
                    c.done = true;
                    finished += 1;
                } else {
                    c.sent_at = Instant::now();
                    write_packet(&mut c.stream, &packet(spec, c.seq))?;
                }
            }
        }
    }
    let elapsed = start.elapsed();
    if rtts.len() as u64 != total {
        return Err(BenchError::Verify(format!(
            "{} answers, expected {total}",
            rtts.len()
        )));
    }
    Ok(summarise(rtts, elapsed))
}

/// Writes a whole (small) packet to a non-blocking socket.
fn write_packet(s: &mut MioStream, p: &[u8]) -> io::Result<()> {
    let mut from = 0;
    while from < p.len() {
        match s.write(&p[from..]) {
            Ok(n) => from += n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                std::thread::yield_now();
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn summarise(mut rtts: Vec<Duration>, elapsed: Duration) -> EchoResult {
    rtts.sort_unstable();
    let at = |q: f64| {
        rtts.get(((rtts.len() as f64 * q) as usize).min(rtts.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    EchoResult {
        requests: rtts.len() as u64,
        elapsed,
        p50: at(0.50),
        p99: at(0.99),
    }
}

#[cfg(test)]
mod tests {
    use super::{EchoSpec, Server, run};
    use std::time::Duration;

    #[test]
    fn both_servers_echo_every_packet_on_one_and_ten_connections() {
        for server in [Server::Agentry, Server::Plain] {
            for connections in [1, 10] {
                let spec = EchoSpec {
                    connections,
                    requests: 20,
                    ..EchoSpec::seed()
                };
                let r = run(server, &spec, Duration::from_secs(60)).expect("ran");
                assert_eq!(r.requests, connections as u64 * 20);
            }
        }
    }
}
