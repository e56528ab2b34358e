//! `chat_server` — a line-based chat room: every line a client sends goes to every other
//! client, prefixed with the sender's name.
//!
//! - An agent per connection (`ConnOwner::per_connection`): the `Session` is added to the
//!   connection's coop by the factory, bound to the channel's io thread, and deregistered
//!   with the channel when the connection closes.
//! - The room is a multi mbox: each session subscribes to `Said` / `Joined` / `Left` and
//!   publishes its client's lines there; the room shares one `Arc` per message among all
//!   sessions.
//! - Commands: `/nick <name>`; `/quit` (the session sends `Close`: the goodbye it sent
//!   before is flushed first).
//! - Untrusted clients, with limits from the command line (`support/limits.rs`); by default:
//!   lines of at most 1 KiB (a longer one closes that connection with `FrameTooBig`), a line
//!   finished within 30 s of its first byte (a client trickling a line is closed with
//!   `FrameTimeout` and does not keep its slot), at most 1,000 clients, closed after 5
//!   minutes of silence; a client that does not read is disconnected once 1 MiB is waiting
//!   for it (`WriteOverflow`) and does not slow the room down. No minimum rate (people
//!   chatting are slow and listen more than they talk) and no lifetime, unless asked for.
//!
//! ```text
//! cargo run -p agentry-net --example chat_server          # listens on 127.0.0.1:7008
//! cargo run -p agentry-net --example chat_server -- 0.0.0.0:7008 --frame-timeout 10s \
//!     --max-connections 200 --max-lifetime 8h
//! nc 127.0.0.1 7008
//! ```

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox, MultiMbox};
use agentry_net::{
    Accepted, ChannelConfig, Close, Closed, ConnId, ConnOwner, Frame, Framing, IoDispatcher,
    NetStats, SendFrame,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[path = "support/limits.rs"]
mod limits;
use limits::Limits;

/// A line said in the room.
struct Said {
    from: ConnId,
    text: Arc<str>,
}
/// Someone joined.
struct Joined(ConnId, Arc<str>);
/// Someone left.
struct Left(ConnId, Arc<str>);

/// The agent of one connection.
struct Session {
    channel: Mbox,
    room: MultiMbox,
    conn: Option<ConnId>,
    nick: Arc<str>,
}

impl Session {
    fn say(&self, line: &str) {
        self.channel.send(SendFrame(line.as_bytes().to_vec()));
    }

    fn is_me(&self, conn: ConnId) -> bool {
        self.conn == Some(conn)
    }
}

impl Agent for Session {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Session, _: &mut Ctx<Session>, a: Accepted| {
            s.conn = Some(a.conn);
            s.nick = format!("guest{}", a.conn.get()).into();
            s.say(&format!("* welcome, {} (/nick <name>, /quit)", s.nick));
            s.room.send(Joined(a.conn, s.nick.clone()));
        })?
        .on(
            |s: &mut Session, _: &mut Ctx<Session>, Frame { data, .. }: Frame| {
                let line = String::from_utf8_lossy(&data);
                let Some(conn) = s.conn else { return };
                if let Some(nick) = line.strip_prefix("/nick ") {
                    let nick = nick.trim();
                    if !nick.is_empty() && nick.len() <= 32 {
                        s.nick = nick.into();
                        s.say(&format!("* you are {nick}"));
                    }
                } else if line == "/quit" {
                    s.say("* bye");
                    s.channel.send(Close);
                } else {
                    s.room.send(Said {
                        from: conn,
                        text: format!("{}: {line}", s.nick).into(),
                    });
                }
            },
        )?
        .on(|s: &mut Session, _: &mut Ctx<Session>, c: Closed| {
            tracing::info!(conn = %c.conn, reason = ?c.reason, "left");
            s.room.send(Left(c.conn, s.nick.clone()));
        })?;
        let room = self.room.clone();
        def.from(&room)
            .on(|s: &mut Session, _: &mut Ctx<Session>, m: Arc<Said>| {
                if !s.is_me(m.from) {
                    s.say(&m.text);
                }
            })?;
        def.from(&room)
            .on(|s: &mut Session, _: &mut Ctx<Session>, m: Arc<Joined>| {
                if !s.is_me(m.0) {
                    s.say(&format!("* {} joined", m.1));
                }
            })?;
        def.from(&room)
            .on(|s: &mut Session, _: &mut Ctx<Session>, m: Arc<Left>| {
                if !s.is_me(m.0) {
                    s.say(&format!("* {} left", m.1));
                }
            })?;
        Ok(())
    }
}

/// The chat server's limits when no flag changes them (the tests shrink some).
pub fn default_limits() -> Limits {
    Limits {
        threads: 2,
        max_connections: 1000,
        max_frame: 1024,
        write_max: 1024 * 1024,
        idle_timeout: Some(Duration::from_secs(300)),
        frame_timeout: Some(Duration::from_secs(30)),
        min_rate: None,
        max_lifetime: None,
    }
}

/// Runs the chat server on `addr` with `limits` until the environment is stopped; `ready`
/// gets the bound address and a handle to stop it. Returns the final counters.
pub fn run(
    addr: SocketAddr,
    limits: &Limits,
    ready: impl FnOnce(SocketAddr, EnvHandle),
) -> Result<NetStats, Box<dyn std::error::Error>> {
    let env = Env::builder().autoshutdown(false).build()?;
    let io = IoDispatcher::builder("chat")
        .threads(limits.threads)
        .build(env.handle())?;
    let room = env.handle().create_mbox();
    let config = limits.listener(ChannelConfig::default().framing(Framing::Lines));
    let owner = ConnOwner::per_connection(move |info, coop| {
        coop.add_with(
            Session {
                channel: info.channel.clone(),
                room: room.clone(),
                conn: None,
                nick: "".into(),
            },
            &info.binder,
        )
    });
    let listener = io.listen(addr, config, owner)?;
    ready(listener.local_addr(), env.handle().clone());
    env.run();
    io.wait_threads(Duration::from_secs(10));
    Ok(io.stats())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, limits) = match default_limits().parse(std::env::args().skip(1), false) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("chat_server: {message}");
            std::process::exit(2);
        }
    };
    let addr = addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7008)));
    let stats = run(addr, &limits, |addr, _| {
        println!(
            "chat server on {addr} (try: nc {} {})",
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
    use agentry::EnvHandle;
    use agentry_net::NetStats;
    use std::io::{BufRead, BufReader, Write};
    use std::net::SocketAddr;
    use std::net::TcpStream;
    use std::sync::mpsc;
    use std::time::Duration;

    const DEADLINE: Duration = Duration::from_secs(10);

    struct Client {
        lines: BufReader<TcpStream>,
        out: TcpStream,
    }

    impl Client {
        fn join(addr: std::net::SocketAddr) -> Client {
            let s = TcpStream::connect(addr).expect("connected");
            s.set_read_timeout(Some(DEADLINE)).expect("timeout");
            s.set_write_timeout(Some(DEADLINE)).expect("timeout");
            let mut c = Client {
                lines: BufReader::new(s.try_clone().expect("clone")),
                out: s,
            };
            assert!(c.line().starts_with("* welcome"));
            c
        }

        fn send(&mut self, line: &str) {
            self.out
                .write_all(format!("{line}\n").as_bytes())
                .expect("sent");
        }

        fn line(&mut self) -> String {
            let mut l = String::new();
            let n = self.lines.read_line(&mut l).expect("a line");
            assert!(n > 0, "connection closed");
            l.trim_end().to_string()
        }

        /// The next line that is not a join/leave notice.
        fn said(&mut self) -> String {
            loop {
                let l = self.line();
                if !(l.ends_with(" joined") || l.ends_with(" left")) {
                    return l;
                }
            }
        }

        fn closed(&mut self) -> bool {
            let mut rest = Vec::new();
            loop {
                let mut l = String::new();
                match self.lines.read_line(&mut l) {
                    Ok(0) => return true,
                    Ok(_) => rest.push(l),
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                    Err(_) => return false,
                }
            }
        }
    }

    /// Starts the server with the defaults changed by `flags`.
    fn start(flags: &[&str]) -> (SocketAddr, EnvHandle, std::thread::JoinHandle<NetStats>) {
        let args = ["127.0.0.1:0"].iter().chain(flags).map(|a| a.to_string());
        let (addr, limits) = default_limits().parse(args, false).expect("flags");
        let (ready_tx, ready_rx) = mpsc::channel();
        let server = std::thread::spawn(move || {
            run(addr.expect("an address"), &limits, move |addr, env| {
                let _ = ready_tx.send((addr, env));
            })
            .expect("server ran")
        });
        let (addr, env) = ready_rx.recv_timeout(DEADLINE).expect("server ready");
        (addr, env, server)
    }

    #[test]
    fn the_room_relays_lines_and_survives_bad_clients() {
        let (addr, env, server) = start(&["--write-max", "65536"]);

        let mut alice = Client::join(addr);
        alice.send("/nick alice");
        assert_eq!(alice.line(), "* you are alice");
        let mut bob = Client::join(addr);
        bob.send("/nick bob");
        assert_eq!(bob.line(), "* you are bob");
        // Bob's join notice reached alice; lines go both ways.
        assert!(alice.line().ends_with(" joined"));
        alice.send("hi bob");
        assert_eq!(bob.said(), "alice: hi bob");
        bob.send("hi alice");
        assert_eq!(alice.said(), "bob: hi alice");

        // A client that sends an overlong line is closed; the room goes on.
        let mut rude = Client::join(addr);
        rude.out.write_all(&[b'x'; 2000]).expect("sent");
        assert!(rude.closed());
        assert!(alice.line().ends_with(" joined"));
        assert!(alice.line().ends_with(" left"));
        // A client that never reads is disconnected once 64 KiB wait for it.
        let sleeper = TcpStream::connect(addr).expect("connected");
        assert!(alice.line().ends_with(" joined"));
        // More than the kernel buffers of a non-reading peer take (about 4 MiB on Linux
        // loopback) plus the 64 KiB write maximum; bob reads every line meanwhile.
        let text = "y".repeat(1000);
        let writer = {
            let mut out = alice.out.try_clone().expect("clone");
            let line = format!("{text}\n");
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    out.write_all(line.as_bytes()).expect("sent");
                }
            })
        };
        for _ in 0..10_000 {
            assert_eq!(bob.said(), format!("alice: {text}"));
        }
        writer.join().expect("writer");
        bob.send("still here");
        assert_eq!(alice.said(), "bob: still here");

        // /quit: the goodbye arrives, then the end of the stream.
        bob.send("/quit");
        assert_eq!(bob.said(), "* bye");
        assert!(bob.closed());

        drop(sleeper);
        drop(alice);
        env.stop();
        let stats = server.join().expect("server thread");
        assert_eq!(stats.accepted, 4);
        assert_eq!(stats.closed_frame_too_big, 1);
        assert_eq!(stats.closed_write_overflow, 1, "the sleeper");
        assert_eq!(stats.closed_by_owner, 1, "bob's /quit");
        assert_eq!(stats.open(), 0);
    }

    #[test]
    fn a_client_that_never_finishes_its_line_is_closed_at_the_frame_deadline() {
        let (addr, env, server) = start(&["--frame-timeout", "300ms", "--max-connections", "3"]);
        let mut alice = Client::join(addr);
        // A client trickles a line a byte every 50 ms: active, but never done.
        let mut slow = TcpStream::connect(addr).expect("connected");
        assert!(alice.line().ends_with(" joined"));
        let trickler = std::thread::spawn(move || {
            for _ in 0..200 {
                if slow.write_all(b"z").is_err() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        });
        // It is closed at the deadline and leaves the room; the room goes on.
        assert!(alice.line().ends_with(" left"));
        assert!(trickler.join().expect("trickler"), "the server closed it");
        let mut bob = Client::join(addr);
        assert!(alice.line().ends_with(" joined"));
        bob.send("made it");
        assert!(alice.said().ends_with(": made it"));
        drop((alice, bob));
        env.stop();
        let stats = server.join().expect("server thread");
        assert_eq!(stats.closed_frame_timeout, 1);
        assert_eq!(stats.accepted, 3);
        assert_eq!(stats.refused_over_limit, 0);
        assert_eq!(stats.open(), 0);
    }
}
