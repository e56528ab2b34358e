//! `remote_rr` — SObjectizer 4.4 b5's `server_client_speed`, as a command line over
//! `agentry_bench::workloads::remote_rr` (the workload, its checks and the server process
//! live there; `agentry-bench remote_rr` runs the same cells with the seed's figures and
//! ratios, at the harness's sizes).
//!
//! ```text
//! cargo run --release -p agentry-bench --bin remote_rr            # everything
//! cargo run --release -p agentry-bench --bin remote_rr -- --count 10000 --k 1,1000
//! ```
//!
//! Options: `--count N` (default 50,000), `--k 1,10,…`, `--seconds S` (per cell, default
//! 20), `--paths tcp,raw,nats,link`, `--codecs plain,zstd,dict`, `--workers N` (the server's
//! NATS runtime threads, default 1), `--nats-url URL` (a running nats-server instead of a
//! private one). The server process is this program re-run with `--serve`.

use agentry_bench::workloads::remote_rr::{
    Codec, Nats, Path, RECORD_SIZE, RrSpec, SEED_COMPRESSED, SEED_PLAIN, Session, serve_main,
    wire_sizes,
};
use std::process::{Command, ExitCode};
use std::time::Duration;

struct Config {
    count: usize,
    ks: Vec<usize>,
    seconds: u64,
    paths: Vec<Path>,
    codecs: Vec<Codec>,
    workers: usize,
    nats: Nats,
}

const USAGE: &str = "usage: remote_rr [--count N] [--k 1,10,…] [--seconds S] \
[--paths tcp,raw,nats,link] [--codecs plain,zstd,dict] [--workers N] [--nats-url URL]";

/// Options that take a value.
const OPTIONS: [&str; 7] = [
    "--count",
    "--k",
    "--seconds",
    "--paths",
    "--codecs",
    "--workers",
    "--nats-url",
];

fn parse(args: &[String]) -> Result<Config, String> {
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        if !OPTIONS.contains(&a.as_str()) {
            return Err(format!("unknown argument {a:?}\n{USAGE}"));
        }
        if rest.next().is_none() {
            return Err(format!("{a} needs a value\n{USAGE}"));
        }
    }
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    let number = |name: &str, default: usize| {
        arg(name).map_or(Ok(default), |v| {
            v.parse().map_err(|_| format!("{name} {v}: not a number"))
        })
    };
    let list = |name: &str| arg(name).map(|v| v.split(',').map(str::to_owned).collect::<Vec<_>>());
    let ks = match list("--k") {
        None => vec![1, 10, 100, 1000],
        Some(ks) => ks
            .iter()
            .map(|k| k.parse().map_err(|_| format!("--k {k}: not a number")))
            .collect::<Result<_, _>>()?,
    };
    let paths = match list("--paths") {
        None => Path::ALL.to_vec(),
        Some(names) => names
            .iter()
            .map(|n| {
                Path::ALL
                    .into_iter()
                    .find(|p| p.name() == n)
                    .ok_or_else(|| format!("--paths: unknown path {n}"))
            })
            .collect::<Result<_, _>>()?,
    };
    let codecs = match list("--codecs") {
        None => Codec::ALL.to_vec(),
        Some(names) => names
            .iter()
            .map(|n| {
                Codec::ALL
                    .into_iter()
                    .find(|c| c.name() == n)
                    .ok_or_else(|| format!("--codecs: unknown codec {n}"))
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(Config {
        count: number("--count", 50_000)?,
        ks,
        seconds: number("--seconds", 20)? as u64,
        paths,
        codecs,
        workers: number("--workers", 1)?,
        nats: arg("--nats-url").map_or(Nats::Start, |u| Nats::Url(u.clone())),
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--serve") {
        return match serve_main(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("remote_rr server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match parse(&args)
        .map_err(|e| e.to_string())
        .and_then(|cfg| run(&cfg))
    {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("remote_rr: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs every selected cell and prints one row per K; returns whether every cell passed.
fn run(cfg: &Config) -> Result<bool, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program: {e}"))?;
    let mut server = Command::new(exe);
    server.arg("--serve");
    let session =
        Session::start(server, cfg.nats.clone(), cfg.workers).map_err(|e| e.to_string())?;
    let (plain, zstd) = wire_sizes().map_err(|e| e.to_string())?;
    println!(
        "remote_rr: {} requests of {RECORD_SIZE} B per cell (postcard {plain} B, zstd-1 {zstd} B), K = {:?}, ≤ {} s per cell",
        cfg.count, cfg.ks, cfg.seconds
    );
    let mut columns = Vec::new();
    for path in &cfg.paths {
        if path.is_agentry() {
            columns.extend(cfg.codecs.iter().map(|c| (*path, *c)));
        } else {
            columns.push((*path, Codec::Plain));
        }
    }
    let title = |(p, c): &(Path, Codec)| {
        if p.is_agentry() {
            format!("{} {}", p.name(), c.name())
        } else {
            p.name().to_owned()
        }
    };
    let titles: Vec<String> = columns.iter().map(title).collect();
    println!("| K | {} |", titles.join(" | "));
    println!("|---|{}", "---|".repeat(columns.len()));
    let mut passed = true;
    for &k in &cfg.ks {
        let mut row = Vec::new();
        for &(path, codec) in &columns {
            let spec = RrSpec {
                path,
                codec,
                k,
                count: cfg.count,
                limit: Duration::from_secs(cfg.seconds),
            };
            match session.run(&spec) {
                Ok(r) => {
                    let partial = if r.requests < spec.expected() {
                        "*"
                    } else {
                        ""
                    };
                    row.push(format!("{:.0}{partial}", r.per_sec()));
                }
                Err(e) => {
                    eprintln!("K={k} {}: {e}", title(&(path, codec)));
                    // A NATS cell without nats-server is a skip, not a failure.
                    passed &= !e.is_failure();
                    row.push("-".to_owned());
                }
            }
        }
        println!("| {k} | {} |", row.join(" | "));
    }
    println!("(requests/s; * = stopped at the time limit before --count)");
    let seed = |s: &[(usize, f64)]| {
        s.iter()
            .map(|(k, r)| format!("K={k}: {r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "seed (SObjectizer 4.4 b5, 2007): {}; zip: {}",
        seed(&SEED_PLAIN),
        seed(&SEED_COMPRESSED)
    );
    Ok(passed)
}
