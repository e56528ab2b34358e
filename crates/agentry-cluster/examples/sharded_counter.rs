//! A sharded counter spread over three node processes that keeps serving when one of them is
//! killed.
//!
//! The front (this process) joins the cluster and supervises three counter **shards**, each
//! a `remote_child` started from the factory `shard` that every node offers, shard `k`
//! preferring node `k` (then the next ones). It sends increments to the shard of each key
//! through the gateway; then it kills the node of shard 0 with SIGKILL, and keeps sending:
//! shard 0 is restarted on another node by the ordinary one-for-one supervisor, and the
//! increments that failed meanwhile are sent again until answered. Every answer is checked:
//! a shard answers the number of increments its current incarnation has counted (a
//! restarted shard starts from zero — a real one would keep its state in JetStream).
//!
//! ```text
//! cargo run -p agentry-cluster --example sharded_counter   # starts its own nats-server
//! ```
//!
//! Also run by `cargo test -p agentry-cluster --example sharded_counter` (skipped, with a
//! message, when nats-server is not installed).

use agentry::supervision::{Strategy, Supervision};
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle};
use agentry_cluster::{
    AgentRef, Cluster, RemoteChildHandle, RemoteChildSpec, Spawned, remote_child,
};
use agentry_remote::{Gateway, Registry, RemoteRequest};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const NODES: [&str; 3] = ["node-0", "node-1", "node-2"];
const ROUND: u64 = 60;
const WAIT: Duration = Duration::from_secs(30);

#[derive(Serialize, Deserialize)]
struct Incr;
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Count(u64);
#[derive(Serialize, Deserialize)]
struct Stop;

fn registry() -> Registry {
    let r = Registry::new();
    r.register::<Incr>("counter.Incr", 1).expect("registered");
    r.register::<Count>("counter.Count", 1).expect("registered");
    r.register::<Stop>("counter.Stop", 1).expect("registered");
    r
}

fn gateway(env: &EnvHandle, url: &str) -> Gateway {
    Gateway::builder(&registry())
        .namespace("sharded")
        .connect_nats(env, url)
        .expect("gateway")
}

fn join(env: &EnvHandle, id: &str, url: &str) -> Cluster {
    Cluster::builder("sharded", id)
        .registry(false)
        .timeout(Duration::from_secs(10))
        .join(env, url)
        .expect("joined")
}

/// One shard: counts the increments it answers.
struct Shard(u64);
impl Agent for Shard {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |s: &mut Shard, _: &mut Ctx<Shard>, req: RemoteRequest<Incr, Count>| {
                s.0 += 1;
                let _ = req.reply(Count(s.0));
            },
        )?;
        Ok(())
    }
}

/// Stops its node's environment.
struct Stopper;
impl Agent for Stopper {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Stopper, ctx: &mut Ctx<Stopper>, _: Stop| ctx.stop_env())?;
        Ok(())
    }
}

/// A node process: offers the factory `shard` until told to stop.
fn node(id: &str, url: &str) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let gw = gateway(h, url);
    let cluster = join(h, id, url);
    let started = Arc::new(AtomicU64::new(0));
    let (g, node) = (gw.clone(), id.to_owned());
    cluster
        .add_factory("shard", move |env: &EnvHandle, args: &[u8]| {
            let n = started.fetch_add(1, Ordering::Relaxed);
            let mut coop = env.new_coop();
            let shard = coop.add(Shard(0));
            let coop = env.register_coop(coop).map_err(|e| e.to_string())?;
            let address = format!("shard-{}-{node}-{n}", args.first().copied().unwrap_or(0));
            g.serve::<Incr, Count>(&address, &shard)
                .map_err(|e| e.to_string())?;
            Ok(Spawned {
                mbox: shard,
                coop,
                address,
            })
        })
        .expect("factory");
    let stopper = h.register_agent(Stopper).expect("stopper");
    gw.subscribe::<Stop>(&format!("stop-{id}"), &stopper)
        .expect("subscribe");
    println!("{id}: ready");
    env.run();
    cluster.leave();
}

/// Sends one increment to shard `k`, retrying (the shard may be restarting) until answered;
/// checks the answer against what its current incarnation has counted.
fn incr(gw: &Gateway, shard: &RemoteChildHandle, counted: &mut HashMap<AgentRef, u64>) -> AgentRef {
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < WAIT, "shard not served within {WAIT:?}");
        let Some(r) = shard.current() else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let mbox = r.mbox(gw).expect("address");
        match mbox.request::<Incr, Count>(Incr, Duration::from_secs(1)) {
            Ok(Count(n)) => {
                let c = counted.entry(r.clone()).or_insert(0);
                *c += 1;
                assert_eq!(n, *c, "the shard answers what it counted");
                return r;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The front: supervises the shards, counts, kills a node, counts again.
fn demo(spawn_node: impl Fn(&str, &str) -> Child, url: &str) {
    let mut nodes: Vec<Child> = NODES.iter().map(|id| spawn_node(id, url)).collect();
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let gw = gateway(h, url);
    let cluster = join(h, "front", url);
    let t0 = Instant::now();
    while cluster
        .members()
        .iter()
        .filter(|m| m.factories == ["shard"])
        .count()
        < NODES.len()
    {
        assert!(t0.elapsed() < WAIT, "the nodes did not join");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut sup = h.new_coop();
    sup.supervise(Supervision::new(Strategy::OneForOne));
    let shards: Vec<RemoteChildHandle> = (0..NODES.len())
        .map(|k| {
            let prefer = (0..NODES.len())
                .map(|i| NODES[(k + i) % NODES.len()].to_owned())
                .collect();
            let spec = RemoteChildSpec {
                nodes: prefer,
                ..RemoteChildSpec::new("shard", &[k as u8])
            };
            let (child, handle) = remote_child(&cluster, spec);
            sup.add_supervised_coop(child);
            handle
        })
        .collect();
    h.register_coop(sup).expect("supervisor");

    let mut counted = HashMap::new();
    for i in 0..ROUND {
        incr(&gw, &shards[(i % 3) as usize], &mut counted);
    }
    let victim = shards[0].current().expect("shard 0 runs").node;
    println!("front: {ROUND} increments served; killing {victim} (shard 0)");
    let v = NODES
        .iter()
        .position(|n| *n == victim.id)
        .expect("a node of ours");
    nodes[v].kill().expect("SIGKILL");
    nodes[v].wait().expect("reaped");
    for i in 0..ROUND {
        incr(&gw, &shards[(i % 3) as usize], &mut counted);
    }
    let moved = shards[0].current().expect("shard 0 runs again");
    assert_ne!(moved.node.id, victim.id, "shard 0 moved to another node");
    assert_eq!(shards[0].history().len(), 2);
    println!(
        "front: {ROUND} more served; shard 0 now on {} ({} NodeDown seen)",
        moved.node,
        cluster.stats().nodes_down
    );
    for (i, id) in NODES.iter().enumerate() {
        if i != v {
            gw.mbox(&format!("stop-{id}"))
                .expect("name")
                .send(Stop)
                .expect("sent");
            assert!(nodes[i].wait().expect("exits").success());
        }
    }
    cluster.leave();
    h.stop();
    env.run();
}

fn nats_server_binary() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("nats-server"))
        .chain(["/usr/sbin/nats-server", "/usr/bin/nats-server"].map(Into::into))
        .find(|p| p.is_file())
}

/// A nats-server on a free loopback port, stopped by pid when dropped.
struct NatsServer(Child, std::path::PathBuf);

impl NatsServer {
    fn start(bin: &std::path::Path) -> (NatsServer, String) {
        let dir = std::env::temp_dir().join(format!("sharded-counter-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let child = Command::new(bin)
            .args(["-a", "127.0.0.1", "-p", "-1", "--ports_file_dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        let ports = dir.join(format!("nats-server_{}.ports", child.id()));
        let server = NatsServer(child, dir);
        for _ in 0..1000 {
            if let Ok(s) = std::fs::read_to_string(&ports)
                && let Some(i) = s.find("nats://")
            {
                let r = &s[i..];
                return (server, r[..r.find('"').unwrap_or(r.len())].to_owned());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("nats-server did not start");
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["node", id, url] => node(id, url),
        [] => {
            let Some(bin) = nats_server_binary() else {
                println!("nats-server is not installed (apt-get install nats-server)");
                return;
            };
            let (_nats, url) = NatsServer::start(&bin);
            demo(
                |id, url| {
                    Command::new(std::env::current_exe().expect("this program"))
                        .args(["node", id, url])
                        .spawn()
                        .expect("node process")
                },
                &url,
            );
        }
        _ => eprintln!("usage: sharded_counter [node <id> <nats-url>]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLE: &str = "SHARDED_COUNTER_NODE";

    /// In a child process: a node (in the parent: nothing).
    #[test]
    fn child_node() {
        if let (Ok(id), Ok(url)) = (std::env::var(ROLE), std::env::var("SHARDED_COUNTER_URL")) {
            node(&id, &url);
        }
    }

    #[test]
    fn keeps_serving_when_a_node_is_killed() {
        if std::env::var(ROLE).is_ok() {
            return;
        }
        let Some(bin) = nats_server_binary() else {
            eprintln!("skipped: nats-server is not installed");
            return;
        };
        let (_nats, url) = NatsServer::start(&bin);
        demo(
            |id, url| {
                Command::new(std::env::current_exe().expect("test binary"))
                    .args(["tests::child_node", "--exact", "--nocapture"])
                    .env(ROLE, id)
                    .env("SHARDED_COUNTER_URL", url)
                    .spawn()
                    .expect("node process")
            },
            &url,
        );
    }
}
