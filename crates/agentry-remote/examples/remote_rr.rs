//! `remote_rr` — SObjectizer 4.4 b5's `server_client_speed`, today.
//!
//! Workload (fixed): a client agent in this process sends 256-byte requests to a server
//! agent in another process, in groups of K = 1, 10, 100, 1000 outstanding requests (send
//! K, await all K replies, repeat), `--count` (default 50,000) requests per cell; the server
//! echoes each request back. Cells: over NATS and over the direct link, each with
//! compression off, zstd level 1, and zstd level 1 with a 4 KiB dictionary trained on 3,000
//! records of the same shape; beside them, in the same run, raw `async-nats` request/reply
//! (`Client::request`, K futures at once) and a raw `std::net` TCP round trip (K × 256 bytes
//! written, K × 256 read back). Every cell checks its result (each reply equals its
//! request) and is bounded by `--count` and `--seconds` (default 20 s).
//!
//! ```text
//! cargo run --release -p agentry-remote --example remote_rr            # everything
//! cargo run --release -p agentry-remote --example remote_rr -- --count 10000 --k 1,1000
//! ```
//!
//! Options: `--count N`, `--k 1,10,…`, `--seconds S`, `--paths tcp,raw,nats,link`,
//! `--codecs plain,zstd,dict`, `--workers N` (the NATS gateways' runtime threads, default 1),
//! `--nats-url URL`. The server process is this program re-run with `--serve`. nats-server is started on a
//! free loopback port (`--nats-url` uses a running one instead).

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle};
use agentry_remote::{
    Compression, Gateway, Registry, RemoteMbox, RemoteMessage, RemoteReply, RemoteRequest,
    train_dictionary,
};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SIZE: usize = 256;
const DICT: u32 = 1;

/// A 256-byte actor-like record (compressible the way real messages are).
fn record(i: u64) -> Vec<u8> {
    let mut s = format!(
        "{{\"from\":\"node-03/agent-sensor-{:04}\",\"to\":\"node-01/collector\",\"seq\":{i},\"tags\":[\"temp\",\"hall-{}\",\"east\"],\"note\":\"",
        i % 9973,
        i % 17
    );
    while s.len() < SIZE - 2 {
        s.push_str(["nominal ", "steady ", "ok "][(i as usize + s.len()) % 3]);
    }
    s.truncate(SIZE - 2);
    s.push_str("\"}");
    s.into_bytes()
}

macro_rules! payload_type {
    ($name:ident) => {
        #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
        struct $name(#[serde(with = "bytes_as_seq")] Vec<u8>);
    };
}
payload_type!(Plain);
payload_type!(Zstd);
payload_type!(Dict);

/// Vec<u8> as postcard bytes (length + raw bytes).
mod bytes_as_seq {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        <Vec<u8>>::deserialize(d)
    }
}

fn registry() -> Registry {
    let r = Registry::new();
    let samples: Vec<Vec<u8>> = (1_000_000..1_003_000)
        .map(|i| r.encode_sample(&Dict(record(i))).expect("sample"))
        .collect();
    let dict = train_dictionary(&samples, 4096).expect("dictionary");
    r.add_dictionary(DICT, &dict).expect("dictionary");
    r.register::<Plain>("rr.Plain", 1).expect("register");
    r.register_with::<Zstd>("rr.Zstd", 1, Compression::zstd().with_threshold(0))
        .expect("register");
    r.register_with::<Dict>("rr.Dict", 1, Compression::zstd_dict(DICT).with_threshold(0))
        .expect("register");
    r
}

/// The server agent: echoes every request.
struct Echo;

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        fn echo<M: RemoteMessage>(_: &mut Echo, _: &mut Ctx<Echo>, r: RemoteRequest<M, M>) {
            let (q, reply) = r.into_parts();
            let _ = reply.reply(q);
        }
        def.on(echo::<Plain>)?.on(echo::<Zstd>)?.on(echo::<Dict>)?;
        Ok(())
    }
}

fn serve_gateway(gw: &Gateway, echo: &agentry::Mbox) {
    gw.serve::<Plain, Plain>("rr.plain", echo).expect("serve");
    gw.serve::<Zstd, Zstd>("rr.zstd", echo).expect("serve");
    gw.serve::<Dict, Dict>("rr.dict", echo).expect("serve");
}

/// The server process: the same echo agent behind NATS and behind a link, plus the raw
/// baselines' echo servers.
fn serve(nats_url: &str, workers: usize) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let echo = h.register_agent(Echo).expect("echo");
    let reg = registry();
    let nats = Gateway::builder(&reg)
        .namespace("rr")
        .worker_threads(workers)
        .connect_nats(h, nats_url)
        .expect("nats");
    serve_gateway(&nats, &echo);
    let link = Gateway::builder(&reg)
        .namespace("rr")
        .listen_link(h, "127.0.0.1:0")
        .expect("link");
    serve_gateway(&link, &echo);
    // Raw async-nats echo responder.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let url = nats_url.to_owned();
    rt.spawn(async move {
        use futures_util::StreamExt;
        let client = async_nats::connect(url).await.expect("raw nats");
        let mut sub = client.subscribe("raw.rr").await.expect("subscribe");
        while let Some(m) = sub.next().await {
            if let Some(reply) = m.reply {
                let _ = client.publish(reply, m.payload).await;
            }
        }
    });
    // Raw TCP echo.
    let tcp = TcpListener::bind("127.0.0.1:0").expect("tcp");
    let tcp_addr = tcp.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in tcp.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = s.set_nodelay(true);
                let mut s = s;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    println!("READY {} {}", link.local_addr().expect("bound"), tcp_addr);
    // Stop when the client closes our stdin.
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    h.stop();
    env.run();
}

/// The client agent: groups of K outstanding requests until `total` are answered.
struct RrClient<M> {
    target: RemoteMbox,
    k: usize,
    total: usize,
    sent: usize,
    outstanding: usize,
    make: fn(Vec<u8>) -> M,
    expect: Vec<Vec<u8>>,
    errors: usize,
    started: Instant,
    deadline: Instant,
    done: mpsc::Sender<(usize, usize, Duration)>,
}

impl<M: RemoteMessage + Clone + PartialEq> RrClient<M> {
    fn send_group(&mut self, ctx: &mut Ctx<Self>) {
        for _ in 0..self.k {
            let i = self.sent;
            let m = (self.make)(self.expect[i % self.expect.len()].clone());
            if self
                .target
                .send_request::<M, M>(m, Duration::from_secs(30), ctx.mbox())
                .is_err()
            {
                self.errors += 1;
            } else {
                self.outstanding += 1;
            }
            self.sent += 1;
        }
    }
}

impl<M: RemoteMessage + Clone + PartialEq> Agent for RrClient<M> {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |c: &mut RrClient<M>, ctx: &mut Ctx<RrClient<M>>, r: RemoteReply<M>| {
                if r.result.is_err() {
                    c.errors += 1;
                }
                c.outstanding -= 1;
                if c.outstanding == 0 {
                    if c.sent >= c.total || Instant::now() > c.deadline {
                        let _ = c.done.send((c.sent, c.errors, c.started.elapsed()));
                    } else {
                        c.send_group(ctx);
                    }
                }
            },
        )?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) {
        self.started = Instant::now();
        self.send_group(ctx);
    }
}

struct Config {
    count: usize,
    ks: Vec<usize>,
    seconds: u64,
    /// Which columns to measure (`tcp,raw,nats,link`; default all).
    paths: Vec<String>,
    /// Which compressions (`plain,zstd,dict`; default all).
    codecs: Vec<String>,
}

impl Config {
    fn has(&self, p: &str) -> bool {
        self.paths.iter().any(|x| x == p)
    }
    fn codec(&self, c: &str) -> bool {
        self.codecs.iter().any(|x| x == c)
    }
}

fn run_agent<M: RemoteMessage + Clone + PartialEq>(
    h: &EnvHandle,
    target: &RemoteMbox,
    make: fn(Vec<u8>) -> M,
    k: usize,
    cfg: &Config,
) -> (usize, usize, Duration) {
    let (tx, rx) = mpsc::channel();
    let expect: Vec<Vec<u8>> = (0..1000).map(record).collect();
    let mut coop = h.new_coop();
    coop.add(RrClient {
        target: target.clone(),
        k,
        total: cfg.count,
        sent: 0,
        outstanding: 0,
        make,
        expect,
        errors: 0,
        started: Instant::now(),
        deadline: Instant::now() + Duration::from_secs(cfg.seconds),
        done: tx,
    });
    let id = h.register_coop(coop).expect("client");
    let r = rx
        .recv_timeout(Duration::from_secs(cfg.seconds + 60))
        .expect("cell finished");
    let _ = h.deregister_coop(id, agentry::DeregReason::Normal);
    r
}

fn raw_nats(url: &str, k: usize, cfg: &Config) -> (usize, usize, Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        use futures_util::StreamExt;
        use futures_util::stream::FuturesUnordered;
        let client = async_nats::connect(url).await.expect("raw client");
        let payloads: Vec<bytes::Bytes> = (0..1000).map(|i| record(i).into()).collect();
        let deadline = Instant::now() + Duration::from_secs(cfg.seconds);
        let t0 = Instant::now();
        let (mut sent, mut errors) = (0, 0);
        while sent < cfg.count && Instant::now() < deadline {
            let mut group: FuturesUnordered<_> = (0..k)
                .map(|j| {
                    let p = payloads[(sent + j) % payloads.len()].clone();
                    let c = client.clone();
                    async move { c.request("raw.rr", p.clone()).await.map(|m| m.payload == p) }
                })
                .collect();
            while let Some(r) = group.next().await {
                if !matches!(r, Ok(true)) {
                    errors += 1;
                }
            }
            sent += k;
        }
        (sent, errors, t0.elapsed())
    })
}

fn raw_tcp(addr: std::net::SocketAddr, k: usize, cfg: &Config) -> (usize, usize, Duration) {
    let mut s = TcpStream::connect(addr).expect("tcp");
    s.set_nodelay(true).expect("nodelay");
    let group: Vec<u8> = (0..k).flat_map(|i| record(i as u64)).collect();
    let mut back = vec![0u8; group.len()];
    let deadline = Instant::now() + Duration::from_secs(cfg.seconds);
    let t0 = Instant::now();
    let (mut sent, mut errors) = (0, 0);
    while sent < cfg.count && Instant::now() < deadline {
        s.write_all(&group).expect("write");
        s.read_exact(&mut back).expect("read");
        if back != group {
            errors += 1;
        }
        sent += k;
    }
    (sent, errors, t0.elapsed())
}

fn rate((n, _, d): (usize, usize, Duration)) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn nats_binary() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("nats-server"))
        .chain(["/usr/sbin/nats-server", "/usr/bin/nats-server"].map(Into::into))
        .find(|p| p.is_file())
}

struct NatsServer(Child, std::path::PathBuf);

impl NatsServer {
    fn start() -> (NatsServer, String) {
        let bin = nats_binary().expect("nats-server is installed (or pass --nats-url)");
        let dir = std::env::temp_dir().join(format!("remote-rr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let child = Command::new(bin)
            .args(["-a", "127.0.0.1", "-p", "-1", "--ports_file_dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server");
        let ports = dir.join(format!("nats-server_{}.ports", child.id()));
        let s = NatsServer(child, dir);
        for _ in 0..1000 {
            if let Ok(t) = std::fs::read_to_string(&ports)
                && let Some(i) = t.find("nats://")
            {
                let r = &t[i..];
                return (s, r[..r.find('"').unwrap_or(r.len())].to_owned());
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
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let workers: usize = arg("--workers").and_then(|w| w.parse().ok()).unwrap_or(1);
    if let Some(url) = arg("--serve") {
        return serve(&url, workers);
    }
    let cfg = Config {
        count: arg("--count")
            .and_then(|c| c.parse().ok())
            .unwrap_or(50_000),
        ks: arg("--k")
            .map(|k| k.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_else(|| vec![1, 10, 100, 1000]),
        seconds: arg("--seconds").and_then(|c| c.parse().ok()).unwrap_or(20),
        paths: arg("--paths")
            .unwrap_or_else(|| "tcp,raw,nats,link".into())
            .split(',')
            .map(str::to_owned)
            .collect(),
        codecs: arg("--codecs")
            .unwrap_or_else(|| "plain,zstd,dict".into())
            .split(',')
            .map(str::to_owned)
            .collect(),
    };
    let (_nats, url) = match arg("--nats-url") {
        Some(u) => (None, u),
        None => {
            let (s, u) = NatsServer::start();
            (Some(s), u)
        }
    };
    let mut server = Command::new(std::env::current_exe().expect("this program"))
        .args(["--serve", &url, "--workers", &workers.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("server process");
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("READY");
    let mut parts = line.split_whitespace().skip(1);
    let link_addr: std::net::SocketAddr = parts.next().expect("link").parse().expect("addr");
    let tcp_addr: std::net::SocketAddr = parts.next().expect("tcp").parse().expect("addr");

    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle();
    let reg = registry();
    let nats = Gateway::builder(&reg)
        .namespace("rr")
        .connect_nats(h, &url)
        .expect("nats");
    let link = Gateway::builder(&reg)
        .namespace("rr")
        .connect_link(h, link_addr)
        .expect("link");
    // Warm up (and make sure the server answers) on every path.
    for gw in [&nats, &link] {
        for name in ["rr.plain", "rr.zstd", "rr.dict"] {
            let m = gw.mbox(name).expect("name");
            let mut ok = false;
            for _ in 0..200 {
                ok = match name {
                    "rr.plain" => m
                        .request::<Plain, Plain>(Plain(record(0)), Duration::from_secs(2))
                        .is_ok(),
                    "rr.zstd" => m
                        .request::<Zstd, Zstd>(Zstd(record(0)), Duration::from_secs(2))
                        .is_ok(),
                    _ => m
                        .request::<Dict, Dict>(Dict(record(0)), Duration::from_secs(2))
                        .is_ok(),
                };
                if ok {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(ok, "{name} answers");
        }
    }
    let sizes = {
        let p = reg.encode_sample(&Plain(record(7))).expect("x").len();
        let z = zstd::bulk::compress(&reg.encode_sample(&Zstd(record(7))).expect("x"), 1)
            .expect("z")
            .len();
        (p, z)
    };
    println!(
        "remote_rr: {} requests of {SIZE} B per cell (postcard {} B, zstd-1 {} B), K = {:?}, ≤ {} s per cell",
        cfg.count, sizes.0, sizes.1, cfg.ks, cfg.seconds
    );
    println!(
        "| K | raw TCP | raw async-nats | NATS | NATS zstd | NATS dict | link | link zstd | link dict | NATS/raw | link/TCP | dict/plain (NATS, link) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut errors = 0;
    for &k in &cfg.ks {
        let cell = |r: (usize, usize, Duration), errors: &mut usize| {
            *errors += r.1;
            rate(r)
        };
        let nan = f64::NAN;
        let tcp = if cfg.has("tcp") {
            cell(raw_tcp(tcp_addr, k, &cfg), &mut errors)
        } else {
            nan
        };
        let raw = if cfg.has("raw") {
            cell(raw_nats(&url, k, &cfg), &mut errors)
        } else {
            nan
        };
        let mut ours = Vec::new();
        for (name, gw) in [("nats", &nats), ("link", &link)] {
            if !cfg.has(name) {
                ours.push((nan, nan, nan));
                continue;
            }
            let p = if cfg.codec("plain") {
                cell(
                    run_agent(h, &gw.mbox("rr.plain").expect("n"), Plain, k, &cfg),
                    &mut errors,
                )
            } else {
                nan
            };
            let z = if cfg.codec("zstd") {
                cell(
                    run_agent(h, &gw.mbox("rr.zstd").expect("n"), Zstd, k, &cfg),
                    &mut errors,
                )
            } else {
                nan
            };
            let d = if cfg.codec("dict") {
                cell(
                    run_agent(h, &gw.mbox("rr.dict").expect("n"), Dict, k, &cfg),
                    &mut errors,
                )
            } else {
                nan
            };
            ours.push((p, z, d));
        }
        let (n, l) = (ours[0], ours[1]);
        println!(
            "| {k} | {tcp:.0} | {raw:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2}, {:.2} |",
            n.0,
            n.1,
            n.2,
            l.0,
            l.1,
            l.2,
            n.0 / raw,
            l.0 / tcp,
            n.2 / n.0,
            l.2 / l.0
        );
    }
    println!(
        "seed (SObjectizer 4.4 b5, 2007): K=1: 4,800/s, K=10: 8,200, K=100: 9,300, K=1000: 10,200; zip: 2,700 / 4,500 / 4,800 / 5,000"
    );
    let s = (nats.stats(), link.stats());
    println!(
        "errors: {errors}; NATS lost {} rejected {}; link lost {} rejected {}",
        s.0.lost(),
        s.0.rejected(),
        s.1.lost(),
        s.1.rejected()
    );
    drop(server.stdin.take());
    let _ = server.wait();
    h.stop();
    env.run();
    assert_eq!(errors, 0, "every reply equals its request");
}
