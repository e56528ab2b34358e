//! Support for the cluster's multi-process tests: a 2-server NATS cluster with JetStream,
//! the node process (this test binary re-executed with a role) and an event log agent.
//! Built on agentry-remote's test support (`NatsServer`, `ChildProc`, `say`, ...).
#![allow(dead_code)]

#[path = "../../../agentry-remote/tests/common/mod.rs"]
pub mod common;

use agentry::{Agent, Ctx, Define, DefineError, EnvHandle, Mbox, MultiMbox};
use agentry_cluster::{Cluster, NodeDown, NodeUp, Rejoined, RemoteExit, RemoteTerminated, Spawned};
pub use common::*;
use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The member incarnations a child has announced (`UP <id>`) since it (re)joined.
static ANNOUNCED: Mutex<Option<HashSet<(String, u64)>>> = Mutex::new(None);

/// Prints `UP <id>` once per member incarnation.
fn announce_up(id: &str, incarnation: u64) {
    let fresh = ANNOUNCED
        .lock()
        .expect("lock")
        .get_or_insert_with(HashSet::new)
        .insert((id.to_owned(), incarnation));
    if fresh {
        say(&format!("UP {id}"));
    }
}
use std::time::Duration;

/// The failure bound of every node in these tests: 3 s rather than the default 2 s, so that
/// a loaded 2-core machine does not make a live node miss its heartbeats for that long (a
/// spurious `Timeout` would break the exact counts the tests assert).
pub const BOUND: Duration = Duration::from_secs(3);

/// Two routed nats-servers with JetStream (`s1`, `s2`) on free loopback ports.
pub fn nats_pair(bin: &Path) -> (NatsServer, NatsServer) {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port()
    };
    let (p1, p2) = (free(), free());
    let server = |name: &str, own: u16, other: u16| {
        let listen = format!("nats://127.0.0.1:{own}");
        let route = format!("nats://127.0.0.1:{other}");
        NatsServer::start_with(
            bin,
            &[
                "--cluster",
                &listen,
                "--cluster_name",
                "agentry-cluster-test",
                "--routes",
                &route,
                "-js",
                "-sd",
                "{dir}/js",
                "-n",
                name,
            ],
        )
    };
    (server("s1", p1, p2), server("s2", p2, p1))
}

/// What a node's log agent saw, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    Up(String, u64),
    Down(String, u64, String),
    Rejoined,
    Terminated(u64, RemoteExit),
}

/// Records cluster events and remote terminations; optionally prints them for the parent.
pub struct Log {
    events: MultiMbox,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    print: bool,
}

impl Log {
    pub fn start(h: &EnvHandle, cluster: &Cluster, print: bool) -> (Mbox, Arc<Mutex<Vec<Seen>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mbox = h
            .register_agent(Log {
                events: cluster.events(),
                seen: Arc::clone(&seen),
                print,
            })
            .expect("log agent");
        (mbox, seen)
    }

    fn push(&self, s: Seen) {
        if self.print {
            match &s {
                Seen::Up(id, incarnation) => announce_up(id, *incarnation),
                Seen::Down(id, _, r) => say(&format!("DOWN {id} {r}")),
                Seen::Rejoined => {
                    // A new incarnation of this node hears every member come up again.
                    *ANNOUNCED.lock().expect("lock") = None;
                    say("REJOINED");
                }
                Seen::Terminated(..) => {}
            }
        }
        self.seen.lock().expect("lock").push(s);
    }
}

impl Agent for Log {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.from(&self.events)
            .on(|l: &mut Log, _: &mut Ctx<Log>, u: Arc<NodeUp>| {
                l.push(Seen::Up(u.0.id.clone(), u.0.incarnation))
            })?;
        def.from(&self.events)
            .on(|l: &mut Log, _: &mut Ctx<Log>, d: Arc<NodeDown>| {
                l.push(Seen::Down(
                    d.node.id.clone(),
                    d.node.incarnation,
                    format!("{:?}", d.reason),
                ))
            })?;
        def.from(&self.events)
            .on(|l: &mut Log, _: &mut Ctx<Log>, _: Arc<Rejoined>| l.push(Seen::Rejoined))?;
        def.on(|l: &mut Log, _: &mut Ctx<Log>, t: RemoteTerminated| {
            l.push(Seen::Terminated(t.watch.get(), t.reason))
        })?;
        Ok(())
    }
}

pub fn seen(log: &Arc<Mutex<Vec<Seen>>>) -> Vec<Seen> {
    log.lock().expect("lock").clone()
}

/// Leaves the cluster and stops the environment.
struct Leaver(Cluster);
impl Agent for Leaver {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|l: &mut Leaver, ctx: &mut Ctx<Leaver>, _: Stop| {
            l.0.leave();
            ctx.stop_env();
        })?;
        Ok(())
    }
}

/// The node process: joins as `NODE_ID` through `NATS_URLS`, serves `Add` as `adder-<id>`
/// (exposed, registered as `svc.<id>` and as an instance of service `adders`), offers
/// factory `adder`, prints its events, leaves on `Stop` sent to `stop-<id>`.
pub fn run_node() {
    let id = std::env::var("NODE_ID").expect("NODE_ID");
    let urls = std::env::var("NATS_URLS").expect("NATS_URLS");
    let env = env();
    let h = env.handle();
    let first = urls.split(',').next().expect("a url").to_owned();
    let gw = nats_gateway(h, &first, "clu");
    let cluster = Cluster::builder("t", &id)
        .failure_bound(BOUND)
        .timeout(WAIT)
        .join(h, &urls)
        .expect("joined");
    let (_log, _) = Log::start(h, &cluster, true);
    // Members that came up between the join and the log's subscription to the events were
    // announced to nobody: the view has them. Each member incarnation is announced once,
    // from here or from its event, whichever comes first.
    for m in cluster.members() {
        announce_up(&m.id, m.incarnation);
    }
    let mut coop = h.new_coop();
    let adder = coop.add(Adder);
    let coop_id = h.register_coop(coop).expect("adder coop");
    let address = format!("adder-{id}");
    gw.serve::<Add, Sum>(&address, &adder).expect("serve");
    let me = cluster.expose(&adder, &address, Some(coop_id));
    cluster.register(&format!("svc.{id}"), &me).expect("name");
    cluster.register_service("adders", &me).expect("service");
    let g = gw.clone();
    let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let node = id.clone();
    cluster
        .add_factory("adder", move |env: &EnvHandle, _args: &[u8]| {
            let k = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut coop = env.new_coop();
            let adder = coop.add(Adder);
            let coop = env.register_coop(coop).map_err(|e| e.to_string())?;
            let address = format!("spawned-{node}-{k}");
            g.serve::<Add, Sum>(&address, &adder)
                .map_err(|e| e.to_string())?;
            Ok(Spawned {
                mbox: adder,
                coop,
                address,
            })
        })
        .expect("factory");
    let leaver = register(h, Leaver(cluster.clone()));
    gw.subscribe::<Stop>(&format!("stop-{id}"), &leaver)
        .expect("subscribe");
    say(&format!("READY {}", cluster.me().incarnation));
    env.run();
}

/// A node process and the protocol lines it printed that no wait has taken yet.
pub struct Node {
    pub proc: ChildProc,
    backlog: std::cell::RefCell<Vec<String>>,
}

impl Node {
    /// Starts a node process (`run_node`) with id `id` on `urls`.
    pub fn spawn(id: &str, urls: &str) -> Node {
        Node {
            proc: ChildProc::spawn(
                "node_process",
                "node",
                &[("NODE_ID", id), ("NATS_URLS", urls)],
            ),
            backlog: Default::default(),
        }
    }

    /// Takes the first line (printed earlier and not yet taken, or next) that starts with
    /// `prefix`.
    pub fn wait_line(&self, prefix: &str) -> String {
        eprintln!("waiting for {prefix:?}");
        let mut backlog = self.backlog.borrow_mut();
        if let Some(i) = backlog.iter().position(|l| l.starts_with(prefix)) {
            return backlog.remove(i);
        }
        loop {
            let l = self.proc.expect_line();
            eprintln!("  child: {l}");
            if l.starts_with(prefix) {
                return l;
            }
            backlog.push(l);
        }
    }

    /// Takes every line of `want`, in any order.
    pub fn wait_lines(&self, want: &[&str]) {
        for w in want {
            assert_eq!(self.wait_line(w), *w);
        }
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        self.proc.kill();
    }

    /// Waits for the exit; whether it succeeded.
    pub fn wait_success(self) -> bool {
        self.proc.wait_success()
    }
}
