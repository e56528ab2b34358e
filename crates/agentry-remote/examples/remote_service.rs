//! A service agent in one process, a client agent in another: over NATS and over the
//! direct TCP link.
//!
//! ```text
//! # all in one go: starts nats-server on a free port (if installed) and re-runs itself as
//! # the server process, first over NATS, then over the direct link
//! cargo run -p agentry-remote --example remote_service
//! # by hand
//! nats-server -a 127.0.0.1 -p 4222 &
//! cargo run -p agentry-remote --example remote_service -- server nats://127.0.0.1:4222
//! cargo run -p agentry-remote --example remote_service -- client nats://127.0.0.1:4222
//! cargo run -p agentry-remote --example remote_service -- server-link 127.0.0.1:7000
//! cargo run -p agentry-remote --example remote_service -- client-link 127.0.0.1:7000
//! ```
//!
//! The service (`Calculator`) answers `Add` requests with a `Sum` and publishes a `Served`
//! notice per request on the global mbox `calc.events`; the client (`Client`) sends ten
//! requests without blocking, collects the replies and the notices, then tells the service
//! to stop.

use agentry::{Agent, Ctx, Define, DefineError, Env, EnvHandle, UserError};
use agentry_remote::{Gateway, Registry, RemoteMbox, RemoteReply, RemoteRequest, RequestError};
use serde::{Deserialize, Serialize};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

#[derive(Serialize, Deserialize, Debug)]
struct Add {
    a: i64,
    b: i64,
}
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Sum(i64);
#[derive(Serialize, Deserialize, Debug)]
struct Served {
    request: u64,
}
#[derive(Serialize, Deserialize, Debug)]
struct Shutdown;

/// Both processes register the same types under the same names and versions.
fn registry() -> Registry {
    let r = Registry::new();
    r.register::<Add>("calc.Add", 1).expect("register");
    r.register::<Sum>("calc.Sum", 1).expect("register");
    r.register::<Served>("calc.Served", 1).expect("register");
    r.register::<Shutdown>("calc.Shutdown", 1)
        .expect("register");
    r
}

/// The service agent: an ordinary agent; requests arrive as `RemoteRequest`s.
struct Calculator {
    events: RemoteMbox,
    served: u64,
}

impl Agent for Calculator {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Calculator::on_add)?.on(
            |_: &mut Calculator, ctx: &mut Ctx<Calculator>, _: Shutdown| {
                println!("server: shutting down");
                ctx.stop_env();
            },
        )?;
        Ok(())
    }
}

impl Calculator {
    fn on_add(&mut self, _: &mut Ctx<Self>, req: RemoteRequest<Add, Sum>) {
        self.served += 1;
        let sum = Sum(req.query().a + req.query().b);
        if req.reply(sum).is_err() {
            eprintln!("server: reply refused (gateway closing?)");
        }
        let _ = self.events.send(Served {
            request: self.served,
        });
    }
}

/// The client's state: what came back so far.
struct Client {
    calc: RemoteMbox,
    replies: usize,
    notices: usize,
    sum: i64,
}

const REQUESTS: i64 = 10;

enum Transport {
    Nats(String),
    Listen(String),
    Connect(String),
}

fn gateway(env: &EnvHandle, t: &Transport) -> Gateway {
    let mut b = Gateway::builder(&registry());
    b.namespace("example").retry_initial_connect(true);
    match t {
        Transport::Nats(url) => b.connect_nats(env, url),
        Transport::Listen(addr) => b.listen_link(env, addr.as_str()),
        Transport::Connect(addr) => b.connect_link(env, addr.as_str()),
    }
    .expect("gateway started")
}

/// The server process.
fn server(t: Transport) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let gw = gateway(env.handle(), &t);
    let calc = env
        .handle()
        .register_agent(Calculator {
            events: gw.mbox("calc.events").expect("name"),
            served: 0,
        })
        .expect("registered");
    gw.serve::<Add, Sum>("calc", &calc).expect("serving");
    gw.subscribe::<Shutdown>("calc", &calc).expect("subscribed");
    println!("server: ready");
    env.run();
    println!("server: {:?}", gw.stats());
}

/// The client process. Returns the sum of the replies.
fn client(t: Transport) -> i64 {
    let env = Env::new().expect("env");
    let gw = gateway(env.handle(), &t);
    assert!(gw.wait_connected(Duration::from_secs(10)), "connected");
    let calc = gw.mbox("calc").expect("name");
    // Wait until the service answers (it may still be starting).
    let probe = || calc.request::<Add, Sum>(Add { a: 0, b: 0 }, Duration::from_secs(1));
    let mut tries = 0;
    while let Err(RequestError::NoResponders | RequestError::Remote(_) | RequestError::Timeout) =
        probe()
    {
        tries += 1;
        assert!(tries < 100, "the service never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    let events = env.handle().create_mbox();
    gw.subscribe::<Served>("calc.events", &events)
        .expect("subscribed");
    let sum = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut coop = env.handle().new_coop();
    coop.add(ClientWithEvents {
        inner: Client {
            calc,
            replies: 0,
            notices: 0,
            sum: 0,
        },
        done: false,
        events,
        out: Arc::clone(&sum),
    });
    env.handle().register_coop(coop).expect("registered");
    env.run();
    sum.load(std::sync::atomic::Ordering::Relaxed)
}

/// The client agent: sends requests without blocking, counts the replies and the notices
/// (which arrive through a multi mbox), then stops the service and itself.
struct ClientWithEvents {
    inner: Client,
    done: bool,
    events: agentry::MultiMbox,
    out: Arc<std::sync::atomic::AtomicI64>,
}

impl Agent for ClientWithEvents {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |c: &mut ClientWithEvents, ctx: &mut Ctx<ClientWithEvents>, r: RemoteReply<Sum>| {
                match r.result {
                    Ok(Sum(s)) => c.inner.sum += s,
                    Err(e) => eprintln!("client: request {} failed: {e}", r.id),
                }
                c.inner.replies += 1;
                c.check(ctx);
            },
        )?;
        def.from(&self.events).on(
            |c: &mut ClientWithEvents, ctx: &mut Ctx<ClientWithEvents>, _: Arc<Served>| {
                c.inner.notices += 1;
                c.check(ctx);
            },
        )?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        for i in 0..REQUESTS {
            if let Err(e) = self.inner.calc.send_request::<Add, Sum>(
                Add { a: i, b: 100 },
                Duration::from_secs(5),
                ctx.mbox(),
            ) {
                eprintln!("client: could not send: {e}");
            }
        }
        Ok(())
    }
}

impl ClientWithEvents {
    fn check(&mut self, ctx: &mut Ctx<Self>) {
        let c = &self.inner;
        // `>=`: the readiness probe may add a notice of its own.
        if !self.done && c.replies == REQUESTS as usize && c.notices >= REQUESTS as usize {
            self.done = true;
            println!(
                "client: {} replies, sum {}, {} notices",
                c.replies, c.sum, c.notices
            );
            self.out.store(c.sum, std::sync::atomic::Ordering::Relaxed);
            let _ = c.calc.send(Shutdown);
            ctx.stop_env();
        }
    }
}

/// The expected sum of the ten replies.
const EXPECTED: i64 = REQUESTS * (REQUESTS - 1) / 2 + 100 * REQUESTS;

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
        let dir =
            std::env::temp_dir().join(format!("remote-service-example-{}", std::process::id()));
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

/// Runs the server role in a child process (this program again) and the client here.
fn demo(spawn_server: impl Fn(&str, &str) -> Child) {
    match nats_server_binary() {
        Some(bin) => {
            let (_nats, url) = NatsServer::start(&bin);
            let mut srv = spawn_server("server", &url);
            let sum = client(Transport::Nats(url));
            assert_eq!(sum, EXPECTED);
            assert!(srv.wait().expect("server exits").success());
            println!("over NATS: ok");
        }
        None => println!("nats-server is not installed: skipping the NATS half"),
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut srv = spawn_server("server-link", &addr);
    let sum = client(Transport::Connect(addr));
    assert_eq!(sum, EXPECTED);
    assert!(srv.wait().expect("server exits").success());
    println!("over the direct link: ok");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["server", url] => server(Transport::Nats(url.to_string())),
        ["client", url] => println!("sum = {}", client(Transport::Nats(url.to_string()))),
        ["server-link", addr] => server(Transport::Listen(addr.to_string())),
        ["client-link", addr] => println!("sum = {}", client(Transport::Connect(addr.to_string()))),
        [] => demo(|role, arg| {
            Command::new(std::env::current_exe().expect("this program"))
                .args([role, arg])
                .spawn()
                .expect("server process")
        }),
        _ => eprintln!(
            "usage: remote_service [server|client <nats-url> | server-link|client-link <addr>]"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLE: &str = "REMOTE_SERVICE_ROLE";

    /// In the child process: the server role (in the parent: nothing).
    #[test]
    fn child_server() {
        if let (Ok(role), Ok(arg)) = (std::env::var(ROLE), std::env::var("REMOTE_SERVICE_ARG")) {
            match role.as_str() {
                "server" => server(Transport::Nats(arg)),
                _ => server(Transport::Listen(arg)),
            }
        }
    }

    #[test]
    fn service_and_client_in_two_processes() {
        if std::env::var(ROLE).is_ok() {
            return;
        }
        demo(|role, arg| {
            Command::new(std::env::current_exe().expect("test binary"))
                .args(["tests::child_server", "--exact", "--nocapture"])
                .env(ROLE, role)
                .env("REMOTE_SERVICE_ARG", arg)
                .spawn()
                .expect("server process")
        });
    }
}
