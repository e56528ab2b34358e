//! nats-server killed and restarted under load, default settings: every accepted send is
//! settled exactly once — delivered once, or reported to its sender — and nothing the
//! receiving side could have queued is lost: `accepted == delivered + reported` holds
//! exactly, with `reported == 0`. Requests end in exactly one outcome each, and one whose
//! caller stopped waiting is never sent.

mod common;

use agentry::{Agent, Ctx, Define, DefineError};
use agentry_remote::{
    Gateway, LossReason, RemoteEvent, RemoteMbox, RemoteReply, RemoteRequest, RequestError,
    SendError,
};
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The tests of this file load the machine on purpose; they run one at a time.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A gateway with default settings but for the namespace.
fn default_gateway(env: &agentry::EnvHandle, url: &str) -> Gateway {
    Gateway::builder(&registry())
        .namespace("outage")
        .connect_nats(env, url)
        .expect("gateway")
}

/// A receiving gateway whose collector subscribes `name`, and a sending gateway with a
/// remote mbox to it (two connections, default settings).
struct Pair {
    receiver: Gateway,
    seen: Arc<Mutex<Vec<Ping>>>,
    sender: Gateway,
    to: RemoteMbox,
}

fn pair(env: &agentry::EnvHandle, url: &str, name: &str) -> Pair {
    let receiver = default_gateway(env, url);
    let (c, seen) = Collector::<Ping>::new(None);
    receiver
        .subscribe::<Ping>(name, &register(env, c))
        .expect("subscribe");
    let sender = default_gateway(env, url);
    let to = sender.mbox(name).expect("name");
    Pair {
        receiver,
        seen,
        sender,
        to,
    }
}

/// Waits until `gw` has nothing buffered and nothing awaiting a receipt.
fn settled(gw: &Gateway) -> bool {
    eventually(|| {
        let s = gw.stats();
        s.buffered == 0 && s.awaiting_receipt == 0
    })
}

/// Checks the equation for one run: `accepted` sends of `Ping(0..)`, `seen` what the
/// receiving agent got.
fn assert_every_send_settled(
    sender: &Gateway,
    receiver: &Gateway,
    accepted: u32,
    seen: &Arc<Mutex<Vec<Ping>>>,
) {
    assert!(
        settled(sender),
        "still unsettled: {:?}; delivered {}",
        sender.stats(),
        len(seen)
    );
    // A receipt confirms the hand-over to the agent's queue; let the agent catch up.
    assert!(eventually(|| len(seen) as u64 >= receiver.stats().delivered));
    let mut got: Vec<u32> = seen.lock().expect("lock").iter().map(|p| p.0).collect();
    let delivered = got.len();
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), delivered, "a message was delivered twice");
    let s = sender.stats();
    assert_eq!(
        u64::from(accepted),
        delivered as u64 + s.lost(),
        "accepted == delivered + reported, exactly: {s:?}"
    );
    assert_eq!(s.lost(), 0, "nothing lost under default settings: {s:?}");
    assert_eq!(got, (0..accepted).collect::<Vec<_>>());
    assert_eq!(s.confirmed, u64::from(accepted));
}

#[test]
fn a_five_second_outage_at_2000_msg_per_s_loses_nothing() {
    let Some(bin) = nats_or_skip("a_five_second_outage_at_2000_msg_per_s_loses_nothing") else {
        return;
    };
    let _serial = one_at_a_time();
    let mut server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let Pair {
        receiver,
        seen,
        sender,
        to,
    } = pair(h, &server.url, "stream");

    // 2,000 messages a second for 8 s, 20 every 10 ms; the server is down from 2 s to 7 s.
    let streamer = std::thread::spawn(move || {
        let t0 = Instant::now();
        for tick in 0..800u32 {
            for k in 0..20 {
                to.send(Ping(tick * 20 + k)).expect("accepted");
            }
            let next = t0 + Duration::from_millis(10 * u64::from(tick + 1));
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        16_000
    });
    std::thread::sleep(Duration::from_secs(2));
    server.kill();
    assert!(eventually(|| !sender.is_connected()));
    std::thread::sleep(Duration::from_secs(5));
    server.restart();
    let accepted = streamer.join().expect("streamer");
    assert_every_send_settled(&sender, &receiver, accepted, &seen);
    let s = sender.stats();
    assert!(s.disconnects >= 1 && s.connects >= 2, "{s:?}");
    h.stop();
    env.run();
}

#[test]
fn an_outage_at_the_highest_rate_loses_nothing_and_refusals_are_given_back() {
    let Some(bin) = nats_or_skip("an_outage_at_the_highest_rate_loses_nothing") else {
        return;
    };
    let _serial = one_at_a_time();
    let mut server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let Pair {
        receiver,
        seen,
        sender,
        to,
    } = pair(h, &server.url, "flood");
    let stop = Arc::new(AtomicBool::new(false));
    let stop_flag = Arc::clone(&stop);
    // As fast as sends are accepted: the receipt window holds the sender to the rate the
    // receiver confirms (plus the outbound buffer); a refused message is given back, and
    // the flooder backs off a millisecond before sending it again.
    let flooder = std::thread::spawn(move || {
        let (mut next, mut refused) = (0u32, 0u64);
        while !stop_flag.load(Ordering::Relaxed) {
            match to.send(Ping(next)) {
                Ok(()) => next += 1,
                Err(SendError::BufferFull(_)) => {
                    refused += 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        (next, refused)
    });
    std::thread::sleep(Duration::from_secs(1));
    server.kill();
    std::thread::sleep(Duration::from_millis(1500));
    server.restart();
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let (accepted, refused) = flooder.join().expect("flooder");
    assert_every_send_settled(&sender, &receiver, accepted, &seen);
    assert_eq!(sender.stats().overflow_rejected, refused);
    h.stop();
    env.run();
}

/// Holds every request it gets and answers them when told.
struct Server {
    served: Arc<Mutex<Vec<i64>>>,
}

impl Agent for Server {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |s: &mut Server, _: &mut Ctx<Server>, req: RemoteRequest<Add, Sum>| {
                s.served.lock().expect("lock").push(req.query().a);
                let sum = Sum(req.query().a + req.query().b);
                let _ = req.reply(sum);
            },
        )?;
        Ok(())
    }
}

/// Collects request outcomes.
struct Outcomes(Arc<Mutex<Vec<RemoteReply<Sum>>>>);

impl Agent for Outcomes {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |o: &mut Outcomes, _: &mut Ctx<Outcomes>, r: RemoteReply<Sum>| {
                o.0.lock().expect("lock").push(r)
            },
        )?;
        Ok(())
    }
}

#[test]
fn requests_across_an_outage_end_once_and_expired_ones_are_never_sent() {
    let Some(bin) = nats_or_skip("requests_across_an_outage_end_once") else {
        return;
    };
    let _serial = one_at_a_time();
    let mut server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let service = default_gateway(h, &server.url);
    let served = Arc::new(Mutex::new(Vec::new()));
    service
        .serve::<Add, Sum>(
            "calc",
            &register(
                h,
                Server {
                    served: Arc::clone(&served),
                },
            ),
        )
        .expect("serve");
    let client = Gateway::builder(&registry())
        .namespace("outage")
        .events(&events)
        .connect_nats(h, &server.url)
        .expect("gateway");
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let sink = register(h, Outcomes(Arc::clone(&outcomes)));
    let calc = client.mbox("calc").expect("name");
    // Which request (by its `a`) each id stands for, so that a failure names them.
    let asked = Mutex::new(std::collections::HashMap::new());
    let ask = |a: i64, timeout_ms: u64| {
        let id = calc
            .send_request::<Add, Sum>(Add { a, b: 1 }, Duration::from_millis(timeout_ms), &sink)
            .expect("accepted");
        asked.lock().expect("lock").insert(id, a);
    };
    for a in 0..50 {
        ask(a, 10_000);
    }
    assert!(eventually(|| outcomes.lock().expect("lock").len() == 50));

    server.kill();
    assert!(eventually(|| !client.is_connected()));
    // While the server is down: 50 requests whose callers give up after 200 ms, and 50
    // that wait long enough for the server to come back.
    for a in 100..150 {
        ask(a, 200);
    }
    for a in 200..250 {
        ask(a, 20_000);
    }
    assert!(eventually(|| outcomes.lock().expect("lock").len() == 100));
    std::thread::sleep(Duration::from_millis(300));
    server.restart();
    assert!(eventually(|| outcomes.lock().expect("lock").len() == 150));
    client.flush(WAIT).expect("flushed");
    service.flush(WAIT).expect("flushed");

    // Each request ended exactly once, with a reply or a typed error. The first 50 were
    // answered; the 50 whose callers gave up timed out and never reached the server; the
    // 50 patient ones were answered — or, if this client reconnected before the service
    // had subscribed again, answered "no responders" at once by NATS (or `Disconnected`,
    // should the connection drop again while they are in flight).
    let outcomes = std::mem::take(&mut *outcomes.lock().expect("lock"));
    let asked = asked.into_inner().expect("lock");
    let ended: Vec<(i64, Result<i64, RequestError>)> = outcomes
        .iter()
        .map(|r| (asked[&r.id], r.result.clone().map(|sum| sum.0 - 1)))
        .collect();
    // Everything a failure needs to be understood: each request's outcome, the client's
    // counters, the gateway events in order.
    let report = || {
        format!(
            "outcomes (a, result): {ended:?}\nclient stats: {:?}\nevents: {:?}",
            client.stats(),
            log.lock().expect("lock")
        )
    };
    assert_eq!(ended.len(), 150, "{}", report());
    let mut ids: Vec<_> = outcomes.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 150, "each request ended once: {}", report());
    for (a, result) in &ended {
        let fine = match (a, result) {
            (0..50, Ok(sum)) => sum == a,
            (100..150, Err(RequestError::Timeout)) => true,
            (200..250, Ok(sum)) => sum == a,
            (200..250, Err(RequestError::NoResponders | RequestError::Disconnected)) => true,
            _ => false,
        };
        assert!(fine, "request {a} ended {result:?}: {}", report());
    }
    let answered: Vec<i64> = {
        let mut v: Vec<i64> = ended.iter().filter_map(|(_, r)| r.clone().ok()).collect();
        v.sort_unstable();
        v
    };
    let mut served = served.lock().expect("lock").clone();
    served.sort_unstable();
    assert_eq!(
        served,
        answered,
        "served == answered; the expired ones never arrived: {}",
        report()
    );
    let s = client.stats();
    assert_eq!(
        (s.expired_unsent, s.timed_out, s.late_replies),
        (50, 50, 0),
        "{}",
        report()
    );
    assert!(
        !log.lock()
            .expect("lock")
            .iter()
            .any(|e| matches!(e, RemoteEvent::Lost { .. })),
        "no loss reported"
    );
    h.stop();
    env.run();
}

#[test]
fn messages_nobody_confirms_are_sent_again_then_reported() {
    let Some(bin) = nats_or_skip("messages_nobody_confirms_are_sent_again_then_reported") else {
        return;
    };
    let _serial = one_at_a_time();
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let sender = Gateway::builder(&registry())
        .namespace("outage")
        .events(&events)
        .receipt_timeout(Duration::from_millis(500))
        .resend_interval(Duration::from_millis(100))
        .connect_nats(h, &server.url)
        .expect("gateway");
    let nowhere = sender.mbox("nobody-listens").expect("name");
    for i in 0..10 {
        nowhere.send(Ping(i)).expect("accepted");
    }
    assert!(settled(&sender));
    let s = sender.stats();
    assert_eq!((s.unconfirmed, s.confirmed, s.lost()), (10, 0, 10));
    // Nothing confirms, so each round sends one copy (a probe) before all are given up.
    assert!(s.resent >= 1, "probed before giving up: {s:?}");
    assert!(eventually(|| {
        log.lock()
            .expect("lock")
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    RemoteEvent::Lost {
                        reason: LossReason::Unconfirmed,
                        ..
                    }
                )
            })
            .count()
            == 10
    }));
    h.stop();
    env.run();
}

#[test]
fn without_receipts_messages_are_at_most_once() {
    let Some(bin) = nats_or_skip("without_receipts_messages_are_at_most_once") else {
        return;
    };
    let _serial = one_at_a_time();
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let receiver = default_gateway(h, &server.url);
    let (c, seen) = Collector::<Ping>::new(None);
    receiver
        .subscribe::<Ping>("plain", &register(h, c))
        .expect("subscribe");
    let sender = Gateway::builder(&registry())
        .namespace("outage")
        .receipts(false)
        .connect_nats(h, &server.url)
        .expect("gateway");
    let to = sender.mbox("plain").expect("name");
    for i in 0..100 {
        to.send(Ping(i)).expect("accepted");
    }
    assert!(eventually(|| len(&seen) == 100));
    let (s, r) = (sender.stats(), receiver.stats());
    assert_eq!(
        (s.confirmed, s.awaiting_receipt, r.confirmations_sent),
        (0, 0, 0)
    );
    h.stop();
    env.run();
}
