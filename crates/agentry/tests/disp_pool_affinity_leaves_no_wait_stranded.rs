//! A thread pool keeps agents that message each other on one worker (affinity) — even while
//! another worker is woken again and again and searches for work to steal — and still
//! serves an agent that a handler is blocked waiting for: before a worker blocks in a request
//! or a chain receive, it hands what it holds to another worker. With affinity off, a handler
//! may block in anything (here a `std` channel) while another worker serves the agent it
//! waits for.

mod common;

use agentry::disp::ThreadPoolDispatcher;
use agentry::mchain::Mchain;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use common::{DEADLINE, recv};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

const ROUNDS: u64 = 50;

/// Doubles what it is asked; also echoes `Poke(n)` into a chain and a `std` channel.
struct Doubler {
    chain: Mchain,
    out: Sender<u64>,
}

struct Poke(u64);

impl Agent for Doubler {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Doubler, _: &mut Ctx<Doubler>, n: u64| n * 2)?;
        def.on(|d: &mut Doubler, _: &mut Ctx<Doubler>, Poke(n)| {
            d.chain.send(n);
            let _ = d.out.send(n);
        })?;
        Ok(())
    }
}

/// How the asker waits for the doubler inside its handler.
#[derive(Clone, Copy)]
enum WaitBy {
    Request,
    ChainReceive,
    StdChannel,
}

struct Asker {
    doubler: Mbox,
    wait_by: WaitBy,
    chain: Mchain,
    from_doubler: Arc<Mutex<Receiver<u64>>>,
    results: Sender<u64>,
}

struct Go(u64);

impl Agent for Asker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Asker, _: &mut Ctx<Asker>, Go(n)| {
            let got = match a.wait_by {
                WaitBy::Request => a
                    .doubler
                    .request::<u64, u64>(n, DEADLINE)
                    .expect("the doubler answers from another worker"),
                WaitBy::ChainReceive => {
                    a.doubler.send(Poke(n));
                    a.chain
                        .recv(DEADLINE)
                        .expect("the doubler fills the chain from another worker")
                        .downcast::<u64>()
                        .expect("a number")
                }
                WaitBy::StdChannel => {
                    a.doubler.send(Poke(n));
                    a.from_doubler
                        .lock()
                        .expect("receiver")
                        .recv_timeout(DEADLINE)
                        .expect("the doubler answers from another worker")
                }
            };
            let _ = a.results.send(got);
        })?;
        Ok(())
    }
}

/// Runs `ROUNDS` blocking waits of the asker for the doubler, both on a 2-thread pool.
fn rounds(affinity: bool, wait_by: WaitBy) -> Vec<u64> {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("pool")
        .threads(2)
        .affinity(affinity)
        .build(&h)
        .expect("pool");
    let chain = Mchain::unbounded();
    let (out_tx, out_rx) = mpsc::channel();
    let (results_tx, results) = mpsc::channel();
    let mut coop = h.new_coop();
    let doubler = coop.add_with(
        Doubler {
            chain: chain.clone(),
            out: out_tx,
        },
        &pool.binder(),
    );
    let asker = coop.add_with(
        Asker {
            doubler,
            wait_by,
            chain,
            from_doubler: Arc::new(Mutex::new(out_rx)),
            results: results_tx,
        },
        &pool.binder(),
    );
    h.register_coop(coop).expect("registered");
    let got = (1..=ROUNDS)
        .map(|n| {
            asker.send(Go(n));
            recv(&results)
        })
        .collect();
    h.stop();
    common::run_env(env);
    got
}

#[test]
fn with_affinity_a_request_or_chain_wait_is_served_by_another_worker() {
    let doubled: Vec<u64> = (1..=ROUNDS).map(|n| n * 2).collect();
    assert_eq!(rounds(true, WaitBy::Request), doubled);
    let same: Vec<u64> = (1..=ROUNDS).collect();
    assert_eq!(rounds(true, WaitBy::ChainReceive), same);
}

#[test]
fn without_affinity_any_blocking_wait_is_served_by_another_worker() {
    let same: Vec<u64> = (1..=ROUNDS).collect();
    assert_eq!(rounds(false, WaitBy::StdChannel), same);
    let doubled: Vec<u64> = (1..=ROUNDS).map(|n| n * 2).collect();
    assert_eq!(rounds(false, WaitBy::Request), doubled);
}

/// Round trips of the ping-pong; the first [`SETTLING`] may still move (the agents' start
/// demands come from the registering thread, so the first ones may run on either worker).
const PING_PONG_ROUNDS: u64 = 20_000;
const SETTLING: u64 = 10;

struct Ball(u64);

/// Bounces `Ball(n)` back to its peer; the pinger (the one with `done`) records the thread of
/// every round after the settling ones and reports them at the end.
struct Player {
    peer: Option<Mbox>,
    threads: HashSet<ThreadId>,
    done: Option<Sender<HashSet<ThreadId>>>,
}

struct Peer(Mbox);

impl Agent for Player {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Player, _: &mut Ctx<Player>, Peer(m)| p.peer = Some(m))?;
        def.on(|p: &mut Player, _: &mut Ctx<Player>, Ball(n)| {
            if n > SETTLING && p.done.is_some() {
                p.threads.insert(std::thread::current().id());
            }
            match &p.done {
                Some(done) if n == PING_PONG_ROUNDS => {
                    let _ = done.send(std::mem::take(&mut p.threads));
                }
                _ => p
                    .peer
                    .as_ref()
                    .expect("the peer is known before the first ball")
                    .send(Ball(n + u64::from(p.done.is_some()))),
            }
        })?;
        Ok(())
    }
}

/// Does nothing with what a plain thread keeps sending it: each poke wakes an idle worker,
/// which then searches for work (and would steal a stealable ready agent).
struct Noise;
struct Nudge;

impl Agent for Noise {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Noise, _: &mut Ctx<Noise>, Nudge| {})?;
        Ok(())
    }
}

#[test]
fn with_affinity_a_ping_pong_stays_on_one_worker_while_the_other_keeps_searching() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("pool")
        .threads(2)
        .build(&h)
        .expect("pool");
    let (done_tx, done) = mpsc::channel();
    let mut coop = h.new_coop();
    let player = |done| Player {
        peer: None,
        threads: HashSet::new(),
        done,
    };
    let pinger = coop.add_with(player(Some(done_tx)), &pool.binder());
    let ponger = coop.add_with(player(None), &pool.binder());
    let noise = coop.add_with(Noise, &pool.binder());
    h.register_coop(coop).expect("registered");
    pinger.send(Peer(ponger.clone()));
    ponger.send(Peer(pinger.clone()));
    let stop_noise = Arc::new(AtomicBool::new(false));
    let noisy = {
        let stop_noise = Arc::clone(&stop_noise);
        std::thread::spawn(move || {
            while !stop_noise.load(Ordering::Relaxed) {
                noise.send(Nudge);
                std::thread::sleep(Duration::from_micros(20));
            }
        })
    };
    ponger.send(Ball(1));
    let threads = recv(&done);
    stop_noise.store(true, Ordering::Relaxed);
    noisy.join().expect("noise thread");
    assert_eq!(
        threads.len(),
        1,
        "after settling, every round ran on one worker"
    );
    h.stop();
    common::run_env(env);
}
