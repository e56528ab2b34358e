//! The workloads on actix 0.13. Single-thread: every actor on the `System`'s arbiter.
//! Multi-thread: 2 `Arbiter`s (actix has no multi-threaded executor; an actor lives on one
//! arbiter thread), actors spread over them — contiguous blocks of a ring or of the ttl
//! objects, one of each pair, alternating children in the skynet tree. Messages go with
//! `do_send`, which queues past the default mailbox capacity of 16 (see `Impl::notes`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix::prelude::*;

use super::{Countdown, drive_fan_in, peer_error, skynet_sum};
use crate::benches::ttl::TtlParams;
use crate::compare::{Runtime, Workload};
use crate::harness::{BenchError, verify_eq};
use crate::xorshift::XorShift;

/// Runs `workload` on `runtime`; the time of its measured part, after verifying it.
pub(crate) fn run(workload: Workload, runtime: Runtime) -> Result<Duration, BenchError> {
    let system = System::new();
    system.block_on(async move {
        let arbiters = match runtime {
            Runtime::Single => Vec::new(),
            Runtime::Multi => (0..runtime.threads()).map(|_| Arbiter::new()).collect(),
        };
        let place = Place(arbiters.iter().map(Arbiter::handle).collect());
        let result = match workload {
            Workload::Ring { n, m } => ring(&place, n, m).await,
            Workload::Ttl(params) => ttl(&place, params).await,
            Workload::Pingpong { rounds } => pingpong(&place, rounds).await,
            Workload::Skynet { depth } => skynet(Arc::new(place), depth).await,
            Workload::FanIn {
                senders,
                per_sender,
            } => fan_in(&place, senders, per_sender).await,
        };
        for arbiter in arbiters {
            arbiter.stop();
            // The arbiter thread ends once its actors are dropped; a panic there was reported.
            let _ = arbiter.join();
        }
        result
    })
}

/// Where new actors start: the current arbiter (single-thread), or one of the arbiters.
struct Place(Vec<ArbiterHandle>);

impl Place {
    /// Starts `actor` on slot `slot` of `slots` (contiguous blocks over the arbiters).
    fn start<A>(&self, slot: u64, slots: u64, actor: A) -> Addr<A>
    where
        A: Actor<Context = Context<A>> + Send,
    {
        if self.0.is_empty() {
            return actor.start();
        }
        let arbiter = (slot * self.0.len() as u64 / slots.max(1)) as usize;
        A::start_in_arbiter(&self.0[arbiter], move |_| actor)
    }
}

/// Asks every actor in `addrs` how many messages it handled; the total.
async fn handled<A>(addrs: &[Addr<A>]) -> Result<u64, BenchError>
where
    A: Actor<Context = Context<A>> + Handler<Handled>,
{
    let mut total = 0;
    for addr in addrs {
        total += addr
            .send(Handled)
            .await
            .map_err(peer_error("ask for the handled count"))?;
    }
    Ok(total)
}

/// Asks an actor for the number of workload messages it handled.
#[derive(Message)]
#[rtype(result = "u64")]
struct Handled;

// ---- ring ----

#[derive(Message)]
#[rtype(result = "()")]
struct Token(u32);

#[derive(Message)]
#[rtype(result = "()")]
struct Next(Addr<Member>);

struct Member {
    next: Option<Addr<Member>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Actor for Member {
    type Context = Context<Self>;
}

impl Handler<Token> for Member {
    type Result = ();

    fn handle(&mut self, Token(left): Token, _: &mut Context<Self>) {
        self.handled += 1;
        if left > 1 {
            match &self.next {
                Some(next) => next.do_send(Token(left - 1)),
                None => self.countdown.fail("a token reached an open ring"),
            }
        } else {
            self.countdown.arrive();
        }
    }
}

impl Handler<Next> for Member {
    type Result = ();

    fn handle(&mut self, Next(next): Next, _: &mut Context<Self>) {
        self.next = Some(next);
    }
}

impl Handler<Handled> for Member {
    type Result = u64;

    fn handle(&mut self, _: Handled, _: &mut Context<Self>) -> u64 {
        self.handled
    }
}

async fn ring(place: &Place, n: u64, m: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(m);
    let mut members = Vec::with_capacity(n as usize);
    let mut next = None;
    for i in (0..n).rev() {
        let member = Member {
            next: next.take(),
            handled: 0,
            countdown: Arc::clone(&countdown),
        };
        let addr = place.start(i, n, member);
        next = Some(addr.clone());
        members.push(addr);
    }
    members.reverse();
    members[n as usize - 1].do_send(Next(members[0].clone()));
    countdown.start()?;
    let hops = u32::try_from(n).map_err(peer_error("ring size"))?;
    for j in 0..m {
        members[(j * n / m) as usize].do_send(Token(hops));
    }
    let elapsed = countdown.wait().await?;
    verify_eq("tokens handled (N*M)", n * m, handled(&members).await?)?;
    Ok(elapsed)
}

// ---- ttl ----

#[derive(Message)]
#[rtype(result = "()")]
struct Hop(u32);

struct Object {
    rng: XorShift,
    objects: Arc<OnceLock<Vec<Addr<Object>>>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Actor for Object {
    type Context = Context<Self>;
}

impl Handler<Hop> for Object {
    type Result = ();

    fn handle(&mut self, Hop(ttl): Hop, _: &mut Context<Self>) {
        self.handled += 1;
        if ttl <= 1 {
            self.countdown.arrive();
            return;
        }
        match self.objects.get() {
            Some(objects) => {
                let to = self.rng.below(objects.len() as u64) as usize;
                objects[to].do_send(Hop(ttl - 1));
            }
            None => self.countdown.fail("a hop arrived before the directory"),
        }
    }
}

impl Handler<Handled> for Object {
    type Result = u64;

    fn handle(&mut self, _: Handled, _: &mut Context<Self>) -> u64 {
        self.handled
    }
}

async fn ttl(place: &Place, params: TtlParams) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(params.messages);
    let directory = Arc::new(OnceLock::new());
    let objects: Vec<Addr<Object>> = (0..params.objects)
        .map(|k| {
            let object = Object {
                rng: XorShift::for_index(k),
                objects: Arc::clone(&directory),
                handled: 0,
                countdown: Arc::clone(&countdown),
            };
            place.start(k, params.objects, object)
        })
        .collect();
    directory
        .set(objects.clone())
        .map_err(|_| BenchError::Harness("the directory was set twice".to_owned()))?;
    countdown.start()?;
    for i in 0..params.messages {
        objects[(i % params.objects) as usize].do_send(Hop(params.ttl));
    }
    let elapsed = countdown.wait().await?;
    verify_eq(
        "messages handled (P*TTL)",
        params.handled(),
        handled(&objects).await?,
    )?;
    Ok(elapsed)
}

// ---- pingpong ----

#[derive(Message)]
#[rtype(result = "()")]
struct Ping;

#[derive(Message)]
#[rtype(result = "()")]
struct Pong;

#[derive(Message)]
#[rtype(result = "()")]
struct Peer(Addr<Pinger>);

struct Pinger {
    ponger: Addr<Ponger>,
    left: u64,
    handled: u64,
    countdown: Arc<Countdown>,
}

struct Ponger {
    pinger: Option<Addr<Pinger>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Actor for Pinger {
    type Context = Context<Self>;
}

impl Actor for Ponger {
    type Context = Context<Self>;
}

impl Handler<Pong> for Pinger {
    type Result = ();

    fn handle(&mut self, _: Pong, _: &mut Context<Self>) {
        self.handled += 1;
        self.left -= 1;
        if self.left > 0 {
            self.ponger.do_send(Ping);
        } else {
            self.countdown.arrive();
        }
    }
}

impl Handler<Handled> for Pinger {
    type Result = u64;

    fn handle(&mut self, _: Handled, _: &mut Context<Self>) -> u64 {
        self.handled
    }
}

impl Handler<Peer> for Ponger {
    type Result = ();

    fn handle(&mut self, Peer(pinger): Peer, _: &mut Context<Self>) {
        self.pinger = Some(pinger);
    }
}

impl Handler<Ping> for Ponger {
    type Result = ();

    fn handle(&mut self, _: Ping, _: &mut Context<Self>) {
        self.handled += 1;
        match &self.pinger {
            Some(pinger) => pinger.do_send(Pong),
            None => self
                .countdown
                .fail("a ping arrived before the pinger's address"),
        }
    }
}

impl Handler<Handled> for Ponger {
    type Result = u64;

    fn handle(&mut self, _: Handled, _: &mut Context<Self>) -> u64 {
        self.handled
    }
}

async fn pingpong(place: &Place, rounds: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let ponger = place.start(
        1,
        2,
        Ponger {
            pinger: None,
            handled: 0,
            countdown: Arc::clone(&countdown),
        },
    );
    let pinger = place.start(
        0,
        2,
        Pinger {
            ponger: ponger.clone(),
            left: rounds,
            handled: 0,
            countdown: Arc::clone(&countdown),
        },
    );
    ponger.do_send(Peer(pinger.clone()));
    countdown.start()?;
    ponger.do_send(Ping);
    let elapsed = countdown.wait().await?;
    verify_eq("pongs handled", rounds, handled(&[pinger]).await?)?;
    verify_eq("pings handled", rounds, handled(&[ponger]).await?)?;
    Ok(elapsed)
}

// ---- skynet ----

#[derive(Message)]
#[rtype(result = "()")]
struct Sum(u64);

struct Node {
    depth: u32,
    num: u64,
    parent: Option<Addr<Node>>,
    /// The node's own address, held until its sum is complete: actix stops an actor once its
    /// last `Addr` is dropped, and the last child dropping its address could race the child's
    /// `Sum` still in the mailbox — the run then hung (seen on two arbiters).
    keep_alive: Option<Addr<Node>>,
    sum: u64,
    received: u32,
    place: Arc<Place>,
    countdown: Arc<Countdown>,
    total: Arc<AtomicU64>,
}

impl Actor for Node {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.depth == 0 {
            if let Some(parent) = &self.parent {
                parent.do_send(Sum(self.num));
            }
            ctx.stop();
            return;
        }
        self.keep_alive = Some(ctx.address());
        for i in 0..10 {
            let num = self.num * 10 + i;
            let child = Node {
                depth: self.depth - 1,
                num,
                parent: Some(ctx.address()),
                keep_alive: None,
                sum: 0,
                received: 0,
                place: Arc::clone(&self.place),
                countdown: Arc::clone(&self.countdown),
                total: Arc::clone(&self.total),
            };
            // Alternate children over the arbiters: `num % 2` of 2 slots.
            self.place.start(num % 2, 2, child);
        }
    }
}

impl Handler<Sum> for Node {
    type Result = ();

    fn handle(&mut self, Sum(v): Sum, ctx: &mut Context<Self>) {
        self.sum += v;
        self.received += 1;
        if self.received < 10 {
            return;
        }
        match &self.parent {
            Some(parent) => parent.do_send(Sum(self.sum)),
            None => {
                self.total.store(self.sum, Ordering::Relaxed);
                self.countdown.arrive();
            }
        }
        self.keep_alive = None;
        ctx.stop();
    }
}

async fn skynet(place: Arc<Place>, depth: u32) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let total = Arc::new(AtomicU64::new(0));
    let root = Node {
        depth,
        num: 0,
        parent: None,
        keep_alive: None,
        sum: 0,
        received: 0,
        place: Arc::clone(&place),
        countdown: Arc::clone(&countdown),
        total: Arc::clone(&total),
    };
    countdown.start()?;
    place.start(0, 1, root);
    let elapsed = countdown.wait().await?;
    verify_eq(
        "sum at the root",
        skynet_sum(depth),
        total.load(Ordering::Relaxed),
    )?;
    Ok(elapsed)
}

// ---- fan_in ----

#[derive(Message)]
#[rtype(result = "()")]
struct Item(u64);

struct Sink {
    expected: u64,
    count: u64,
    sum: u64,
    countdown: Arc<Countdown>,
    result: Arc<(AtomicU64, AtomicU64)>,
}

impl Actor for Sink {
    type Context = Context<Self>;
}

impl Handler<Item> for Sink {
    type Result = ();

    fn handle(&mut self, Item(v): Item, _: &mut Context<Self>) {
        self.count += 1;
        self.sum += v;
        if self.count == self.expected {
            self.result.0.store(self.count, Ordering::Relaxed);
            self.result.1.store(self.sum, Ordering::Relaxed);
            self.countdown.arrive();
        }
    }
}

async fn fan_in(place: &Place, senders: u64, per_sender: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let result = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let sink = place.start(
        0,
        1,
        Sink {
            expected: senders * per_sender,
            count: 0,
            sum: 0,
            countdown: Arc::clone(&countdown),
            result: Arc::clone(&result),
        },
    );
    drive_fan_in((senders, per_sender), &countdown, &result, || {
        let sink = sink.clone();
        move |v| sink.do_send(Item(v))
    })
    .await
}
