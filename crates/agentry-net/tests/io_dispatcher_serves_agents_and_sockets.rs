//! The io dispatcher is the file-descriptor object processor: its agents are ordinary
//! agents (messages from other threads wake the loop through the eventfd; request/reply
//! works), and any mio source can be registered by an agent running on it.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, UserError};
use agentry_net::mio::Interest;
use agentry_net::mio::net::UdpSocket;
use agentry_net::reactor::{self, IoReady};
use agentry_net::{IoDispatcher, IoKey, NetError};
use common::DEADLINE;
use std::sync::mpsc::{self, Sender};

struct Add(u64);
struct Sum;

#[derive(Default)]
struct Summer(u64);

impl Agent for Summer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Summer, _: &mut Ctx<Summer>, Add(n): Add| s.0 += n)?
            .on_request(|s: &mut Summer, _: &mut Ctx<Summer>, _: Sum| {
                (s.0, reactor::io_thread_index())
            })?;
        Ok(())
    }
}

#[test]
fn messages_from_other_threads_wake_the_io_threads() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::builder("wake")
        .threads(3)
        .build(env.handle())
        .expect("io");
    let mut coop = env.handle().new_coop();
    let summers: Vec<_> = (0..3)
        .map(|i| coop.add_with(Summer::default(), &io.binder_at(i).expect("thread")))
        .collect();
    env.handle().register_coop(coop).expect("registered");
    let senders: Vec<_> = (0..4u64)
        .map(|t| {
            let summers = summers.clone();
            std::thread::spawn(move || {
                for n in 1..=1000 {
                    summers[(n as usize + t as usize) % 3].send(Add(n));
                }
            })
        })
        .collect();
    for s in senders {
        s.join().expect("sender");
    }
    let mut total = 0;
    for (i, s) in summers.iter().enumerate() {
        let (sum, thread) = s
            .request::<Sum, (u64, Option<usize>)>(Sum, DEADLINE)
            .expect("answer");
        assert_eq!(
            thread,
            Some(i),
            "each agent runs on the io thread it was bound to"
        );
        total += sum;
    }
    assert_eq!(total, 4 * 500_500);
    assert!(!reactor::on_io_thread());
    env.handle().stop();
    env.run();
    assert!(io.wait_threads(DEADLINE), "io threads exit at shutdown");
}

/// Receives datagrams on a UDP socket it registered itself.
struct UdpSink {
    socket: Option<UdpSocket>,
    key: Option<IoKey>,
    out: Sender<Vec<u8>>,
}

impl Agent for UdpSink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |s: &mut UdpSink, _: &mut Ctx<UdpSink>, IoReady { key }: IoReady| {
                if s.key != Some(key) || !reactor::take_readiness(key).is_readable() {
                    return;
                }
                let Some(socket) = &s.socket else { return };
                let mut buf = [0u8; 1500];
                // Edge-triggered: drain until WouldBlock.
                while let Ok(n) = socket.recv(&mut buf) {
                    let _ = s.out.send(buf[..n].to_vec());
                }
            },
        )?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        if let Some(socket) = self.socket.as_mut() {
            self.key = reactor::register(socket, Interest::READABLE, ctx.mbox()).ok();
        }
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        if let (Some(key), Some(socket)) = (self.key.take(), self.socket.as_mut()) {
            reactor::deregister(key, socket).expect("registered on this thread");
        }
    }
}

#[test]
fn an_agent_registers_its_own_socket_and_gets_readiness_as_messages() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let io = IoDispatcher::new(env.handle(), "udp").expect("io");
    let socket = UdpSocket::bind(common::localhost()).expect("bound");
    let addr = socket.local_addr().expect("addr");
    let (tx, rx) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    coop.add_with(
        UdpSink {
            socket: Some(socket),
            key: None,
            out: tx,
        },
        &io.binder(),
    );
    env.handle().register_coop(coop).expect("registered");
    let sender = std::net::UdpSocket::bind(common::localhost()).expect("bound");
    for i in 0..20u8 {
        sender.send_to(&[i; 3], addr).expect("sent");
        assert_eq!(rx.recv_timeout(DEADLINE).expect("datagram"), vec![i; 3]);
    }
    env.handle().stop();
    env.run();
    assert!(io.wait_threads(DEADLINE));
}

#[test]
fn registering_off_an_io_thread_is_refused() {
    let mut socket = UdpSocket::bind(common::localhost()).expect("bound");
    let env = Env::new().expect("env");
    let mbox = env
        .handle()
        .register_agent(Summer::default())
        .expect("agent");
    assert!(matches!(
        reactor::register(&mut socket, Interest::READABLE, &mbox),
        Err(NetError::NotOnIoThread)
    ));
    assert!(reactor::take_readiness(IoKey::clone(&fake_key())).is_empty());
    env.handle().stop();
}

fn fake_key() -> IoKey {
    // Any key: off an io thread every key is unknown.
    let env = Env::new().expect("env");
    let io = IoDispatcher::new(env.handle(), "k").expect("io");
    let (tx, rx) = mpsc::channel();
    struct Probe(Sender<Option<IoKey>>);
    impl Agent for Probe {
        fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
            let mut s = UdpSocket::bind(common::localhost()).expect("bound");
            let key = reactor::register(&mut s, Interest::READABLE, ctx.mbox()).ok();
            if let Some(k) = key {
                reactor::deregister(k, &mut s).expect("deregistered");
            }
            let _ = self.0.send(key);
            ctx.stop_env();
            Ok(())
        }
    }
    let mut coop = env.handle().new_coop();
    coop.add_with(Probe(tx), &io.binder());
    env.handle().register_coop(coop).expect("registered");
    let key = rx
        .recv_timeout(DEADLINE)
        .expect("reported")
        .expect("registered");
    env.run();
    key
}
