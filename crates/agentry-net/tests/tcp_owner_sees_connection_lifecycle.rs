//! The owner's view of a connection: `Accepted` first, data in order, `Closed` last and
//! once; a per-connection owner lives exactly as long as its connection, on its channel's
//! thread; replies sent while handling the last request and `Closed` itself are still
//! delivered; `Close` flushes what is buffered; closing a listener closes its connections.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, UserError};
use agentry_net::{
    Accepted, ChannelConfig, Close, CloseReason, Closed, ConnId, ConnOwner, Frame, Framing,
    IoDispatcher, ListenerConfig, SendBytes, SendFrame, reactor,
};
use common::{DEADLINE, Event, Mode, Server, client, localhost, read_to_close};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::sync::mpsc::{self, Sender};

/// What a session saw, in order, reported from `on_finish`.
#[derive(Debug)]
struct Life {
    conn: Option<ConnId>,
    log: Vec<String>,
    same_thread: bool,
}

/// A per-connection owner: answers each line with `ok:<line>`; answers `Closed` with `bye`.
struct Session {
    channel: Mbox,
    io_thread: Option<usize>,
    life: Life,
    report: Sender<Life>,
}

impl Agent for Session {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Session, _: &mut Ctx<Session>, a: Accepted| {
            s.life.conn = Some(a.conn);
            s.life.log.push("accepted".into());
        })?
        .on(
            |s: &mut Session, _: &mut Ctx<Session>, Frame { data, .. }: Frame| {
                let line = String::from_utf8_lossy(&data).into_owned();
                s.channel.send(SendFrame(format!("ok:{line}").into_bytes()));
                s.life.log.push(line);
            },
        )?
        .on(|s: &mut Session, _: &mut Ctx<Session>, c: Closed| {
            s.channel.send(SendFrame(b"bye".to_vec()));
            s.life.log.push(format!("closed:{:?}", c.reason));
        })?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.io_thread = reactor::io_thread_index();
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.life.same_thread =
            self.io_thread.is_some() && self.io_thread == reactor::io_thread_index();
        let life = std::mem::replace(
            &mut self.life,
            Life {
                conn: None,
                log: Vec::new(),
                same_thread: false,
            },
        );
        let _ = self.report.send(life);
    }
}

#[test]
fn a_per_connection_owner_sees_accepted_first_closed_last_and_its_last_words_are_sent() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::builder("sessions")
        .threads(2)
        .build(env.handle())
        .expect("io");
    let (tx, lives) = mpsc::channel();
    let config =
        ListenerConfig::default().channel(ChannelConfig::default().framing(Framing::Lines));
    let owner = ConnOwner::per_connection(move |info, coop| {
        coop.add_with(
            Session {
                channel: info.channel.clone(),
                io_thread: None,
                life: Life {
                    conn: None,
                    log: Vec::new(),
                    same_thread: false,
                },
                report: tx.clone(),
            },
            &info.binder,
        )
    });
    let listener = io.listen(localhost(), config, owner).expect("listening");
    for n in 0..4 {
        let mut c = client(listener.local_addr());
        c.write_all(format!("a{n}\nb{n}\n").as_bytes())
            .expect("written");
        c.shutdown(Shutdown::Write).expect("half close");
        // The replies to both lines and the answer to `Closed` arrive before the end.
        let back = read_to_close(&mut c);
        assert_eq!(back, format!("ok:a{n}\nok:b{n}\nbye\n").as_bytes());
        let life = lives.recv_timeout(DEADLINE).expect("the session finished");
        assert!(life.conn.is_some());
        assert_eq!(
            life.log,
            vec![
                "accepted".to_string(),
                format!("a{n}"),
                format!("b{n}"),
                "closed:PeerClosed".to_string()
            ]
        );
        assert!(
            life.same_thread,
            "the session runs on its channel's io thread"
        );
    }
    let stats = io.stats();
    assert_eq!(
        (
            stats.accepted,
            stats.closed_peer,
            stats.frames_in,
            stats.frames_out
        ),
        (4, 4, 8, 12)
    );
    env.handle().stop();
    let env_stats = env.run();
    assert_eq!(env_stats.dead_letters, 0);
    assert_eq!(env_stats.unhandled, 0);
    assert!(io.wait_threads(DEADLINE));
}

#[test]
fn close_by_the_owner_flushes_what_is_buffered_first() {
    let server = Server::start(1, ListenerConfig::default(), Mode::Report);
    let mut c = client(server.addr());
    let (conn, channel) = server.accepted();
    // More than the socket takes at once: most of it waits in the write buffer.
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
    channel.send(SendBytes(data.clone()));
    channel.send(Close);
    channel.send(SendBytes(b"too late".to_vec()));
    let mut back = Vec::new();
    c.read_to_end(&mut back).expect("read to the end");
    assert_eq!(back.len(), data.len());
    assert!(back == data);
    let closed = server.closed(conn);
    assert_eq!(closed.reason, CloseReason::ByOwner);
    common::wait_until("torn down", || server.listener.stats().open == 0);
    let stats = server.io.stats();
    assert_eq!(stats.closed_by_owner, 1);
    assert_eq!(stats.sends_after_close, 1);
    assert_eq!(stats.bytes_unsent, 0);
    server.stop();
}

#[test]
fn closing_a_listener_closes_its_connections_with_shutdown() {
    let server = Server::start(2, ListenerConfig::default(), Mode::Echo);
    let mut clients: Vec<_> = (0..5).map(|_| client(server.addr())).collect();
    for _ in 0..5 {
        server.accepted();
    }
    server.listener.close();
    for c in &mut clients {
        assert!(read_to_close(c).is_empty());
    }
    for _ in 0..5 {
        server.wait_for("Closed", |e| match e {
            Event::Closed(c) => {
                assert_eq!(c.reason, CloseReason::Shutdown);
                Some(())
            }
            _ => None,
        });
    }
    assert_eq!(server.io.stats().closed_shutdown, 5);
    // The acceptor goes after its connections (children first), then nothing listens.
    common::wait_until("the listener closed", || {
        std::net::TcpStream::connect(server.addr()).is_err()
    });
    server.stop();
}

#[test]
fn a_panicking_owner_factory_costs_its_connection_not_the_listener() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::new(env.handle(), "factory").expect("io");
    let (tx, rx) = mpsc::channel();
    let calls = AtomicUsize::new(0);
    let owner = ConnOwner::per_connection(move |info, coop| {
        if calls.fetch_add(1, Ordering::Relaxed) == 0 {
            panic!("the first connection's owner cannot be made");
        }
        coop.add_with(common::Probe::new(tx.clone(), Mode::Echo), &info.binder)
    });
    let listener = io
        .listen(localhost(), ListenerConfig::default(), owner)
        .expect("listening");
    let mut refused = client(listener.local_addr());
    assert!(read_to_close(&mut refused).is_empty());
    let mut served = client(listener.local_addr());
    assert_eq!(common::round_trip(&mut served, b"ok"), b"ok");
    let stats = listener.stats();
    assert_eq!((stats.accepted, stats.accept_errors), (1, 1));
    drop(rx);
    env.handle().stop();
    env.run();
    assert!(io.wait_threads(DEADLINE));
}
