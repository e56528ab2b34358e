//! The workloads on kameo 0.22, on tokio's `current_thread` runtime or its default
//! multi-thread runtime: typed `Message` handlers, `tell(..).try_send()` to send, `ask` for
//! the untimed counts. Actors are spawned with unbounded mailboxes: kameo's default
//! `bounded(64)` parks a sender whose target is full, which deadlocks a `ttl` actor telling
//! itself, or a cycle of full mailboxes (see `Impl::notes`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kameo::Actor;
use kameo::actor::{ActorRef, Spawn};
use kameo::error::Infallible;
use kameo::mailbox;
use kameo::message::{Context, Message};

use super::{Countdown, drive_fan_in, peer_error, skynet_sum, tokio_runtime};
use crate::benches::ttl::TtlParams;
use crate::compare::{Runtime, Workload};
use crate::harness::{BenchError, verify_eq};
use crate::xorshift::XorShift;

/// Runs `workload` on `runtime`; the time of its measured part, after verifying it.
pub(crate) fn run(workload: Workload, runtime: Runtime) -> Result<Duration, BenchError> {
    tokio_runtime(runtime)?.block_on(async move {
        match workload {
            Workload::Ring { n, m } => ring(n, m).await,
            Workload::Ttl(params) => ttl(params).await,
            Workload::Pingpong { rounds } => pingpong(rounds).await,
            Workload::Skynet { depth } => skynet(depth).await,
            Workload::FanIn {
                senders,
                per_sender,
            } => fan_in(senders, per_sender).await,
        }
    })
}

/// Spawns `actor` with an unbounded mailbox.
fn spawn<A: Actor<Args = A>>(actor: A) -> ActorRef<A> {
    A::spawn_with_mailbox(actor, mailbox::unbounded())
}

/// Tells `msg` to `to`, failing the run if the actor is gone.
fn tell<A, M>(to: &ActorRef<A>, msg: M, countdown: &Countdown)
where
    A: Actor + Message<M>,
    M: Send + 'static,
{
    if to.tell(msg).try_send().is_err() {
        countdown.fail("a tell failed: the actor is gone");
    }
}

/// Asks an actor for the number of workload messages it handled.
struct Handled;

/// Sums what every actor of `actors` says it handled.
async fn handled<A>(actors: &[ActorRef<A>]) -> Result<u64, BenchError>
where
    A: Actor + Message<Handled, Reply = u64>,
{
    let mut total = 0;
    for actor in actors {
        total += actor
            .ask(Handled)
            .await
            .map_err(peer_error("ask for the handled count"))?;
    }
    Ok(total)
}

// ---- ring ----

struct Token(u32);
struct Next(ActorRef<Member>);

#[derive(Actor)]
struct Member {
    next: Option<ActorRef<Member>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Message<Token> for Member {
    type Reply = ();

    async fn handle(&mut self, Token(left): Token, _: &mut Context<Self, ()>) {
        self.handled += 1;
        if left <= 1 {
            self.countdown.arrive();
        } else if let Some(next) = &self.next {
            tell(next, Token(left - 1), &self.countdown);
        } else {
            self.countdown.fail("a token reached an open ring");
        }
    }
}

impl Message<Next> for Member {
    type Reply = ();

    async fn handle(&mut self, Next(next): Next, _: &mut Context<Self, ()>) {
        self.next = Some(next);
    }
}

impl Message<Handled> for Member {
    type Reply = u64;

    async fn handle(&mut self, _: Handled, _: &mut Context<Self, u64>) -> u64 {
        self.handled
    }
}

async fn ring(n: u64, m: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(m);
    let mut members = Vec::with_capacity(n as usize);
    let mut next = None;
    for _ in 0..n {
        let member = spawn(Member {
            next: next.take(),
            handled: 0,
            countdown: Arc::clone(&countdown),
        });
        next = Some(member.clone());
        members.push(member);
    }
    members.reverse();
    tell(
        &members[n as usize - 1],
        Next(members[0].clone()),
        &countdown,
    );
    for member in &members {
        member.wait_for_startup().await;
    }
    countdown.start()?;
    let hops = u32::try_from(n).map_err(peer_error("ring size"))?;
    for j in 0..m {
        tell(&members[(j * n / m) as usize], Token(hops), &countdown);
    }
    let elapsed = countdown.wait().await?;
    verify_eq("tokens handled (N*M)", n * m, handled(&members).await?)?;
    Ok(elapsed)
}

// ---- ttl ----

struct Hop(u32);

#[derive(Actor)]
struct Object {
    rng: XorShift,
    objects: Arc<OnceLock<Vec<ActorRef<Object>>>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Message<Hop> for Object {
    type Reply = ();

    async fn handle(&mut self, Hop(ttl): Hop, _: &mut Context<Self, ()>) {
        self.handled += 1;
        if ttl <= 1 {
            self.countdown.arrive();
        } else if let Some(objects) = self.objects.get() {
            let to = self.rng.below(objects.len() as u64) as usize;
            tell(&objects[to], Hop(ttl - 1), &self.countdown);
        } else {
            self.countdown.fail("a hop arrived before the directory");
        }
    }
}

impl Message<Handled> for Object {
    type Reply = u64;

    async fn handle(&mut self, _: Handled, _: &mut Context<Self, u64>) -> u64 {
        self.handled
    }
}

async fn ttl(params: TtlParams) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(params.messages);
    let directory = Arc::new(OnceLock::new());
    let objects: Vec<ActorRef<Object>> = (0..params.objects)
        .map(|k| {
            spawn(Object {
                rng: XorShift::for_index(k),
                objects: Arc::clone(&directory),
                handled: 0,
                countdown: Arc::clone(&countdown),
            })
        })
        .collect();
    directory
        .set(objects.clone())
        .map_err(|_| BenchError::Harness("the directory was set twice".to_owned()))?;
    for object in &objects {
        object.wait_for_startup().await;
    }
    countdown.start()?;
    for i in 0..params.messages {
        tell(
            &objects[(i % params.objects) as usize],
            Hop(params.ttl),
            &countdown,
        );
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

struct Ping;
struct Pong;
struct Peer(ActorRef<Pinger>);

#[derive(Actor)]
struct Pinger {
    ponger: ActorRef<Ponger>,
    left: u64,
    handled: u64,
    countdown: Arc<Countdown>,
}

#[derive(Actor)]
struct Ponger {
    pinger: Option<ActorRef<Pinger>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Message<Pong> for Pinger {
    type Reply = ();

    async fn handle(&mut self, _: Pong, _: &mut Context<Self, ()>) {
        self.handled += 1;
        self.left -= 1;
        if self.left > 0 {
            tell(&self.ponger, Ping, &self.countdown);
        } else {
            self.countdown.arrive();
        }
    }
}

impl Message<Handled> for Pinger {
    type Reply = u64;

    async fn handle(&mut self, _: Handled, _: &mut Context<Self, u64>) -> u64 {
        self.handled
    }
}

impl Message<Peer> for Ponger {
    type Reply = ();

    async fn handle(&mut self, Peer(pinger): Peer, _: &mut Context<Self, ()>) {
        self.pinger = Some(pinger);
    }
}

impl Message<Ping> for Ponger {
    type Reply = ();

    async fn handle(&mut self, _: Ping, _: &mut Context<Self, ()>) {
        self.handled += 1;
        match &self.pinger {
            Some(pinger) => tell(pinger, Pong, &self.countdown),
            None => self
                .countdown
                .fail("a ping arrived before the pinger's address"),
        }
    }
}

impl Message<Handled> for Ponger {
    type Reply = u64;

    async fn handle(&mut self, _: Handled, _: &mut Context<Self, u64>) -> u64 {
        self.handled
    }
}

async fn pingpong(rounds: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let ponger = spawn(Ponger {
        pinger: None,
        handled: 0,
        countdown: Arc::clone(&countdown),
    });
    let pinger = spawn(Pinger {
        ponger: ponger.clone(),
        left: rounds,
        handled: 0,
        countdown: Arc::clone(&countdown),
    });
    tell(&ponger, Peer(pinger.clone()), &countdown);
    ponger.wait_for_startup().await;
    pinger.wait_for_startup().await;
    countdown.start()?;
    tell(&ponger, Ping, &countdown);
    let elapsed = countdown.wait().await?;
    verify_eq("pongs handled", rounds, handled(&[pinger]).await?)?;
    verify_eq("pings handled", rounds, handled(&[ponger]).await?)?;
    Ok(elapsed)
}

// ---- skynet ----

struct Sum(u64);

struct Node {
    depth: u32,
    num: u64,
    parent: Option<ActorRef<Node>>,
    sum: u64,
    received: u32,
    countdown: Arc<Countdown>,
    total: Arc<AtomicU64>,
}

impl Actor for Node {
    type Args = Self;
    type Error = Infallible;

    /// Leaves report and stop; inner nodes spawn their 10 children.
    async fn on_start(node: Self, me: ActorRef<Self>) -> Result<Self, Infallible> {
        if node.depth == 0 {
            if let Some(parent) = &node.parent {
                tell(parent, Sum(node.num), &node.countdown);
            }
            if me.stop_gracefully().await.is_err() {
                node.countdown.fail("a leaf could not stop");
            }
            return Ok(node);
        }
        for i in 0..10 {
            spawn(Node {
                depth: node.depth - 1,
                num: node.num * 10 + i,
                parent: Some(me.clone()),
                sum: 0,
                received: 0,
                countdown: Arc::clone(&node.countdown),
                total: Arc::clone(&node.total),
            });
        }
        Ok(node)
    }
}

impl Message<Sum> for Node {
    type Reply = ();

    async fn handle(&mut self, Sum(v): Sum, ctx: &mut Context<Self, ()>) {
        self.sum += v;
        self.received += 1;
        if self.received < 10 {
            return;
        }
        match &self.parent {
            Some(parent) => tell(parent, Sum(self.sum), &self.countdown),
            None => {
                self.total.store(self.sum, Ordering::Relaxed);
                self.countdown.arrive();
            }
        }
        ctx.stop();
    }
}

async fn skynet(depth: u32) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let total = Arc::new(AtomicU64::new(0));
    countdown.start()?;
    let _root = spawn(Node {
        depth,
        num: 0,
        parent: None,
        sum: 0,
        received: 0,
        countdown: Arc::clone(&countdown),
        total: Arc::clone(&total),
    });
    let elapsed = countdown.wait().await?;
    verify_eq(
        "sum at the root",
        skynet_sum(depth),
        total.load(Ordering::Relaxed),
    )?;
    Ok(elapsed)
}

// ---- fan_in ----

struct Item(u64);

#[derive(Actor)]
struct Sink {
    expected: u64,
    count: u64,
    sum: u64,
    countdown: Arc<Countdown>,
    result: Arc<(AtomicU64, AtomicU64)>,
}

impl Message<Item> for Sink {
    type Reply = ();

    async fn handle(&mut self, Item(v): Item, _: &mut Context<Self, ()>) {
        self.count += 1;
        self.sum += v;
        if self.count == self.expected {
            self.result.0.store(self.count, Ordering::Relaxed);
            self.result.1.store(self.sum, Ordering::Relaxed);
            self.countdown.arrive();
        }
    }
}

async fn fan_in(senders: u64, per_sender: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let result = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let sink = spawn(Sink {
        expected: senders * per_sender,
        count: 0,
        sum: 0,
        countdown: Arc::clone(&countdown),
        result: Arc::clone(&result),
    });
    sink.wait_for_startup().await;
    drive_fan_in((senders, per_sender), &countdown, &result, || {
        let (sink, countdown) = (sink.clone(), Arc::clone(&countdown));
        move |v| tell(&sink, Item(v), &countdown)
    })
    .await
}
