//! `remote_rr` (SObjectizer 4.4 b5 `server_client_speed`): a client agent sends 256-byte
//! requests to an echo agent in another process, in groups of K outstanding, over the direct
//! link and over NATS, uncompressed, with zstd and with zstd and a trained dictionary; beside
//! them, in the same run, a raw `std::net` TCP round trip and raw `async-nats`
//! request/reply with the same K. The `ratio` column is agentry / raw on the same path (and,
//! for the compressed cases, compressed / uncompressed).
//!
//! The workload and its checks (each reply equals its request) live in
//! [`crate::workloads::remote_rr`]; this module declares the cases and turns its figures into
//! samples. One session (nats-server, the server process, the client's gateways) serves
//! every case of a run: the first case to run starts it, and it stops when the last case is
//! dropped. The server process is this binary re-run as [`SERVER_COMMAND`]. Without
//! nats-server the NATS cases are skipped.

use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use crate::workloads::remote_rr::{
    self as rr, Codec, Nats, Path, RECORD_SIZE, RrSpec, SEED_COMPRESSED, SEED_PLAIN, Session,
};
use std::cell::OnceCell;
use std::process::Command;
use std::rc::Rc;
use std::time::Duration;

pub static BENCH: BenchDef = BenchDef {
    id: "remote_rr",
    description: "256-byte requests to an echo agent in another process, K outstanding; \
                  direct link and NATS (plain, zstd, zstd+dictionary) vs raw TCP and raw async-nats",
    cases,
    charts: &[ChartKind::Bars],
};

/// The hidden first argument that turns `agentry-bench` into the benchmark's server process.
pub const SERVER_COMMAND: &str = "__remote-rr-serve";

/// The server process's entry point (`agentry-bench __remote-rr-serve …`): `args` are what
/// follows [`SERVER_COMMAND`]. Returns the exit status.
#[must_use]
pub fn server_main(args: &[String]) -> u8 {
    match rr::serve_main(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{SERVER_COMMAND}: {e}");
            1
        }
    }
}

/// How long one cell may send before it stops (and fails its count).
const CELL_LIMIT: Duration = Duration::from_secs(60);

/// The session every case of one run shares, started by the first case that runs.
type Shared = Rc<OnceCell<Result<Session, String>>>;

fn cases(scale: Scale) -> Vec<Case> {
    let ks: &[usize] = scale.pick(&[1, 100], &[1, 100, 1000], &[1, 10, 100, 1000]);
    let shared: Shared = Rc::new(OnceCell::new());
    let mut cases = Vec::new();
    for &k in ks {
        let count = scale.pick(200, if k == 1 { 2_000 } else { 5_000 }, 50_000);
        for path in Path::ALL {
            let codecs: &[Codec] = if path.is_agentry() {
                &Codec::ALL
            } else {
                &[Codec::Plain]
            };
            for &codec in codecs {
                let spec = RrSpec {
                    path,
                    codec,
                    k,
                    count,
                    limit: CELL_LIMIT,
                };
                cases.push(case(spec, Rc::clone(&shared)));
            }
        }
    }
    cases
}

/// The transport's name, the case label's first word: raw and agentry cases of the same
/// transport and K share a label, so they are compared (and charted) together.
fn transport(path: Path) -> &'static str {
    if path.needs_nats() { "nats" } else { "link" }
}

fn baseline_impl(path: Path) -> &'static str {
    if path.needs_nats() {
        "async_nats"
    } else {
        "std_net"
    }
}

fn impl_name(path: Path, codec: Codec) -> String {
    match (path.is_agentry(), codec) {
        (false, _) => baseline_impl(path).to_owned(),
        (true, Codec::Plain) => "agentry".to_owned(),
        (true, codec) => format!("agentry+{}", codec.name()),
    }
}

fn case(spec: RrSpec, shared: Shared) -> Case {
    let label = format!(
        "{} K={} N={} {RECORD_SIZE} B",
        transport(spec.path),
        spec.k,
        spec.expected()
    );
    let mut builder = Case::builder(label)
        .impl_name(impl_name(spec.path, spec.codec))
        .dispatcher(if spec.path.is_agentry() {
            spec.path.name()
        } else {
            "raw"
        })
        .param("K", spec.k as u64)
        .param("N", spec.expected())
        .param("bytes", RECORD_SIZE as u64);
    let mut phase = PhaseSpec::msgs("rr");
    if spec.path.is_agentry() {
        let seeds = if spec.codec == Codec::Plain {
            &SEED_PLAIN
        } else {
            &SEED_COMPRESSED
        };
        if let Some(&(_, seed)) = seeds.iter().find(|(k, _)| *k == spec.k) {
            phase = phase.seed(seed);
        }
        builder = builder.peer(baseline_impl(spec.path));
        if spec.codec != Codec::Plain {
            builder = builder.peer("agentry");
        }
    }
    builder
        .phase(phase)
        .runner(move || run_cell(&shared, &spec))
}

fn run_cell(shared: &Shared, spec: &RrSpec) -> Result<Sample, BenchError> {
    let session = shared
        .get_or_init(start_session)
        .as_ref()
        .map_err(|why| BenchError::Harness(why.clone()))?;
    let result = session.run(spec)?;
    verify_eq(
        "requests answered, each reply equal to its request",
        spec.expected(),
        result.requests,
    )?;
    Ok(Sample::new().phase("rr", result.elapsed, result.requests))
}

fn start_session() -> Result<Session, String> {
    let mut server = Command::new(server_binary()?);
    server.arg(SERVER_COMMAND);
    Session::start(server, Nats::Start, 1).map_err(|e| e.to_string())
}

/// The `agentry-bench` binary: this process, or (in the test suite, whose binaries live in
/// `target/<profile>/deps/`) the one Cargo built beside it.
pub(crate) fn server_binary() -> Result<std::path::PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let name = format!("agentry-bench{}", std::env::consts::EXE_SUFFIX);
    let beside = exe
        .parent()
        .and_then(std::path::Path::parent)
        .map(|dir| dir.join(&name));
    std::iter::once(exe.clone())
        .chain(beside)
        .find(|p| p.file_name().is_some_and(|f| *f == *name) && p.is_file())
        .ok_or_else(|| format!("the {name} binary is not {exe:?} nor beside its directory"))
}
