//! `cluster`: the figures of `agentry-cluster` (issue 14), each case verifying its result.
//!
//! - `detect`: failure detection — K node processes (this binary re-run as
//!   [`NODE_COMMAND`]), each killed with SIGKILL once an observer node has seen it up; the
//!   time from the kill to the observer's `NodeDown` (default failure bound, 2 s): p50 / p99 /
//!   max. Verified: one `NodeDown { reason: Timeout }` per kill, of the killed incarnation.
//! - `lookup`: registry lookup latency — 100 names registered by one node, N lookups from
//!   another (each a JetStream key-value get); verified: every answer is the registered
//!   agent.
//! - `spawn`: remote spawn rate — N agents started one after the other on another node from
//!   a factory (request, factory, coop registration, exposure, answer); verified: N distinct
//!   agents, and the host counted N spawns.
//! - `terminated`: remote `Terminated` latency — N agents spawned on another node and
//!   watched; the time from `stop_remote` to the watcher's `RemoteTerminated`; verified:
//!   each watch fired once, `Exited(Normal)`.
//!
//! One nats-server with JetStream serves every case of a run; skipped when nats-server is
//! not installed.

use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use crate::workloads::nats_server::NatsServer;
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox, watch::ExitReason};
use agentry_cluster::{
    Cluster, DownReason, NodeDown, NodeUp, RemoteExit, RemoteTerminated, Spawned,
};
use std::cell::OnceCell;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

pub static BENCH: BenchDef = BenchDef {
    id: "cluster",
    description: "agentry-cluster: failure detection (SIGKILL → NodeDown, p50/p99), registry \
                  lookup latency, remote spawn rate, remote Terminated latency",
    cases,
    charts: &[ChartKind::Bars],
};

/// The hidden command that runs one node process of `detect`.
pub const NODE_COMMAND: &str = "__cluster-node";

/// Every wait of a case is bounded by this.
const WAIT: Duration = Duration::from_secs(30);

/// The node process's entry point (`agentry-bench __cluster-node <url> <id>`): joins with
/// the default settings, prints `ready`, and runs until killed (or until its parent closes
/// its stdin). Returns the exit status.
#[must_use]
pub fn node_main(args: &[String]) -> u8 {
    let [url, id] = args else {
        eprintln!("usage: {NODE_COMMAND} <nats-url> <node-id>");
        return crate::harness::EXIT_USAGE;
    };
    let Ok(env) = Env::builder().autoshutdown(false).build() else {
        return 1;
    };
    let cluster = match Cluster::builder("bench", id)
        .registry(false)
        .join(env.handle(), url)
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{NODE_COMMAND}: {e}");
            return 1;
        }
    };
    println!("ready");
    // The parent gone (stdin closed): leave.
    let h = env.handle().clone();
    std::thread::spawn(move || {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        cluster.leave();
        h.stop();
    });
    env.run();
    0
}

type Shared = Rc<OnceCell<Result<NatsServer, String>>>;

#[derive(Clone, Copy)]
enum Kind {
    Detect,
    Lookup,
    Spawn,
    Terminated,
}

fn cases(scale: Scale) -> Vec<Case> {
    let shared: Shared = Rc::new(OnceCell::new());
    let kills = scale.pick(2u64, 10, 20);
    let lookups = scale.pick(100u64, 2_000, 10_000);
    let spawns = scale.pick(20u64, 500, 2_000);
    let watches = scale.pick(20u64, 300, 1_000);
    [
        (
            Kind::Detect,
            format!("detect K={kills} kills"),
            "kills",
            kills,
        ),
        (
            Kind::Lookup,
            format!("lookup N={lookups}"),
            "lookups",
            lookups,
        ),
        (Kind::Spawn, format!("spawn N={spawns}"), "spawns", spawns),
        (
            Kind::Terminated,
            format!("terminated N={watches}"),
            "watches",
            watches,
        ),
    ]
    .into_iter()
    .map(|(kind, name, phase, n)| {
        let shared = Rc::clone(&shared);
        Case::builder(name)
            .impl_name("agentry")
            .dispatcher("one_thread")
            .param("N", n)
            .phase(PhaseSpec::ops(phase))
            .runner(move || {
                let server = shared
                    .get_or_init(|| {
                        let binary = NatsServer::binary().ok_or("nats-server is not installed")?;
                        NatsServer::start_jetstream(binary)
                    })
                    .as_ref()
                    .map_err(|why| BenchError::Skip(why.clone()))?;
                let url = server.url().to_owned();
                match kind {
                    Kind::Detect => detect(&url, n),
                    Kind::Lookup => lookup(&url, n),
                    Kind::Spawn => spawn(&url, n),
                    Kind::Terminated => terminated(&url, n),
                }
            })
    })
    .collect()
}

fn harness(e: impl std::fmt::Display) -> BenchError {
    BenchError::Harness(e.to_string())
}

/// Quantiles of `xs` (sorted here), in the unit `scale` converts seconds to.
fn quantiles(mut xs: Vec<Duration>, scale: f64) -> (f64, f64, f64) {
    xs.sort_unstable();
    let at = |q: f64| {
        let i = ((xs.len() as f64 - 1.0) * q).round() as usize;
        xs.get(i).map_or(0.0, |d| d.as_secs_f64() * scale)
    };
    (at(0.5), at(0.99), at(1.0))
}

/// What the observer heard, with the instant.
enum Heard {
    Up(String, u64),
    Down(String, u64, DownReason, Instant),
    Terminated(RemoteTerminated, Instant),
}

/// Forwards cluster events and remote terminations to a channel.
struct Observer {
    events: agentry::MultiMbox,
    tx: mpsc::Sender<Heard>,
}

impl Agent for Observer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.from(&self.events)
            .on(|o: &mut Observer, _: &mut Ctx<Observer>, u: Arc<NodeUp>| {
                let _ = o.tx.send(Heard::Up(u.0.id.clone(), u.0.incarnation));
            })?;
        def.from(&self.events).on(
            |o: &mut Observer, _: &mut Ctx<Observer>, d: Arc<NodeDown>| {
                let at = Instant::now();
                let _ = o.tx.send(Heard::Down(
                    d.node.id.clone(),
                    d.node.incarnation,
                    d.reason,
                    at,
                ));
            },
        )?;
        def.on(
            |o: &mut Observer, _: &mut Ctx<Observer>, t: RemoteTerminated| {
                let at = Instant::now();
                let _ = o.tx.send(Heard::Terminated(t, at));
            },
        )?;
        Ok(())
    }
}

/// An environment running on its own thread, stopped (and joined) on drop.
struct Running {
    env: EnvHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    fn start() -> Result<Running, BenchError> {
        let env = Env::builder()
            .autoshutdown(false)
            .build()
            .map_err(harness)?;
        let handle = env.handle().clone();
        let thread = std::thread::spawn(move || {
            env.run();
        });
        Ok(Running {
            env: handle,
            thread: Some(thread),
        })
    }

    fn observer(&self, cluster: &Cluster) -> Result<(Mbox, mpsc::Receiver<Heard>), BenchError> {
        let (tx, rx) = mpsc::channel();
        let mbox = self
            .env
            .register_agent(Observer {
                events: cluster.events(),
                tx,
            })
            .map_err(harness)?;
        Ok((mbox, rx))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.env.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn join(env: &EnvHandle, url: &str, id: &str, registry: bool) -> Result<Cluster, BenchError> {
    Cluster::builder("bench", id)
        .registry(registry)
        .timeout(WAIT)
        .join(env, url)
        .map_err(harness)
}

fn detect(url: &str, kills: u64) -> Result<Sample, BenchError> {
    let run = Running::start()?;
    let cluster = join(&run.env, url, "observer", false)?;
    let (_observer, heard) = run.observer(&cluster)?;
    let exe = super::remote_rr::server_binary().map_err(BenchError::Harness)?;
    let mut latencies = Vec::new();
    let started = Instant::now();
    for i in 0..kills {
        let id = format!("victim-{i}");
        let mut child = Command::new(&exe)
            .args([NODE_COMMAND, url, &id])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(harness)?;
        let mut line = String::new();
        let out = child.stdout.take().ok_or_else(|| harness("no stdout"))?;
        BufReader::new(out).read_line(&mut line).map_err(harness)?;
        if line.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            return Err(harness(format!("{id} did not start: {line:?}")));
        }
        let deadline = Instant::now() + WAIT;
        let incarnation = loop {
            match heard.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Heard::Up(n, inc)) if n == id => break inc,
                Ok(_) => {}
                Err(_) => return Err(BenchError::Verify(format!("{id} never seen up"))),
            }
        };
        let killed = Instant::now();
        child.kill().map_err(harness)?;
        let _ = child.wait();
        let (reason, at) = loop {
            match heard.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Heard::Down(n, inc, reason, at)) if n == id => {
                    verify_eq("the killed incarnation is the one down", incarnation, inc)?;
                    break (reason, at);
                }
                Ok(Heard::Down(n, ..)) => {
                    return Err(BenchError::Verify(format!("{n} reported down, not killed")));
                }
                Ok(_) => {}
                Err(_) => return Err(BenchError::Verify(format!("{id} never reported down"))),
            }
        };
        if reason != DownReason::Timeout {
            return Err(BenchError::Verify(format!(
                "{id} down with {reason:?}, not Timeout"
            )));
        }
        latencies.push(at.saturating_duration_since(killed));
    }
    let elapsed = started.elapsed();
    verify_eq("one NodeDown per kill", kills, latencies.len() as u64)?;
    verify_eq("NodeDown seen in total", kills, cluster.stats().nodes_down)?;
    let (p50, p99, max) = quantiles(latencies, 1e3);
    cluster.leave();
    Ok(Sample::new()
        .phase("kills", elapsed, kills)
        .metric("detect_p50_ms", p50)
        .metric("detect_p99_ms", p99)
        .metric("detect_max_ms", max))
}

struct Idle;
impl Agent for Idle {}

fn lookup(url: &str, n: u64) -> Result<Sample, BenchError> {
    const NAMES: u64 = 100;
    let run = Running::start()?;
    let owner = join(&run.env, url, "owner", true)?;
    let asker = join(&run.env, url, "asker", true)?;
    let mut refs = Vec::new();
    for i in 0..NAMES {
        let agent = run.env.register_agent(Idle).map_err(harness)?;
        let r = owner.expose(&agent, &format!("agent-{i}"), None);
        // A name left by an earlier repetition of this case belongs to a node that left.
        owner
            .register(&format!("bench.lookup.{i}"), &r)
            .map_err(harness)?;
        refs.push(r);
    }
    let mut latencies = Vec::with_capacity(n as usize);
    let started = Instant::now();
    for i in 0..n {
        let k = (i % NAMES) as usize;
        let t0 = Instant::now();
        let got = asker
            .lookup(&format!("bench.lookup.{k}"))
            .map_err(harness)?;
        latencies.push(t0.elapsed());
        if got != refs[k] {
            return Err(BenchError::Verify(format!("lookup {k} answered {got:?}")));
        }
    }
    let elapsed = started.elapsed();
    verify_eq("lookups answered", n, latencies.len() as u64)?;
    let (p50, p99, max) = quantiles(latencies, 1e6);
    owner.leave();
    asker.leave();
    Ok(Sample::new()
        .phase("lookups", elapsed, n)
        .metric("lookup_p50_us", p50)
        .metric("lookup_p99_us", p99)
        .metric("lookup_max_us", max))
}

/// A host node offering factory `idle` (a coop with one agent doing nothing).
fn host(run: &Running, url: &str) -> Result<Cluster, BenchError> {
    let host = join(&run.env, url, "host", false)?;
    host.add_factory("idle", |env: &EnvHandle, _: &[u8]| {
        let mut coop = env.new_coop();
        let mbox = coop.add(Idle);
        let coop = env.register_coop(coop).map_err(|e| e.to_string())?;
        Ok(Spawned {
            mbox,
            coop,
            address: String::new(),
        })
    })
    .map_err(harness)?;
    Ok(host)
}

fn spawn(url: &str, n: u64) -> Result<Sample, BenchError> {
    let run = Running::start()?;
    let host = host(&run, url)?;
    let asker = join(&run.env, url, "asker", false)?;
    let mut refs = Vec::with_capacity(n as usize);
    let started = Instant::now();
    for _ in 0..n {
        refs.push(asker.spawn("host", "idle", b"").map_err(harness)?);
    }
    let elapsed = started.elapsed();
    let distinct: std::collections::HashSet<u64> = refs.iter().map(|r| r.key).collect();
    verify_eq("distinct agents started", n, distinct.len() as u64)?;
    verify_eq("spawns counted by the host", n, host.stats().spawned)?;
    for r in &refs {
        asker.stop_remote(r);
    }
    host.leave();
    asker.leave();
    Ok(Sample::new().phase("spawns", elapsed, n))
}

fn terminated(url: &str, n: u64) -> Result<Sample, BenchError> {
    let run = Running::start()?;
    let host = host(&run, url)?;
    let asker = join(&run.env, url, "asker", false)?;
    let (watcher, heard) = run.observer(&asker)?;
    let mut latencies = Vec::with_capacity(n as usize);
    let started = Instant::now();
    for _ in 0..n {
        let r = asker.spawn("host", "idle", b"").map_err(harness)?;
        let w = asker.watch(&watcher, &r);
        let t0 = Instant::now();
        asker.stop_remote(&r);
        let deadline = t0 + WAIT;
        loop {
            match heard.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Heard::Terminated(t, at)) => {
                    if t.watch != w || t.reason != RemoteExit::Exited(ExitReason::Normal) {
                        return Err(BenchError::Verify(format!("unexpected {t:?}")));
                    }
                    latencies.push(at.saturating_duration_since(t0));
                    break;
                }
                Ok(_) => {}
                Err(_) => return Err(BenchError::Verify("a watch never fired".into())),
            }
        }
    }
    let elapsed = started.elapsed();
    verify_eq("watches fired", n, latencies.len() as u64)?;
    verify_eq(
        "RemoteTerminated delivered (once each)",
        n,
        asker.stats().terminated,
    )?;
    verify_eq("watches left", 0, asker.watch_count() as u64)?;
    let (p50, p99, max) = quantiles(latencies, 1e6);
    host.leave();
    asker.leave();
    Ok(Sample::new()
        .phase("watches", elapsed, n)
        .metric("terminated_p50_us", p50)
        .metric("terminated_p99_us", p99)
        .metric("terminated_max_us", max))
}
