//! The threads that churn the environment during a phase: a registrar (coops come and go,
//! children are registered from handlers, coops deregister themselves), senders (every kind
//! of message, to live agents and to agents that are leaving or gone) and a timer thread
//! (delayed and periodic messages, cancelled from threads and from handlers, dropped,
//! detached). Each returns what it did; each stops when `stop` is set.

use super::agent::{
    Ask, Boom, Burst, CancelTimer, GoAway, GoHome, News, OnlyDefault, Quit, Relay, SENDERS,
    SpawnChild, Tap, Tick, Work,
};
use super::ledger::Ledger;
use super::plan::{ChildOrder, CoopPlan, chance};
use crate::soak::tally::Tally;
use crate::xorshift::XorShift;
use agentry::{DeregReason, DeregisterError, EnvHandle, timer::TimerHandle};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Root coops alive at once, at most (the registrar deregisters beyond).
const MAX_LIVE_ROOTS: usize = 40;
/// Pause between two registrar actions.
const REGISTRAR_PACE: Duration = Duration::from_millis(2);
/// Sender actions between two 1 ms pauses (keeps queues from growing without bound).
const SENDER_BATCH: u32 = 24;
/// Timers scheduled and not yet cancelled, dropped or handed over, at most.
const MAX_TIMERS: usize = 48;
/// How long a request waits for its reply.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Registers and deregisters coops, from this thread and through handlers.
pub fn registrar(
    env: &EnvHandle,
    ledger: &Arc<Ledger>,
    mut rng: XorShift,
    stop: &AtomicBool,
) -> Tally {
    let mut t = Tally::default();
    let (topics, ticks) = (ledger.topics().len(), ledger.tick_topics().len());
    while !stop.load(Ordering::Relaxed) {
        let roll = rng.below(100);
        if roll < 55 && ledger.live_roots() < MAX_LIVE_ROOTS {
            ledger.register_root(&CoopPlan::random(&mut rng, topics, ticks));
        } else if roll < 85 {
            if let Some(id) = ledger.take_root(&mut rng) {
                let reason = if chance(&mut rng, 50) {
                    DeregReason::Normal
                } else {
                    DeregReason::User(1)
                };
                t.one(match env.deregister_coop(id, reason) {
                    Ok(()) => "deregistered by a thread",
                    Err(DeregisterError::NotFound(_)) => "deregistration: already gone",
                    Err(DeregisterError::AlreadyDeregistering(_)) => {
                        "deregistration: already leaving"
                    }
                    Err(_) => "deregistration: other error",
                });
            }
        } else if roll < 95 {
            if let Some(to) = ledger.pick(&mut rng) {
                let plan = CoopPlan::random(&mut rng, topics, ticks);
                to.send(SpawnChild(Box::new(ChildOrder { plan })));
                t.one("child coops asked of handlers");
            }
        } else if let Some(to) = ledger.pick(&mut rng) {
            to.send(Quit);
            t.one("Quit sent");
        }
        std::thread::sleep(REGISTRAR_PACE);
    }
    t
}

/// Sends every kind of message to random agents of the phase; `id` < [`SENDERS`] numbers
/// its `Work` for the per-sender FIFO check.
pub fn sender(ledger: &Arc<Ledger>, id: u8, mut rng: XorShift, stop: &AtomicBool) -> Tally {
    debug_assert!(usize::from(id) < SENDERS);
    let mut t = Tally::default();
    let mut seq = 0u64;
    let mut actions = 0u32;
    while !stop.load(Ordering::Relaxed) {
        actions += 1;
        if actions.is_multiple_of(SENDER_BATCH) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let Some(to) = ledger.pick(&mut rng) else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        match rng.below(1000) {
            0..400 => {
                for _ in 0..1 + rng.below(16) {
                    seq += 1;
                    to.send(Work { sender: id, seq });
                }
            }
            400..550 => {
                for _ in 0..1 + rng.below(8) {
                    let n = rng.next_u64();
                    if chance(&mut rng, 50) {
                        to.send(Burst(n));
                    } else if let Err(e) = to.try_send(Burst(n)) {
                        t.one(format!("try_send refused: {}", send_error_kind(&e)));
                    }
                }
            }
            550..600 => {
                seq += 1;
                if let Err(e) = to.try_send(Work { sender: id, seq }) {
                    t.one(format!("try_send refused: {}", send_error_kind(&e)));
                }
            }
            600..650 => to.send(OnlyDefault),
            650..680 => to.send(GoAway),
            680..710 => to.send(GoHome),
            710..720 => to.send(Boom),
            720..790 => to.send(Tap(chance(&mut rng, 2))),
            790..880 => {
                let topics = ledger.topics();
                topics[rng.below(topics.len() as u64) as usize].send(News(rng.next_u64()));
                t.one("News published");
            }
            880..920 => {
                let n = rng.below(1 << 40);
                to.probe.sent.fetch_add(1, Ordering::SeqCst);
                match to.mbox.request::<Ask, u64>(Ask(n), REQUEST_TIMEOUT) {
                    Ok(r) if r == n + 1 => t.one("request: reply"),
                    Ok(_) => t.one("request: WRONG reply"),
                    Err(e) => t.one(format!("request: {e:?}")),
                }
            }
            _ => {
                if let Some(next) = ledger.pick(&mut rng) {
                    let n = 1 + rng.below(5) as u32;
                    to.send(Relay { to: next, n });
                }
            }
        }
    }
    t
}

fn send_error_kind<M>(e: &agentry::SendError<M>) -> &'static str {
    match e {
        agentry::SendError::AgentGone(_) => "AgentGone",
        agentry::SendError::Overloaded(_) => "Overloaded",
        _ => "other",
    }
}

/// A scheduled timer, and the flag set once its `cancel()` has returned.
struct Scheduled {
    handle: TimerHandle,
    cancelled: Arc<AtomicBool>,
}

/// Schedules delayed and periodic `Tick`s to the tick topics and ends them every way there
/// is; at the end cancels what is left.
pub fn timers(
    env: &EnvHandle,
    ledger: &Arc<Ledger>,
    mut rng: XorShift,
    stop: &AtomicBool,
) -> Tally {
    let mut t = Tally::default();
    let mut live: Vec<Scheduled> = Vec::new();
    let ms = |n: u64| Duration::from_millis(n);
    while !stop.load(Ordering::Relaxed) {
        let roll = rng.below(100);
        if roll < 45 && live.len() < MAX_TIMERS {
            let topics = ledger.tick_topics();
            let topic = &topics[rng.below(topics.len() as u64) as usize];
            let cancelled = Arc::new(AtomicBool::new(false));
            let tick = Tick(Arc::clone(&cancelled));
            if chance(&mut rng, 30) {
                let (delay, period) = (ms(rng.below(20)), ms(2 + rng.below(18)));
                let handle = env.send_periodic(topic, delay, period, tick);
                live.push(Scheduled { handle, cancelled });
                t.one("timers: periodic scheduled");
            } else {
                let handle = env.send_delayed(topic, ms(rng.below(30)), tick);
                t.one("timers: one-shot scheduled");
                if chance(&mut rng, 25) {
                    handle.detach();
                    t.one("timers: one-shot detached");
                } else {
                    live.push(Scheduled { handle, cancelled });
                }
            }
        } else if !live.is_empty() && roll < 95 {
            let i = rng.below(live.len() as u64) as usize;
            let s = live.swap_remove(i);
            if roll < 75 {
                s.handle.cancel();
                s.cancelled.store(true, Ordering::SeqCst);
                t.one("timers: cancelled by a thread");
            } else if roll < 82 {
                drop(s.handle);
                t.one("timers: handle dropped");
            } else if let Some(to) = ledger.pick(&mut rng) {
                to.send(CancelTimer(s.handle, s.cancelled));
                t.one("timers: handed to a handler to cancel");
            }
        }
        std::thread::sleep(ms(2));
    }
    for s in live {
        s.handle.cancel();
        s.cancelled.store(true, Ordering::SeqCst);
        t.one("timers: cancelled by a thread");
    }
    t
}
