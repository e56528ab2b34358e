//! The agents of the NATS part and the messages that cross the wire.

use agentry::{Agent, Ctx, Define, DefineError, MultiMbox};
use agentry_remote::{LossReason, RemoteEvent, RemoteMbox, RemoteReply, RemoteRequest, RequestId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// One message of a numbered stream (`n` grows per sender).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Seq {
    pub sender: u32,
    pub n: u64,
}
/// The wire name of [`Seq`].
pub const SEQ_NAME: &str = "soak.Seq";

/// A request: answered with `Sum(a + b)`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Add {
    pub a: u64,
    pub b: u64,
}
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Sum(pub u64);

/// The registry both gateways use.
///
/// # Errors
/// A name registered twice (a programming error).
pub fn registry() -> Result<agentry_remote::Registry, String> {
    let r = agentry_remote::Registry::new();
    r.register::<Seq>("soak.Seq", 1)
        .map_err(|e| e.to_string())?;
    r.register::<Add>("soak.Add", 1)
        .map_err(|e| e.to_string())?;
    r.register::<Sum>("soak.Sum", 1)
        .map_err(|e| e.to_string())?;
    Ok(r)
}

/// What the NATS part's agents saw (shared with the audit).
#[derive(Debug, Default)]
pub struct Seen {
    /// Stream messages received, and the last `n` per sender.
    pub received: u64,
    pub last: HashMap<u32, u64>,
    /// A message whose `n` was not above its sender's last (a duplicate or a reorder).
    pub out_of_order: u64,
    /// Numbers skipped (lost on the way, undetectably).
    pub gaps: u64,
    /// Requests served and replies the gateway accepted / refused.
    pub served: u64,
    pub replies_accepted: u64,
    pub replies_refused: u64,
    /// `send_request` ids waiting for their one `RemoteReply`, with the expected sum.
    pub pending: HashMap<RequestId, u64>,
    /// Async request outcomes by name; wrong sums; replies for no pending id.
    pub async_outcomes: crate::soak::tally::Tally,
    pub wrong_sums: u64,
    pub stray_replies: u64,
    /// `Lost` events per gateway (0: out, 1: in) by reason, and connection events.
    pub lost: [[u64; 3]; 2],
    /// Of the *out* gateway's `Lost` events: those of stream messages (`soak.Seq`).
    pub stream_lost: u64,
    pub connected_events: [u64; 2],
    pub disconnected_events: [u64; 2],
}

pub type SharedSeen = Arc<Mutex<Seen>>;

pub fn lock(seen: &SharedSeen) -> MutexGuard<'_, Seen> {
    seen.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Receives the stream; checks each sender's order.
pub struct Receiver(pub SharedSeen);

impl Agent for Receiver {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|r: &mut Receiver, _: &mut Ctx<Receiver>, m: Seq| {
            let mut s = lock(&r.0);
            s.received += 1;
            let last = s.last.get(&m.sender).copied();
            match last {
                Some(last) if m.n <= last => s.out_of_order += 1,
                _ => {
                    s.gaps += m.n - last.map_or(0, |l| l + 1);
                    s.last.insert(m.sender, m.n);
                }
            }
        })?;
        Ok(())
    }
}

/// Serves `Add` requests.
pub struct Calculator(pub SharedSeen);

impl Agent for Calculator {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |c: &mut Calculator, _: &mut Ctx<Calculator>, req: RemoteRequest<Add, Sum>| {
                let sum = Sum(req.query().a + req.query().b);
                let accepted = req.reply(sum).is_ok();
                let mut s = lock(&c.0);
                s.served += 1;
                if accepted {
                    s.replies_accepted += 1;
                } else {
                    s.replies_refused += 1;
                }
            },
        )?;
        Ok(())
    }
}

/// Asks the requester to send one request without blocking.
pub struct Kick(pub u64);

/// Sends requests with `send_request` and checks that each gets exactly one reply.
pub struct Requester {
    pub calc: RemoteMbox,
    pub seen: SharedSeen,
    pub timeout: Duration,
}

impl Agent for Requester {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |r: &mut Requester, ctx: &mut Ctx<Requester>, Kick(n): Kick| {
                let sent =
                    r.calc
                        .send_request::<Add, Sum>(Add { a: n, b: 1 }, r.timeout, ctx.mbox());
                let mut s = lock(&r.seen);
                match sent {
                    Ok(id) => {
                        s.pending.insert(id, n + 1);
                    }
                    Err(e) => s.async_outcomes.one(format!("refused at once: {e:?}")),
                }
            },
        )?
        .on(
            |r: &mut Requester, _: &mut Ctx<Requester>, reply: RemoteReply<Sum>| {
                let mut s = lock(&r.seen);
                let Some(expected) = s.pending.remove(&reply.id) else {
                    s.stray_replies += 1;
                    return;
                };
                match reply.result {
                    Ok(Sum(got)) => {
                        if got != expected {
                            s.wrong_sums += 1;
                        }
                        s.async_outcomes.one("reply");
                    }
                    Err(e) => s.async_outcomes.one(format!("{e:?}")),
                }
            },
        )?;
        Ok(())
    }
}

/// Counts a gateway's events (`gateway`: 0 out, 1 in).
pub struct EventLog {
    pub events: MultiMbox,
    pub gateway: usize,
    pub seen: SharedSeen,
}

/// The index of a loss reason in [`Seen::lost`].
pub fn loss_index(r: LossReason) -> usize {
    match r {
        LossReason::Overflow => 0,
        LossReason::InFlight => 1,
        _ => 2,
    }
}

impl Agent for EventLog {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let events = self.events.clone();
        def.from(&events).on(
            |l: &mut EventLog, _: &mut Ctx<EventLog>, e: Arc<RemoteEvent>| {
                let g = l.gateway;
                let mut s = lock(&l.seen);
                match &*e {
                    RemoteEvent::Lost {
                        reason, type_name, ..
                    } => {
                        s.lost[g][loss_index(*reason)] += 1;
                        if g == 0 && type_name.as_deref() == Some(SEQ_NAME) {
                            s.stream_lost += 1;
                        }
                    }
                    RemoteEvent::Connected => s.connected_events[g] += 1,
                    RemoteEvent::Disconnected => s.disconnected_events[g] += 1,
                    _ => {}
                }
            },
        )?;
        Ok(())
    }
}
