//! The server process: one echo agent behind the direct link (and behind NATS when a URL is
//! given), plus the raw baselines' echo servers.
//!
//! Protocol with the client (rule 1 of [`super`]): arguments `[--nats URL]
//! [--workers N]`; one `READY <link addr> <tcp addr>` line on standard output once every
//! server is up; serve until standard input closes.

use super::payload::{Dict, Plain, Zstd, registry, service};
use crate::harness::BenchError;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
use agentry_remote::{Gateway, RemoteMessage, RemoteRequest};
use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// The subject of the raw `async-nats` echo.
pub(crate) const RAW_SUBJECT: &str = "raw.rr";
/// The namespace of both gateways.
pub(crate) const NAMESPACE: &str = "rr";

/// The arguments [`serve_main`] takes.
pub(crate) fn serve_args(nats_url: Option<&str>, workers: usize) -> Vec<String> {
    let mut args = vec!["--workers".to_owned(), workers.to_string()];
    if let Some(url) = nats_url {
        args.extend(["--nats".to_owned(), url.to_owned()]);
    }
    args
}

/// The server process's entry point: `args` are what follows the caller's serve command
/// (`[--nats URL] [--workers N]`). Returns when standard input closes.
///
/// # Errors
/// [`BenchError::Harness`] for a bad argument or a server that cannot start.
pub fn serve_main(args: &[String]) -> Result<(), BenchError> {
    let mut nats_url = None;
    let mut workers = 1;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let value = words
            .next()
            .ok_or_else(|| BenchError::Harness(format!("{word} needs a value")))?;
        match word.as_str() {
            "--nats" => nats_url = Some(value.clone()),
            "--workers" => {
                workers = value
                    .parse()
                    .map_err(|_| BenchError::Harness(format!("--workers {value}: not a number")))?;
            }
            _ => return Err(BenchError::Harness(format!("unknown argument {word}"))),
        }
    }
    serve(nats_url.as_deref(), workers)
}

/// The server agent: echoes every request.
struct Echo;

impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        fn echo<M: RemoteMessage>(_: &mut Echo, _: &mut Ctx<Echo>, r: RemoteRequest<M, M>) {
            let (query, reply) = r.into_parts();
            // A refused reply reaches the client as a failed request, which it reports.
            let _ = reply.reply(query);
        }
        def.on(echo::<Plain>)?.on(echo::<Zstd>)?.on(echo::<Dict>)?;
        Ok(())
    }
}

fn serve_echo(gw: &Gateway, echo: &Mbox) -> Result<(), BenchError> {
    let served = gw
        .serve::<Plain, Plain>(service(super::Codec::Plain), echo)
        .and_then(|_| gw.serve::<Zstd, Zstd>(service(super::Codec::Zstd), echo))
        .and_then(|_| gw.serve::<Dict, Dict>(service(super::Codec::Dict), echo));
    served
        .map(drop)
        .map_err(|e| BenchError::Harness(format!("serve: {e}")))
}

fn serve(nats_url: Option<&str>, workers: usize) -> Result<(), BenchError> {
    let env = Env::builder()
        .autoshutdown(false)
        .build()
        .map_err(|e| BenchError::Harness(format!("env: {e}")))?;
    let h = env.handle();
    let echo = h
        .register_agent(Echo)
        .map_err(|e| BenchError::Harness(format!("echo agent: {e}")))?;
    let reg = registry()?;
    let link = Gateway::builder(&reg)
        .namespace(NAMESPACE)
        .listen_link(h, "127.0.0.1:0")
        .map_err(|e| BenchError::Harness(format!("link: {e}")))?;
    serve_echo(&link, &echo)?;
    let link_addr = link
        .local_addr()
        .ok_or_else(|| BenchError::Harness("the link has no local address".into()))?;
    // Kept alive until the end: the NATS gateway and the raw responder's runtime.
    let mut nats = None;
    let mut runtime = None;
    if let Some(url) = nats_url {
        let gw = Gateway::builder(&reg)
            .namespace(NAMESPACE)
            .worker_threads(workers)
            .connect_nats(h, url)
            .map_err(|e| BenchError::Harness(format!("nats: {e}")))?;
        serve_echo(&gw, &echo)?;
        nats = Some(gw);
        runtime = Some(raw_nats_echo(url)?);
    }
    let tcp = TcpListener::bind("127.0.0.1:0")?;
    let tcp_addr = tcp.local_addr()?;
    std::thread::spawn(move || {
        for stream in tcp.incoming().flatten() {
            std::thread::spawn(move || tcp_echo(stream));
        }
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY {link_addr} {tcp_addr}")?;
    out.flush()?;
    drop(out);
    let mut line = String::new();
    // Any end of standard input (a closed pipe or an error) means stop.
    let _ = std::io::stdin().lock().read_line(&mut line);
    h.stop();
    env.run();
    drop((nats, link, runtime));
    Ok(())
}

/// The raw `async-nats` echo: answers every request on [`RAW_SUBJECT`] with its payload.
fn raw_nats_echo(url: &str) -> Result<tokio::runtime::Runtime, BenchError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let client = rt
        .block_on(async_nats::connect(url))
        .map_err(|e| BenchError::Harness(format!("raw nats: {e}")))?;
    let mut sub = rt
        .block_on(client.subscribe(RAW_SUBJECT))
        .map_err(|e| BenchError::Harness(format!("raw nats subscribe: {e}")))?;
    let echo = client.clone();
    rt.spawn(async move {
        use futures_util::StreamExt;
        while let Some(m) = sub.next().await {
            if let Some(reply) = m.reply {
                // A lost reply shows up as the client's failed request.
                let _ = echo.publish(reply, m.payload).await;
            }
        }
    });
    // `flush` only empties the client's buffer; a request answered by the echo itself proves
    // the server has the subscription before READY (else the benchmark's first requests could
    // meet no responder).
    rt.block_on(async {
        for _ in 0..50 {
            let probe = client.request(RAW_SUBJECT, bytes::Bytes::from_static(b"ready"));
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(100), probe).await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(BenchError::Harness(
            "the raw echo's subscription never answered".into(),
        ))
    })?;
    Ok(rt)
}

/// The raw TCP echo of one connection.
fn tcp_echo(mut s: TcpStream) {
    let _ = s.set_nodelay(true);
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
}
