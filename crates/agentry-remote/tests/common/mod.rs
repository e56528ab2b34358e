//! Shared test support: a `nats-server` per test on a random loopback port (stopped by pid),
//! child processes (this test binary re-executed), collecting agents, bounded waits.
#![allow(dead_code)]

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, Mbox, MultiMbox};
use agentry_remote::{Gateway, Registry, RemoteEvent, RemoteReply, RemoteReplyTo, RemoteRequest};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(20);

// ---------- message types shared by every process ----------

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Ping(pub u32);
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Pong(pub u32);
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Add {
    pub a: i64,
    pub b: i64,
}
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Sum(pub i64);
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Stop;
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

pub fn registry() -> Registry {
    let r = Registry::new();
    r.register::<Ping>("test.Ping", 1).expect("register");
    r.register::<Pong>("test.Pong", 1).expect("register");
    r.register::<Add>("calc.Add", 1).expect("register");
    r.register::<Sum>("calc.Sum", 1).expect("register");
    r.register::<Stop>("test.Stop", 1).expect("register");
    r.register::<Blob>("test.Blob", 1).expect("register");
    r
}

// ---------- nats-server ----------

pub fn nats_binary() -> Option<PathBuf> {
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join("nats-server");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    [
        "/usr/sbin/nats-server",
        "/usr/bin/nats-server",
        "/usr/local/bin/nats-server",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// Returns the binary, or prints why the test is skipped (only when it is not installed).
pub fn nats_or_skip(test: &str) -> Option<PathBuf> {
    let b = nats_binary();
    if b.is_none() {
        eprintln!("skipped {test}: nats-server is not installed (apt-get install nats-server)");
    }
    b
}

/// Returns the binary if it supports JetStream (`-js`), or prints why the test is skipped.
pub fn jetstream_or_skip(test: &str) -> Option<PathBuf> {
    let b = nats_or_skip(test)?;
    let help = Command::new(&b).arg("--help").output().ok()?;
    let text =
        String::from_utf8_lossy(&help.stdout).into_owned() + &String::from_utf8_lossy(&help.stderr);
    if text.contains("--jetstream") {
        Some(b)
    } else {
        eprintln!("skipped {test}: this nats-server has no JetStream");
        None
    }
}

pub struct NatsServer {
    child: Option<Child>,
    pub url: String,
    pub port: u16,
    pub cluster_url: Option<String>,
    dir: PathBuf,
    binary: PathBuf,
    args: Vec<String>,
}

impl NatsServer {
    pub fn start(binary: &Path) -> NatsServer {
        NatsServer::start_with(binary, &[])
    }

    /// A server with JetStream, storing in its own temporary directory (kept across
    /// [`restart`](Self::restart), removed on drop).
    pub fn start_jetstream(binary: &Path) -> NatsServer {
        NatsServer::start_with(binary, &["-js", "-sd", "{dir}/js"])
    }

    /// First server of a cluster (routes listen on a random port).
    pub fn start_cluster_seed(binary: &Path) -> NatsServer {
        NatsServer::start_with(
            binary,
            &[
                "--cluster",
                "nats://127.0.0.1:-1",
                "--cluster_name",
                "agentry-test",
            ],
        )
    }

    /// Another server of the cluster, routed to `seed`.
    pub fn start_cluster_member(binary: &Path, seed: &NatsServer) -> NatsServer {
        let route = seed
            .cluster_url
            .clone()
            .expect("the seed listens for routes");
        NatsServer::start_with(
            binary,
            &[
                "--cluster",
                "nats://127.0.0.1:-1",
                "--cluster_name",
                "agentry-test",
                "--routes",
                &route,
            ],
        )
    }

    /// A server with `extra` arguments (`{dir}` stands for its temporary directory).
    pub fn start_with(binary: &Path, extra: &[&str]) -> NatsServer {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("agentry-remote-nats-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut args: Vec<String> = vec!["-a".into(), "127.0.0.1".into(), "-p".into(), "-1".into()];
        let dir_str = dir.to_string_lossy();
        args.extend(extra.iter().map(|s| s.replace("{dir}", &dir_str)));
        let mut s = NatsServer {
            child: None,
            url: String::new(),
            port: 0,
            cluster_url: None,
            dir,
            binary: binary.to_path_buf(),
            args,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("nats-server.log")).expect("log file");
        let child = Command::new(&self.binary)
            .args(&self.args)
            .arg("--ports_file_dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("nats-server starts");
        let ports = self.dir.join(format!("nats-server_{}.ports", child.id()));
        self.child = Some(child);
        let t0 = Instant::now();
        loop {
            if let Ok(s) = std::fs::read_to_string(&ports)
                && let Some(url) = first_url(&s, "\"nats\"")
            {
                self.port = url
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("port");
                self.url = url;
                self.cluster_url = first_url(&s, "\"cluster\"");
                let _ = std::fs::remove_file(&ports);
                return;
            }
            assert!(t0.elapsed() < WAIT, "nats-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the server (by pid) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same client port.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "kill it first");
        let port = self.port.to_string();
        if let Some(i) = self.args.iter().position(|a| a == "-p") {
            self.args[i + 1] = port;
        }
        let t0 = Instant::now();
        loop {
            self.spawn();
            // The port may linger for a moment; a failed start exits at once.
            std::thread::sleep(Duration::from_millis(50));
            let alive = self
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
            if alive && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            self.kill();
            assert!(
                t0.elapsed() < WAIT,
                "nats-server did not restart on port {}",
                self.port
            );
        }
    }
}

fn first_url(ports_json: &str, key: &str) -> Option<String> {
    let i = ports_json.find(key)?;
    let rest = &ports_json[i..];
    let j = rest.find("nats://")?;
    let r = &rest[j..];
    Some(r[..r.find('"').unwrap_or(r.len())].to_string())
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// ---------- waiting ----------

/// Polls `cond` until it holds or `WAIT` passes; returns whether it held.
pub fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if t0.elapsed() > WAIT {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ---------- agents ----------

/// Collects every `T` it gets (directly, or from a multi mbox as `Arc<T>`).
pub struct Collector<T> {
    pub seen: Arc<Mutex<Vec<T>>>,
    from: Option<MultiMbox>,
}

impl<T: Send + Sync + Clone + 'static> Collector<T> {
    pub fn new(from: Option<&MultiMbox>) -> (Self, Arc<Mutex<Vec<T>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (
            Collector {
                seen: Arc::clone(&seen),
                from: from.cloned(),
            },
            seen,
        )
    }
}

impl<T: Send + Sync + Clone + 'static> Agent for Collector<T> {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Collector<T>, _: &mut Ctx<Collector<T>>, m: T| {
            c.seen.lock().expect("lock").push(m)
        })?;
        if let Some(from) = self.from.clone() {
            def.from(&from).on(
                |c: &mut Collector<T>, _: &mut Ctx<Collector<T>>, m: Arc<T>| {
                    c.seen.lock().expect("lock").push((*m).clone())
                },
            )?;
        }
        Ok(())
    }
}

pub fn len<T>(v: &Arc<Mutex<Vec<T>>>) -> usize {
    v.lock().expect("lock").len()
}

/// Serves `RemoteRequest<Add, Sum>`.
pub struct Adder;

impl Agent for Adder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |_: &mut Adder, _: &mut Ctx<Adder>, req: agentry_remote::RemoteRequest<Add, Sum>| {
                let s = Sum(req.query().a + req.query().b);
                let _ = req.reply(s);
            },
        )?;
        Ok(())
    }
}

/// An environment that outlives its coops until stopped.
pub fn env() -> Env {
    Env::builder().autoshutdown(false).build().expect("env")
}

pub fn nats_gateway(env: &EnvHandle, url: &str, ns: &str) -> Gateway {
    Gateway::builder(&registry())
        .namespace(ns)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .connect_nats(env, url)
        .expect("gateway connects")
}

/// A multi mbox that collects `RemoteEvent`s.
pub fn event_log(env: &EnvHandle) -> (MultiMbox, Arc<Mutex<Vec<RemoteEvent>>>) {
    let events = env.create_mbox();
    let (c, seen) = Collector::<RemoteEvent>::new(Some(&events));
    env.register_agent(c).expect("event collector");
    (events, seen)
}

pub fn register<A: Agent>(env: &EnvHandle, a: A) -> Mbox {
    env.register_agent(a).expect("registered")
}

// ---------- child processes ----------

pub const CHILD_ROLE: &str = "AGENTRY_REMOTE_CHILD";

/// The child's role, if this process is a child.
pub fn child_role() -> Option<String> {
    std::env::var(CHILD_ROLE).ok()
}

/// A child process: this test binary running only `test_name` with `role` and `args`.
pub struct ChildProc {
    child: Child,
    lines: Receiver<String>,
}

impl ChildProc {
    pub fn spawn(test_name: &str, role: &str, args: &[(&str, &str)]) -> ChildProc {
        let exe = std::env::current_exe().expect("test binary");
        let mut cmd = Command::new(exe);
        cmd.args([test_name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ROLE, role)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in args {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("child starts");
        let out = child.stdout.take().expect("piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                // The harness may print "test name ... " on the same line first.
                if let Some(i) = line.find("@@ ") {
                    let _ = tx.send(line[i + 3..].to_owned());
                }
            }
        });
        ChildProc { child, lines }
    }

    /// The next protocol line (printed by the child as `@@ <line>`).
    pub fn expect_line(&self) -> String {
        match self.lines.recv_timeout(WAIT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("child said nothing within {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("child exited early"),
        }
    }

    /// Kills the child with SIGKILL (no chance to clean up) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The next protocol line, or `None` if the child said nothing within `timeout` or
    /// has exited.
    pub fn next_line(&self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Waits for the child to exit; returns whether it succeeded.
    pub fn wait_success(mut self) -> bool {
        let t0 = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            if t0.elapsed() > WAIT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Prints a protocol line for the parent.
pub fn say(line: &str) {
    println!("@@ {line}");
}

// ---------- agents the request/reply tests share ----------

/// Serves `Add` requests by keeping their reply handles unanswered (to test what becomes of
/// pending requests).
pub struct Holder(pub Vec<RemoteReplyTo<Sum>>);
impl Agent for Holder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |h: &mut Holder, _: &mut Ctx<Holder>, r: RemoteRequest<Add, Sum>| {
                h.0.push(r.into_parts().1)
            },
        )?;
        Ok(())
    }
}

/// Collects the replies of requests sent with `send_request`.
pub struct Sink(pub Arc<Mutex<Vec<RemoteReply<Sum>>>>);
impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Sink, _: &mut Ctx<Sink>, r: RemoteReply<Sum>| {
            s.0.lock().expect("lock").push(r)
        })?;
        Ok(())
    }
}
