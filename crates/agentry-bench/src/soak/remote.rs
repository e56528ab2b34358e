//! The NATS part: two gateways of one environment on a private nats-server — *out* sends a
//! numbered stream and requests (blocking ones from a thread, `send_request` ones from an
//! agent), *in* delivers the stream to a receiver and serves the requests — while the
//! server is killed by pid and restarted on the same port once per phase.
//!
//! Only what `docs/SEMANTICS.md` §19 promises is checked, at each phase end once both
//! gateways are connected again and nothing is in flight:
//! - every envelope a gateway accepted is sent, or counted in exactly one loss counter, or
//!   still buffered: `accepted == sent + overflow_dropped + lost_in_flight +
//!   dropped_on_close + buffered` (for *out*: stream sends and requests; for *in*: replies);
//! - every such loss is published as one `RemoteEvent::Lost` of its reason;
//! - a send refused with `BufferFull` is counted in `overflow_rejected`;
//! - one sender's messages reach the subscriber in send order, at most once (each `n`
//!   above the last one received);
//! - `delivered` (one per route) is what the receiver's agent took, `requests_served` what
//!   the calculator took;
//! - every request ends in exactly one outcome (each `send_request` id gets one
//!   `RemoteReply`), and every reply is the right sum.
//!
//! Losses §19 calls undetectable (bytes in the client's or kernel's buffers when the server
//! dies, messages published while the subscriber had not re-subscribed) are allowed and
//! reported: `accepted stream sends − received − counted losses`.

mod agents;

use crate::soak::check::Checks;
use crate::soak::tally::Tally;
use crate::soak::{Part, stream_rng, wait_until};
use crate::workloads::nats_server::NatsServer;
use agentry::{AgentStats, Env, EnvHandle, Mbox};
use agentry_remote::{Gateway, Overflow, RemoteMbox, RemoteStats, RequestError, SendError};
use agents::{
    Add, Calculator, EventLog, Kick, Receiver, Requester, Seen, Seq, SharedSeen, Sum, lock,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The *out* gateway's buffer: small, so a restart overflows it (policy `DropOldest`).
const OUT_CAPACITY: usize = 512;
/// How long a request waits for its reply.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the phase end waits for reconnection, flushes and the last replies.
const SETTLE: Duration = Duration::from_secs(20);

/// What the soak's threads sent and were told (shared by the drivers, read by the audit).
#[derive(Debug, Default)]
struct Sent {
    /// Stream sends the *out* gateway accepted, and those it refused by error.
    stream_ok: u64,
    stream_buffer_full: u64,
    /// Blocking requests whose envelope the gateway accepted (every outcome but a refusal
    /// at the call), and outcomes by name.
    blocking_enqueued: u64,
    blocking: Tally,
    wrong_sums: u64,
    /// `Kick`s sent to the requester agent.
    kicks: u64,
}

/// The NATS part.
pub struct RemoteSoak {
    env: Option<Env>,
    handle: EnvHandle,
    server: Arc<Mutex<NatsServer>>,
    out: Gateway,
    inn: Gateway,
    stream: RemoteMbox,
    calc: RemoteMbox,
    receiver: Mbox,
    calculator: Mbox,
    requester: Mbox,
    seen: SharedSeen,
    sent: Arc<Mutex<Sent>>,
    stop: Arc<AtomicBool>,
    drivers: Vec<JoinHandle<Tally>>,
    phase_len: Duration,
    /// The last stream number sent (numbers continue across phases: the receiver checks one
    /// order for the whole run).
    last_n: Arc<AtomicU64>,
    /// The run's counts at the last phase end (each phase reports its own share).
    reported: Tally,
}

fn gateway(
    env: &EnvHandle,
    url: &str,
    events: &agentry::MultiMbox,
    out: bool,
) -> Result<Gateway, String> {
    let mut b = Gateway::builder(&agents::registry()?);
    b.namespace("soak")
        .events(events)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200));
    if out {
        b.outbound_capacity(OUT_CAPACITY)
            .overflow(Overflow::DropOldest);
    }
    b.connect_nats(env, url)
        .map_err(|e| format!("gateway: {e}"))
}

impl RemoteSoak {
    /// Starts nats-server, the environment, both gateways and the agents.
    ///
    /// # Errors
    /// nats-server is not installed or does not start; a gateway does not connect.
    pub fn new(phase_len: Duration) -> Result<Self, String> {
        let binary = NatsServer::binary().ok_or(
            "nats-server is not installed (apt-get install nats-server, or leave nats out of --parts)",
        )?;
        let server = NatsServer::start(binary)?;
        let env = Env::builder()
            .autoshutdown(false)
            .build()
            .map_err(|e| format!("nats environment: {e}"))?;
        let h = env.handle().clone();
        let seen = SharedSeen::default();
        let events = [h.create_mbox(), h.create_mbox()];
        for (g, ev) in events.iter().enumerate() {
            let log = EventLog {
                events: ev.clone(),
                gateway: g,
                seen: Arc::clone(&seen),
            };
            register(&h, log)?;
        }
        let out = gateway(&h, server.url(), &events[0], true)?;
        let inn = gateway(&h, server.url(), &events[1], false)?;
        let s = Arc::clone(&seen);
        let receiver = register(&h, Receiver(s))?;
        let s = Arc::clone(&seen);
        let calculator = register(&h, Calculator(s))?;
        inn.subscribe::<Seq>("soak.stream", &receiver)
            .map_err(|e| format!("subscribe: {e}"))?;
        inn.serve::<Add, Sum>("soak.calc", &calculator)
            .map_err(|e| format!("serve: {e}"))?;
        let calc = out.mbox("soak.calc").map_err(|e| e.to_string())?;
        let stream = out.mbox("soak.stream").map_err(|e| e.to_string())?;
        let requester = Requester {
            calc: calc.clone(),
            seen: Arc::clone(&seen),
            timeout: REQUEST_TIMEOUT,
        };
        let requester = register(&h, requester)?;
        inn.flush(SETTLE).map_err(|e| format!("flush: {e}"))?;
        Ok(RemoteSoak {
            env: Some(env),
            handle: h,
            server: Arc::new(Mutex::new(server)),
            out,
            inn,
            stream,
            calc,
            receiver,
            calculator,
            requester,
            seen,
            sent: Arc::default(),
            stop: Arc::new(AtomicBool::new(false)),
            drivers: Vec::new(),
            phase_len,
            last_n: Arc::default(),
            reported: Tally::default(),
        })
    }
}

/// Registers `agent` alone in a coop.
fn register<A: agentry::Agent>(h: &EnvHandle, agent: A) -> Result<Mbox, String> {
    h.register_agent(agent).map_err(|e| format!("agent: {e}"))
}

fn lock_sent(s: &Mutex<Sent>) -> std::sync::MutexGuard<'_, Sent> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sends the numbered stream: about one message a millisecond, sometimes a burst.
fn stream_sender(
    stream: &RemoteMbox,
    sent: &Mutex<Sent>,
    mut rng: crate::xorshift::XorShift,
    stop: &AtomicBool,
    first: u64,
) -> u64 {
    let mut n = first;
    while !stop.load(Ordering::Relaxed) {
        let burst = if rng.below(100) < 5 { 50 } else { 1 };
        for _ in 0..burst {
            n += 1;
            let r = stream.send(Seq { sender: 0, n });
            let mut s = lock_sent(sent);
            match r {
                Ok(()) => s.stream_ok += 1,
                Err(SendError::BufferFull(_)) => s.stream_buffer_full += 1,
                Err(e) => s.blocking.one(format!("stream send refused: {e:?}")),
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    n
}

/// Blocking requests from a plain thread.
fn blocking_requester(
    calc: &RemoteMbox,
    sent: &Mutex<Sent>,
    mut rng: crate::xorshift::XorShift,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        let (a, b) = (rng.below(1 << 30), rng.below(1 << 30));
        let r = calc.request::<Add, Sum>(Add { a, b }, REQUEST_TIMEOUT);
        let mut s = lock_sent(sent);
        // Refused at the call: the envelope never entered the buffer.
        let refused = matches!(
            r,
            Err(RequestError::Closed
                | RequestError::NotRegistered(_)
                | RequestError::Encode(_)
                | RequestError::Oversized { .. })
        );
        if !refused {
            s.blocking_enqueued += 1;
        }
        match r {
            Ok(Sum(sum)) if sum == a + b => s.blocking.one("reply"),
            Ok(_) => {
                s.wrong_sums += 1;
                s.blocking.one("WRONG reply");
            }
            Err(e) => s.blocking.one(format!("{e:?}")),
        }
        drop(s);
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kills the server once, at a random moment of the phase, and restarts it on its port.
fn restarter(
    server: &Mutex<NatsServer>,
    phase_len: Duration,
    mut rng: crate::xorshift::XorShift,
    stop: &AtomicBool,
) -> Tally {
    let mut t = Tally::default();
    let sleep_until = |d: Duration| {
        let end = std::time::Instant::now() + d;
        while std::time::Instant::now() < end && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let at = phase_len.mul_f64(0.2 + rng.below(40) as f64 / 100.0);
    sleep_until(at);
    if stop.load(Ordering::Relaxed) {
        return t;
    }
    let mut s = server
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    s.kill();
    t.one("nats-server killed");
    drop(s);
    sleep_until(Duration::from_millis(200 + rng.below(1300)));
    let mut s = server
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match s.restart() {
        Ok(()) => t.one("nats-server restarted"),
        Err(e) => t.one(format!("nats-server restart FAILED: {e}")),
    }
    t
}

impl Part for RemoteSoak {
    fn name(&self) -> &'static str {
        "nats"
    }

    fn start_phase(&mut self, seed: u64, phase: u32) {
        self.stop.store(false, Ordering::SeqCst);
        let spawn = |name: &str, f: Box<dyn FnOnce() -> Tally + Send>| {
            std::thread::Builder::new()
                .name(format!("soak-nats-{name}"))
                .spawn(f)
                .expect("invariant: the soak can start its driver threads")
        };
        let (stream, sent, stop) = (
            self.stream.clone(),
            Arc::clone(&self.sent),
            Arc::clone(&self.stop),
        );
        let rng = stream_rng(seed, phase, 30);
        let last_n = Arc::clone(&self.last_n);
        self.drivers.push(spawn(
            "stream",
            Box::new(move || {
                let first = last_n.load(Ordering::SeqCst);
                last_n.store(
                    stream_sender(&stream, &sent, rng, &stop, first),
                    Ordering::SeqCst,
                );
                Tally::default()
            }),
        ));
        let (calc, sent, stop) = (
            self.calc.clone(),
            Arc::clone(&self.sent),
            Arc::clone(&self.stop),
        );
        let rng = stream_rng(seed, phase, 31);
        self.drivers.push(spawn(
            "requests",
            Box::new(move || {
                blocking_requester(&calc, &sent, rng, &stop);
                Tally::default()
            }),
        ));
        let (requester, sent, stop) = (
            self.requester.clone(),
            Arc::clone(&self.sent),
            Arc::clone(&self.stop),
        );
        self.drivers.push(spawn(
            "kicks",
            Box::new(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    lock_sent(&sent).kicks += 1;
                    requester.send(Kick(n));
                    std::thread::sleep(Duration::from_millis(3));
                }
                Tally::default()
            }),
        ));
        let (server, stop, len) = (
            Arc::clone(&self.server),
            Arc::clone(&self.stop),
            self.phase_len,
        );
        let rng = stream_rng(seed, phase, 32);
        self.drivers.push(spawn(
            "restarts",
            Box::new(move || restarter(&server, len, rng, &stop)),
        ));
    }

    fn end_phase(&mut self) -> (Tally, Checks) {
        let mut t = Tally::default();
        let mut checks = Checks::default();
        self.stop.store(true, Ordering::SeqCst);
        let mut panicked = 0;
        for d in self.drivers.drain(..) {
            match d.join() {
                Ok(x) => t.merge(&x),
                Err(_) => panicked += 1,
            }
        }
        checks.eq("nats", "driver threads that panicked == 0", panicked, 0);
        {
            let mut s = self
                .server
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !s.is_running()
                && let Err(e) = s.restart()
            {
                t.one(format!("nats-server restart FAILED: {e}"));
            }
        }
        let connected = self.out.wait_connected(SETTLE) && self.inn.wait_connected(SETTLE);
        let flushed = self.out.flush(SETTLE).is_ok() && self.inn.flush(SETTLE).is_ok();
        if !(connected && flushed) {
            t.one("phase end: a gateway did not reconnect or flush in time");
        }
        // The last requests time out at the latest; then deliveries, replies and events
        // settle.
        let settled = wait_until(SETTLE, || self.settled());
        if !settled {
            t.one("phase end: remote counters did not settle in time");
        }
        self.audit(&mut checks, &mut t);
        (t, checks)
    }

    fn finish(&mut self) -> Checks {
        if let Some(env) = self.env.take() {
            self.handle.stop();
            env.run();
        }
        Checks::default()
    }
}

/// Every fate of a message, as the agent counted it.
fn accounted(s: &AgentStats) -> u64 {
    s.handled + s.unhandled + s.insend_handled + s.redirected + s.dropped
}

impl RemoteSoak {
    /// Nothing in flight: buffers empty, no request pending, every delivery taken, every
    /// loss event logged.
    fn settled(&self) -> bool {
        let (o, i) = (self.out.stats(), self.inn.stats());
        let kicks = lock_sent(&self.sent).kicks;
        let seen = lock(&self.seen);
        o.buffered == 0
            && i.buffered == 0
            && o.pending_requests == 0
            && seen.pending.is_empty()
            && accounted(&self.receiver.stats()) == i.delivered
            && accounted(&self.calculator.stats()) == i.requests_served
            && losses(&seen, 0) == o.lost()
            && losses(&seen, 1) == i.lost()
            && self.requester.stats().handled == kicks + completed(&seen)
    }

    fn audit(&mut self, checks: &mut Checks, t: &mut Tally) {
        let (o, i) = (self.out.stats(), self.inn.stats());
        let sent = lock_sent(&self.sent);
        let seen = lock(&self.seen);
        let async_sent = completed(&seen) + seen.pending.len() as u64;
        let out_accepted = sent.stream_ok + sent.blocking_enqueued + async_sent;
        accepted_is_accounted(checks, "out", out_accepted, &o);
        accepted_is_accounted(checks, "in", seen.replies_accepted, &i);
        for (g, s) in [(0, &o), (1, &i)] {
            let name = if g == 0 { "out" } else { "in" };
            checks.eq(
                "nats",
                format!("{name}: Lost events (Overflow) == overflow_dropped"),
                seen.lost[g][0],
                s.overflow_dropped,
            );
            checks.eq(
                "nats",
                format!("{name}: Lost events (InFlight) == lost_in_flight"),
                seen.lost[g][1],
                s.lost_in_flight,
            );
            checks.eq(
                "nats",
                format!("{name}: Lost events (Closed) == dropped_on_close"),
                seen.lost[g][2],
                s.dropped_on_close,
            );
        }
        checks.eq(
            "nats",
            "out: sends refused with BufferFull == overflow_rejected",
            sent.stream_buffer_full,
            o.overflow_rejected,
        );
        checks.eq(
            "nats",
            "stream messages received out of order or twice == 0",
            seen.out_of_order,
            0,
        );
        checks.le(
            "nats",
            "stream messages received <= accepted by the out gateway",
            seen.received,
            sent.stream_ok,
        );
        checks.eq(
            "nats",
            "in: delivered == what the receiver agent took",
            i.delivered,
            accounted(&self.receiver.stats()),
        );
        checks.eq(
            "nats",
            "in: requests_served == what the calculator agent took",
            i.requests_served,
            accounted(&self.calculator.stats()),
        );
        checks.eq(
            "nats",
            "send_request ids still without their one RemoteReply == 0",
            seen.pending.len() as u64,
            0,
        );
        checks.eq(
            "nats",
            "RemoteReplies for no pending request (a second outcome) == 0",
            seen.stray_replies,
            0,
        );
        checks.eq(
            "nats",
            "wrong sums (blocking and send_request) == 0",
            sent.wrong_sums + seen.wrong_sums,
            0,
        );
        // The counters below only grow: the phase reports what changed since the last one.
        let mut run = Tally::default();
        run.add("stream accepted", sent.stream_ok);
        run.add("stream received", seen.received);
        run.add("stream numbers skipped at the receiver", seen.gaps);
        run.add(
            "stream messages lost and reported (Lost events)",
            seen.stream_lost,
        );
        run.add(
            "stream messages lost undetected (accepted − received − reported)",
            sent.stream_ok
                .saturating_sub(seen.received)
                .saturating_sub(seen.stream_lost),
        );
        for (k, n) in sent.blocking.with_prefix("") {
            run.add(format!("blocking requests: {k}"), n);
        }
        for (k, n) in seen.async_outcomes.with_prefix("") {
            run.add(format!("send_request: {k}"), n);
        }
        run.add("out: sent", o.sent);
        run.add("out: overflow_dropped", o.overflow_dropped);
        run.add("out: lost_in_flight", o.lost_in_flight);
        run.add("out: disconnects", o.disconnects);
        run.add("in: sent (replies)", i.sent);
        run.add("in: lost_in_flight", i.lost_in_flight);
        run.add("in: disconnects", i.disconnects);
        run.add("in: replies refused at the call", seen.replies_refused);
        drop((sent, seen));
        t.merge(&run.since(&self.reported));
        self.reported = run;
    }
}

/// `Lost` events logged for gateway `g`.
fn losses(seen: &Seen, g: usize) -> u64 {
    seen.lost[g].iter().sum()
}

/// `send_request`s refused at the call.
fn refused_at_once(seen: &Seen) -> u64 {
    seen.async_outcomes
        .with_prefix("refused at once")
        .map(|(_, n)| n)
        .sum()
}

/// `RemoteReply`s the requester agent got (one per completed `send_request`).
fn completed(seen: &Seen) -> u64 {
    let outcomes: u64 = seen.async_outcomes.with_prefix("").map(|(_, n)| n).sum();
    outcomes - refused_at_once(seen)
}

fn accepted_is_accounted(checks: &mut Checks, name: &str, accepted: u64, s: &RemoteStats) {
    checks.eq(
        "nats",
        format!(
            "{name}: envelopes accepted == sent + overflow_dropped + lost_in_flight + \
             dropped_on_close + buffered"
        ),
        accepted,
        s.sent + s.lost() + s.buffered as u64,
    );
}
