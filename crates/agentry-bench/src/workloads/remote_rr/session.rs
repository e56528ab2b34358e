//! A benchmark session: nats-server, the server process, and the client's environment and
//! gateways, set up once and shared by every cell (rules 1, 2 and 4 of [`super`]).

use super::client::run_agent;
use super::payload::{Dict, Payload, Plain, Zstd, record, registry, service};
use super::raw::{raw_nats, raw_tcp};
use super::server::{NAMESPACE, serve_args};
use super::{Codec, Path, RrResult, RrSpec, nats_unavailable};
use crate::harness::BenchError;
use crate::workloads::nats_server::NatsServer;
use agentry::Env;
use agentry_remote::{Gateway, RemoteMbox};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the server process may take to print `READY`, and how long the warm-up may take
/// until every served name answers.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long the server process may take to exit once its standard input is closed.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// Which nats-server the session uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Nats {
    /// Start a private one on a free loopback port; if none is installed, the NATS cells
    /// answer [`BenchError::Skip`].
    Start,
    /// Use the one running at this URL.
    Url(String),
}

/// The client side of a running benchmark: the server process, nats-server, the client's
/// environment and gateways. Dropping it shuts everything down (rule 4).
#[derive(Debug)]
#[must_use = "dropping the session stops the server process"]
pub struct Session {
    server: Child,
    env: Option<Env>,
    link: Gateway,
    tcp_addr: SocketAddr,
    /// The client's NATS gateway and the URL, when NATS is available.
    nats: Option<(Gateway, String)>,
    /// Dropped last: the server process and the gateways are gone by then.
    _nats_server: Option<NatsServer>,
}

impl Session {
    /// Starts nats-server (per `nats`), then the server process by running `server` (the
    /// caller's binary and the arguments that lead to [`serve_main`](super::serve_main);
    /// the session appends the server's own), connects the client's gateways and warms up
    /// every path until it answers.
    ///
    /// # Errors
    /// [`BenchError::Harness`] when a process, gateway or warm-up request fails.
    pub fn start(mut server: Command, nats: Nats, workers: usize) -> Result<Session, BenchError> {
        let (nats_server, url) = match nats {
            Nats::Url(url) => (None, Some(url)),
            Nats::Start => match NatsServer::binary() {
                Some(binary) => {
                    let s = NatsServer::start(binary).map_err(BenchError::Harness)?;
                    let url = s.url().to_owned();
                    (Some(s), Some(url))
                }
                None => (None, None),
            },
        };
        let mut child = server
            .args(serve_args(url.as_deref(), workers))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::Harness(format!("cannot start the server {server:?}: {e}")))?;
        let ready = read_ready(&mut child);
        let (link_addr, tcp_addr) = match ready {
            Ok(addrs) => addrs,
            Err(e) => {
                stop_child(&mut child);
                return Err(e);
            }
        };
        let connected = Client::connect(link_addr, url.as_deref());
        let client = match connected {
            Ok(c) => c,
            Err(e) => {
                stop_child(&mut child);
                return Err(e);
            }
        };
        Ok(Session {
            server: child,
            env: Some(client.env),
            link: client.link,
            tcp_addr,
            nats: client.nats.zip(url),
            _nats_server: nats_server,
        })
    }

    /// The NATS URL in use, if NATS is available.
    pub fn nats_url(&self) -> Option<&str> {
        self.nats.as_ref().map(|(_, url)| url.as_str())
    }

    /// Runs one cell.
    ///
    /// # Errors
    /// [`BenchError::Skip`] for a NATS cell without nats-server;
    /// [`BenchError::Verify`] when a reply failed or differed; others when the cell could not
    /// run.
    pub fn run(&self, spec: &RrSpec) -> Result<RrResult, BenchError> {
        if spec.k == 0 || spec.count == 0 {
            return Err(BenchError::Harness("k and count must be > 0".into()));
        }
        match spec.path {
            Path::RawTcp => raw_tcp(self.tcp_addr, spec),
            Path::RawNats => raw_nats(self.nats_url().ok_or_else(nats_unavailable)?, spec),
            Path::Link => self.run_agent(&self.link, spec),
            Path::Nats => {
                let (gw, _) = self.nats.as_ref().ok_or_else(nats_unavailable)?;
                self.run_agent(gw, spec)
            }
        }
    }

    fn run_agent(&self, gw: &Gateway, spec: &RrSpec) -> Result<RrResult, BenchError> {
        let env = self
            .env
            .as_ref()
            .expect("invariant: the environment is taken only on drop");
        let target = echo_of(gw, spec.codec)?;
        match spec.codec {
            Codec::Plain => run_agent::<Plain>(env.handle(), &target, spec),
            Codec::Zstd => run_agent::<Zstd>(env.handle(), &target, spec),
            Codec::Dict => run_agent::<Dict>(env.handle(), &target, spec),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        stop_child(&mut self.server);
        if let Some(env) = self.env.take() {
            env.handle().stop();
            env.run();
        }
    }
}

/// Closes the server's standard input (its signal to stop), waits for it, kills it after
/// the grace period.
fn stop_child(child: &mut Child) {
    drop(child.stdin.take());
    let asked = Instant::now();
    while asked.elapsed() < EXIT_GRACE {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    // Killing a child that has just exited fails harmlessly; wait reaps it either way.
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads the server's `READY <link addr> <tcp addr>` line (rule 1).
fn read_ready(child: &mut Child) -> Result<(SocketAddr, SocketAddr), BenchError> {
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| BenchError::Harness("the server's stdout is not piped".into()))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
        // The receiver gone means the session gave up waiting.
        let _ = tx.send(read);
    });
    let line = rx.recv_timeout(START_LIMIT).map_err(|_| {
        BenchError::Harness(format!("the server printed no line in {START_LIMIT:?}"))
    })??;
    let mut words = line.split_whitespace();
    let mut addr = || words.next().and_then(|w| w.parse::<SocketAddr>().ok());
    match (line.starts_with("READY "), addr(), addr(), addr()) {
        (true, _, Some(link), Some(tcp)) => Ok((link, tcp)),
        _ => Err(BenchError::Harness(format!(
            "the server did not start: `{}`",
            line.trim()
        ))),
    }
}

/// The client's environment and gateways.
struct Client {
    env: Env,
    link: Gateway,
    nats: Option<Gateway>,
}

impl Client {
    fn connect(link_addr: SocketAddr, nats_url: Option<&str>) -> Result<Client, BenchError> {
        let env = Env::builder()
            .autoshutdown(false)
            .build()
            .map_err(|e| BenchError::Harness(format!("env: {e}")))?;
        let reg = registry()?;
        let link = Gateway::builder(&reg)
            .namespace(NAMESPACE)
            .connect_link(env.handle(), link_addr)
            .map_err(|e| BenchError::Harness(format!("link: {e}")))?;
        let nats = nats_url
            .map(|url| {
                Gateway::builder(&reg)
                    .namespace(NAMESPACE)
                    .connect_nats(env.handle(), url)
                    .map_err(|e| BenchError::Harness(format!("nats: {e}")))
            })
            .transpose()?;
        let deadline = Instant::now() + START_LIMIT;
        for gw in std::iter::once(&link).chain(&nats) {
            for codec in Codec::ALL {
                warm_up(gw, codec, deadline)?;
            }
        }
        Ok(Client { env, link, nats })
    }
}

fn echo_of(gw: &Gateway, codec: Codec) -> Result<RemoteMbox, BenchError> {
    gw.mbox(service(codec))
        .map_err(|e| BenchError::Harness(format!("{}: {e}", service(codec))))
}

/// Requests until the echo of `codec` answers with its request (the server may still be
/// subscribing), or fails at `deadline`.
fn warm_up(gw: &Gateway, codec: Codec, deadline: Instant) -> Result<(), BenchError> {
    let target = echo_of(gw, codec)?;
    match codec {
        Codec::Plain => warm_up_as::<Plain>(&target, codec, deadline),
        Codec::Zstd => warm_up_as::<Zstd>(&target, codec, deadline),
        Codec::Dict => warm_up_as::<Dict>(&target, codec, deadline),
    }
}

fn warm_up_as<M: Payload>(
    target: &RemoteMbox,
    codec: Codec,
    deadline: Instant,
) -> Result<(), BenchError> {
    let query = record(0);
    loop {
        match target.request::<M, M>(M::wrap(query.clone()), Duration::from_secs(2)) {
            Ok(echo) if echo.bytes() == query.as_slice() => return Ok(()),
            Ok(_) => {
                return Err(BenchError::Verify(format!(
                    "the warm-up echo of {} differs",
                    service(codec)
                )));
            }
            Err(e) if Instant::now() > deadline => {
                return Err(BenchError::Harness(format!(
                    "{} does not answer: {e}",
                    service(codec)
                )));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}
