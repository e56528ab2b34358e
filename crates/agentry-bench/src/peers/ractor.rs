//! The workloads on ractor 0.16 with its defaults (default features, unbounded mailboxes,
//! `Actor::spawn` of unnamed, unsupervised actors, `cast` to send), on tokio's
//! `current_thread` runtime or its default multi-thread runtime. Each actor's `Msg` enum
//! carries the workload's messages plus a `Handled` request for the untimed count.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, call};

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

/// Spawns an unnamed actor.
async fn spawn<A: Actor>(actor: A, args: A::Arguments) -> Result<ActorRef<A::Msg>, BenchError> {
    let (actor, _join) = Actor::spawn(None, actor, args)
        .await
        .map_err(peer_error("spawn an actor"))?;
    Ok(actor)
}

/// Casts `msg`, failing the run if the actor is gone.
fn cast<M: ractor::Message>(to: &ActorRef<M>, msg: M, countdown: &Countdown) {
    if to.cast(msg).is_err() {
        countdown.fail("a cast failed: the actor is gone");
    }
}

/// Sums what every actor of `actors` says it handled.
async fn handled<M: ractor::Message>(
    actors: &[ActorRef<M>],
    ask: fn(RpcReplyPort<u64>) -> M,
) -> Result<u64, BenchError> {
    let mut total = 0;
    for actor in actors {
        total += call!(actor, ask).map_err(peer_error("ask for the handled count"))?;
    }
    Ok(total)
}

// ---- ring ----

enum RingMsg {
    Token(u32),
    Next(ActorRef<RingMsg>),
    Handled(RpcReplyPort<u64>),
}

struct Member;

struct MemberState {
    next: Option<ActorRef<RingMsg>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Actor for Member {
    type Msg = RingMsg;
    type State = MemberState;
    type Arguments = MemberState;

    async fn pre_start(
        &self,
        _: ActorRef<RingMsg>,
        state: MemberState,
    ) -> Result<MemberState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<RingMsg>,
        msg: RingMsg,
        state: &mut MemberState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RingMsg::Token(left) => {
                state.handled += 1;
                if left <= 1 {
                    state.countdown.arrive();
                } else if let Some(next) = &state.next {
                    cast(next, RingMsg::Token(left - 1), &state.countdown);
                } else {
                    state.countdown.fail("a token reached an open ring");
                }
            }
            RingMsg::Next(next) => state.next = Some(next),
            RingMsg::Handled(reply) => reply.send(state.handled)?,
        }
        Ok(())
    }
}

async fn ring(n: u64, m: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(m);
    let mut members = Vec::with_capacity(n as usize);
    let mut next = None;
    for _ in 0..n {
        let state = MemberState {
            next: next.take(),
            handled: 0,
            countdown: Arc::clone(&countdown),
        };
        let member = spawn(Member, state).await?;
        next = Some(member.clone());
        members.push(member);
    }
    members.reverse();
    cast(
        &members[n as usize - 1],
        RingMsg::Next(members[0].clone()),
        &countdown,
    );
    countdown.start()?;
    let hops = u32::try_from(n).map_err(peer_error("ring size"))?;
    for j in 0..m {
        cast(
            &members[(j * n / m) as usize],
            RingMsg::Token(hops),
            &countdown,
        );
    }
    let elapsed = countdown.wait().await?;
    verify_eq(
        "tokens handled (N*M)",
        n * m,
        handled(&members, RingMsg::Handled).await?,
    )?;
    Ok(elapsed)
}

// ---- ttl ----

enum TtlMsg {
    Hop(u32),
    Handled(RpcReplyPort<u64>),
}

struct Object;

struct ObjectState {
    rng: XorShift,
    objects: Arc<OnceLock<Vec<ActorRef<TtlMsg>>>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Actor for Object {
    type Msg = TtlMsg;
    type State = ObjectState;
    type Arguments = ObjectState;

    async fn pre_start(
        &self,
        _: ActorRef<TtlMsg>,
        state: ObjectState,
    ) -> Result<ObjectState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<TtlMsg>,
        msg: TtlMsg,
        state: &mut ObjectState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TtlMsg::Hop(ttl) => {
                state.handled += 1;
                if ttl <= 1 {
                    state.countdown.arrive();
                } else if let Some(objects) = state.objects.get() {
                    let to = state.rng.below(objects.len() as u64) as usize;
                    cast(&objects[to], TtlMsg::Hop(ttl - 1), &state.countdown);
                } else {
                    state.countdown.fail("a hop arrived before the directory");
                }
            }
            TtlMsg::Handled(reply) => reply.send(state.handled)?,
        }
        Ok(())
    }
}

async fn ttl(params: TtlParams) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(params.messages);
    let directory = Arc::new(OnceLock::new());
    let mut objects = Vec::with_capacity(params.objects as usize);
    for k in 0..params.objects {
        let state = ObjectState {
            rng: XorShift::for_index(k),
            objects: Arc::clone(&directory),
            handled: 0,
            countdown: Arc::clone(&countdown),
        };
        objects.push(spawn(Object, state).await?);
    }
    directory
        .set(objects.clone())
        .map_err(|_| BenchError::Harness("the directory was set twice".to_owned()))?;
    countdown.start()?;
    for i in 0..params.messages {
        cast(
            &objects[(i % params.objects) as usize],
            TtlMsg::Hop(params.ttl),
            &countdown,
        );
    }
    let elapsed = countdown.wait().await?;
    verify_eq(
        "messages handled (P*TTL)",
        params.handled(),
        handled(&objects, TtlMsg::Handled).await?,
    )?;
    Ok(elapsed)
}

// ---- pingpong ----

enum PingerMsg {
    Pong,
    Handled(RpcReplyPort<u64>),
}

enum PongerMsg {
    Peer(ActorRef<PingerMsg>),
    Ping,
    Handled(RpcReplyPort<u64>),
}

struct Pinger;
struct Ponger;

struct PingerState {
    ponger: ActorRef<PongerMsg>,
    left: u64,
    handled: u64,
    countdown: Arc<Countdown>,
}

struct PongerState {
    pinger: Option<ActorRef<PingerMsg>>,
    handled: u64,
    countdown: Arc<Countdown>,
}

impl Actor for Pinger {
    type Msg = PingerMsg;
    type State = PingerState;
    type Arguments = PingerState;

    async fn pre_start(
        &self,
        _: ActorRef<PingerMsg>,
        state: PingerState,
    ) -> Result<PingerState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<PingerMsg>,
        msg: PingerMsg,
        state: &mut PingerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PingerMsg::Pong => {
                state.handled += 1;
                state.left -= 1;
                if state.left > 0 {
                    cast(&state.ponger, PongerMsg::Ping, &state.countdown);
                } else {
                    state.countdown.arrive();
                }
            }
            PingerMsg::Handled(reply) => reply.send(state.handled)?,
        }
        Ok(())
    }
}

impl Actor for Ponger {
    type Msg = PongerMsg;
    type State = PongerState;
    type Arguments = PongerState;

    async fn pre_start(
        &self,
        _: ActorRef<PongerMsg>,
        state: PongerState,
    ) -> Result<PongerState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<PongerMsg>,
        msg: PongerMsg,
        state: &mut PongerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PongerMsg::Peer(pinger) => state.pinger = Some(pinger),
            PongerMsg::Ping => {
                state.handled += 1;
                match &state.pinger {
                    Some(pinger) => cast(pinger, PingerMsg::Pong, &state.countdown),
                    None => state
                        .countdown
                        .fail("a ping arrived before the pinger's address"),
                }
            }
            PongerMsg::Handled(reply) => reply.send(state.handled)?,
        }
        Ok(())
    }
}

async fn pingpong(rounds: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let ponger = spawn(
        Ponger,
        PongerState {
            pinger: None,
            handled: 0,
            countdown: Arc::clone(&countdown),
        },
    )
    .await?;
    let pinger = spawn(
        Pinger,
        PingerState {
            ponger: ponger.clone(),
            left: rounds,
            handled: 0,
            countdown: Arc::clone(&countdown),
        },
    )
    .await?;
    cast(&ponger, PongerMsg::Peer(pinger.clone()), &countdown);
    countdown.start()?;
    cast(&ponger, PongerMsg::Ping, &countdown);
    let elapsed = countdown.wait().await?;
    verify_eq(
        "pongs handled",
        rounds,
        handled(&[pinger], PingerMsg::Handled).await?,
    )?;
    verify_eq(
        "pings handled",
        rounds,
        handled(&[ponger], PongerMsg::Handled).await?,
    )?;
    Ok(elapsed)
}

// ---- skynet ----

struct Sum(u64);

struct Node;

struct NodeState {
    depth: u32,
    num: u64,
    parent: Option<ActorRef<Sum>>,
    sum: u64,
    received: u32,
    countdown: Arc<Countdown>,
    total: Arc<AtomicU64>,
}

impl Actor for Node {
    type Msg = Sum;
    type State = NodeState;
    type Arguments = NodeState;

    async fn pre_start(
        &self,
        _: ActorRef<Sum>,
        state: NodeState,
    ) -> Result<NodeState, ActorProcessingErr> {
        Ok(state)
    }

    /// Leaves report and stop; inner nodes spawn their 10 children (after `pre_start`, so
    /// that the spawning parent only waits for each child's trivial `pre_start`).
    async fn post_start(
        &self,
        myself: ActorRef<Sum>,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        if state.depth == 0 {
            if let Some(parent) = &state.parent {
                cast(parent, Sum(state.num), &state.countdown);
            }
            myself.stop(None);
            return Ok(());
        }
        for i in 0..10 {
            let child = NodeState {
                depth: state.depth - 1,
                num: state.num * 10 + i,
                parent: Some(myself.clone()),
                sum: 0,
                received: 0,
                countdown: Arc::clone(&state.countdown),
                total: Arc::clone(&state.total),
            };
            Actor::spawn(None, Node, child).await?;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Sum>,
        Sum(v): Sum,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        state.sum += v;
        state.received += 1;
        if state.received < 10 {
            return Ok(());
        }
        match &state.parent {
            Some(parent) => cast(parent, Sum(state.sum), &state.countdown),
            None => {
                state.total.store(state.sum, Ordering::Relaxed);
                state.countdown.arrive();
            }
        }
        myself.stop(None);
        Ok(())
    }
}

async fn skynet(depth: u32) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let total = Arc::new(AtomicU64::new(0));
    let root = NodeState {
        depth,
        num: 0,
        parent: None,
        sum: 0,
        received: 0,
        countdown: Arc::clone(&countdown),
        total: Arc::clone(&total),
    };
    countdown.start()?;
    spawn(Node, root).await?;
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

struct Sink;

struct SinkState {
    expected: u64,
    count: u64,
    sum: u64,
    countdown: Arc<Countdown>,
    result: Arc<(AtomicU64, AtomicU64)>,
}

impl Actor for Sink {
    type Msg = Item;
    type State = SinkState;
    type Arguments = SinkState;

    async fn pre_start(
        &self,
        _: ActorRef<Item>,
        state: SinkState,
    ) -> Result<SinkState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<Item>,
        Item(v): Item,
        state: &mut SinkState,
    ) -> Result<(), ActorProcessingErr> {
        state.count += 1;
        state.sum += v;
        if state.count == state.expected {
            state.result.0.store(state.count, Ordering::Relaxed);
            state.result.1.store(state.sum, Ordering::Relaxed);
            state.countdown.arrive();
        }
        Ok(())
    }
}

async fn fan_in(senders: u64, per_sender: u64) -> Result<Duration, BenchError> {
    let countdown = Countdown::new(1);
    let result = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let sink = spawn(
        Sink,
        SinkState {
            expected: senders * per_sender,
            count: 0,
            sum: 0,
            countdown: Arc::clone(&countdown),
            result: Arc::clone(&result),
        },
    )
    .await?;
    drive_fan_in((senders, per_sender), &countdown, &result, || {
        let (sink, countdown) = (sink.clone(), Arc::clone(&countdown));
        move |v| cast(&sink, Item(v), &countdown)
    })
    .await
}
