//! `remote_stream`: one-way streaming over NATS — a plain thread sends N numbered 256-byte
//! records through one gateway to an agent subscribed through another gateway (two
//! connections to a private nats-server), as fast as sends are accepted. The time runs
//! from the first send until the agent has handled the last record; the agent checks that
//! it got every number exactly once (count and sum).
//!
//! Cases: delivery receipts on (the default: every record confirmed end to end, see
//! `agentry_remote` `core/receipts.rs`) and off (core NATS, at most once), beside raw
//! `async-nats` publish → subscribe of the same bytes in the same run — so the cost of
//! receipts, and of the gateway itself, is read off one table. Skipped when nats-server is
//! not installed.

use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use crate::workloads::nats_server::NatsServer;
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle};
use agentry_remote::{Gateway, Registry, SendError};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::cell::OnceCell;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub static BENCH: BenchDef = BenchDef {
    id: "remote_stream",
    description: "N numbered 256-byte records one way over NATS to an agent in another \
                  gateway: delivery receipts on / off vs raw async-nats pub/sub",
    cases,
    charts: &[ChartKind::Bars],
};

/// Bytes of a record's body (with its number and postcard framing: about 256 on the wire).
const BODY: usize = 248;

/// How long one run may take before it fails.
const LIMIT: Duration = Duration::from_secs(120);

/// One record: its number and a body.
#[derive(Serialize, Deserialize)]
struct Record {
    n: u64,
    body: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Receipts,
    AtMostOnce,
    Raw,
}

impl Way {
    fn impl_name(self) -> &'static str {
        match self {
            Way::Receipts => "agentry",
            Way::AtMostOnce => "agentry-no-receipts",
            Way::Raw => "async_nats",
        }
    }
}

/// The nats-server every case of one run shares, started by the first case that runs.
type Shared = Rc<OnceCell<Result<NatsServer, String>>>;

fn cases(scale: Scale) -> Vec<Case> {
    let n = scale.pick(2_000u64, 100_000, 1_000_000);
    let shared: Shared = Rc::new(OnceCell::new());
    [Way::Receipts, Way::AtMostOnce, Way::Raw]
        .into_iter()
        .map(|way| {
            let shared = Rc::clone(&shared);
            let mut builder = Case::builder(format!("nats N={n} 256 B"))
                .impl_name(way.impl_name())
                .dispatcher(if way == Way::Raw { "raw" } else { "one_thread" })
                .param("N", n)
                .phase(PhaseSpec::msgs("stream"));
            if way != Way::Raw {
                builder = builder.peer("async_nats");
            }
            if way == Way::Receipts {
                builder = builder.peer("agentry-no-receipts");
            }
            builder.runner(move || {
                let server = shared
                    .get_or_init(start_server)
                    .as_ref()
                    .map_err(|why| BenchError::Skip(why.clone()))?;
                let (elapsed, got) = match way {
                    Way::Raw => run_raw(server.url(), n)?,
                    _ => run_gateways(server.url(), n, way == Way::Receipts)?,
                };
                verify_eq("records handled exactly once (count and sum)", n, got)?;
                Ok(Sample::new().phase("stream", elapsed, n))
            })
        })
        .collect()
}

fn start_server() -> Result<NatsServer, String> {
    let binary = NatsServer::binary().ok_or("nats-server is not installed")?;
    NatsServer::start(binary)
}

fn registry() -> Result<Registry, BenchError> {
    let registry = Registry::new();
    registry
        .register::<Record>("bench.Record", 1)
        .map_err(|e| BenchError::Harness(e.to_string()))?;
    Ok(registry)
}

/// Counts records; reports `(count, sum)` once it has `expected` or sees a duplicate.
struct Sink {
    expected: u64,
    count: u64,
    sum: u64,
    done: Option<mpsc::Sender<(u64, u64)>>,
}

impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Sink, _: &mut Ctx<Sink>, r: Record| {
            s.count += 1;
            s.sum += r.n;
            if s.count == s.expected
                && let Some(done) = s.done.take()
            {
                let _ = done.send((s.count, s.sum));
            }
        })?;
        Ok(())
    }
}

/// What a complete run's sink computes: numbers `0..n`, once each.
fn expected_sum(n: u64) -> u64 {
    n * n.saturating_sub(1) / 2
}

/// Checks a sink's report: the count when the sum is right, else a verify error.
fn checked(n: u64, (count, sum): (u64, u64)) -> Result<u64, BenchError> {
    verify_eq("sum of the record numbers", expected_sum(n), sum)?;
    Ok(count)
}

fn gateway(env: &EnvHandle, url: &str, receipts: bool) -> Result<Gateway, BenchError> {
    Gateway::builder(&registry()?)
        .namespace("stream")
        .receipts(receipts)
        .connect_nats(env, url)
        .map_err(|e| BenchError::Harness(e.to_string()))
}

fn run_gateways(url: &str, n: u64, receipts: bool) -> Result<(Duration, u64), BenchError> {
    let harness = |e: &dyn std::fmt::Display| BenchError::Harness(e.to_string());
    let env = Env::builder()
        .autoshutdown(false)
        .build()
        .map_err(|e| harness(&e))?;
    let h = env.handle().clone();
    let runner = std::thread::spawn(move || env.run());
    let result = (|| {
        let receiver = gateway(&h, url, receipts)?;
        let (done, finished) = mpsc::channel();
        let sink = h
            .register_agent(Sink {
                expected: n,
                count: 0,
                sum: 0,
                done: Some(done),
            })
            .map_err(|e| harness(&e))?;
        receiver
            .subscribe::<Record>("records", &sink)
            .map_err(|e| harness(&e))?;
        let sender = gateway(&h, url, receipts)?;
        let to = sender.mbox("records").map_err(|e| harness(&e))?;
        let started = Instant::now();
        for i in 0..n {
            let mut record = Record {
                n: i,
                body: vec![i as u8; BODY],
            };
            loop {
                match to.send(record) {
                    Ok(()) => break,
                    // The outbound buffer (or the receipt window) is full: back off.
                    Err(SendError::BufferFull(back)) => {
                        record = back;
                        std::thread::yield_now();
                    }
                    Err(e) => return Err(harness(&e)),
                }
            }
        }
        let report = finished.recv_timeout(LIMIT).map_err(|_| {
            BenchError::Verify(format!("not every record arrived within {LIMIT:?}"))
        })?;
        let elapsed = started.elapsed();
        Ok((elapsed, checked(n, report)?))
    })();
    h.stop();
    runner
        .join()
        .map_err(|_| BenchError::Harness("the environment thread panicked".into()))?;
    result
}

fn run_raw(url: &str, n: u64) -> Result<(Duration, u64), BenchError> {
    let harness = |e: &dyn std::fmt::Display| BenchError::Harness(e.to_string());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| harness(&e))?;
    runtime.block_on(async {
        // The gateways' default subscription capacity: core NATS drops what a full
        // subscription channel cannot take, and the baseline must lose nothing either.
        let subscriber = async_nats::ConnectOptions::new()
            .subscription_capacity(262_144)
            .connect(url)
            .await
            .map_err(|e| harness(&e))?;
        let publisher = async_nats::connect(url).await.map_err(|e| harness(&e))?;
        let started_waiting = Instant::now();
        let mut records = subscriber
            .subscribe("stream.raw")
            .await
            .map_err(|e| harness(&e))?;
        // `flush` only empties the client's buffer: the server may not have the subscription
        // yet, and records published before it has are dropped (at most once). A later
        // subscription of the same connection that hears the publisher proves the first one
        // is in place (the server takes a connection's commands in order).
        let mut ready = subscriber
            .subscribe("stream.raw.ready")
            .await
            .map_err(|e| harness(&e))?;
        loop {
            publisher
                .publish("stream.raw.ready", bytes::Bytes::new())
                .await
                .map_err(|e| harness(&e))?;
            publisher.flush().await.map_err(|e| harness(&e))?;
            match tokio::time::timeout(Duration::from_millis(50), ready.next()).await {
                Ok(Some(_)) => break,
                Ok(None) => return Err(harness(&"the readiness subscription closed")),
                Err(_) if started_waiting.elapsed() < LIMIT => continue,
                Err(_) => return Err(harness(&"the raw subscription never became ready")),
            }
        }
        let counting = tokio::spawn(async move {
            let (mut count, mut sum) = (0u64, 0u64);
            while count < n {
                let Some(msg) = records.next().await else {
                    break;
                };
                let record: Record = postcard::from_bytes(&msg.payload)
                    .map_err(|e| BenchError::Verify(e.to_string()))?;
                count += 1;
                sum += record.n;
            }
            Ok::<_, BenchError>((count, sum))
        });
        let started = Instant::now();
        for i in 0..n {
            let record = Record {
                n: i,
                body: vec![i as u8; BODY],
            };
            let bytes = postcard::to_allocvec(&record).map_err(|e| harness(&e))?;
            publisher
                .publish("stream.raw", bytes.into())
                .await
                .map_err(|e| harness(&e))?;
        }
        publisher.flush().await.map_err(|e| harness(&e))?;
        let report = tokio::time::timeout(LIMIT, counting)
            .await
            .map_err(|_| BenchError::Verify(format!("not every record arrived within {LIMIT:?}")))?
            .map_err(|e| harness(&e))??;
        let elapsed = started.elapsed();
        Ok((elapsed, checked(n, report)?))
    })
}
