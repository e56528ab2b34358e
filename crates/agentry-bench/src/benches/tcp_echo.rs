//! `tcp_echo` (SObjectizer 4.4 b5 `tcp_echo_client_server`): a client sends a 256-byte packet,
//! the server echoes it, the client checks it and sends the next. Agentry's server (channel and
//! owner agents on an `agentry-net` io dispatcher) beside a plain blocking `std::net` echo
//! server (a thread per connection) with the same client, in the same run; the `ratio`
//! column is agentry / plain (target ≥ 0.8 on one connection).
//!
//! The workload and its checks (every echo's sequence number and length) live in
//! [`crate::workloads::tcp_echo`]; this module declares the cases and turns its figures into
//! samples. Cases: the seed's single connection (with the default io loop, which blocks in
//! `epoll_wait` as soon as it is idle, and with a 50 µs busy-poll, `IoBuilder::spin`), and 100
//! connections with one request outstanding each (one and two io threads).

use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use crate::workloads::tcp_echo::{self, EchoSpec, SEED_PLAIN, SEED_SOBJECTIZER, Server};
use std::time::Duration;

pub static BENCH: BenchDef = BenchDef {
    id: "tcp_echo",
    description: "256-byte packets echoed over loopback TCP, one outstanding per connection; \
                  agentry channels vs a plain blocking std::net server",
    cases,
    charts: &[ChartKind::Bars],
};

/// The busy-poll of the spinning case (`IoBuilder::spin`): a latency setting, not a default.
const SPIN: Duration = Duration::from_micros(50);

/// The most one repetition may take before it counts as failed (a lost packet or a hang).
const RUN_LIMIT: Duration = Duration::from_secs(120);

fn cases(scale: Scale) -> Vec<Case> {
    let single = EchoSpec {
        requests: scale.pick(200, 10_000, 20_000),
        ..EchoSpec::seed()
    };
    let hundred = EchoSpec {
        requests: scale.pick(5, 100, 200),
        ..EchoSpec::hundred_connections()
    };
    let hundred_two_threads = EchoSpec {
        server_threads: 2,
        ..hundred.clone()
    };
    let single_spinning = EchoSpec {
        spin: SPIN,
        ..single.clone()
    };
    let mut cases = Vec::new();
    for spec in [single, single_spinning, hundred, hundred_two_threads] {
        let spin = if spec.spin.is_zero() {
            String::new()
        } else {
            format!(", io spin {} us", spec.spin.as_micros())
        };
        let label = format!(
            "{} conn x {} req, {} B, {} io thread(s){spin}",
            spec.connections, spec.requests, spec.packet, spec.server_threads
        );
        for server in [Server::Plain, Server::Agentry] {
            let mut case = Case::builder(label.clone())
                .param("connections", spec.connections as u64)
                .param("requests", spec.requests as u64)
                .param("packet", spec.packet as u64);
            case = match server {
                Server::Plain => case
                    .impl_name("std_net")
                    .dispatcher("thread per connection")
                    .threads(spec.connections)
                    .phase(PhaseSpec::msgs("echo").seed(SEED_PLAIN)),
                Server::Agentry => case
                    .dispatcher("io")
                    .threads(spec.server_threads)
                    .phase(PhaseSpec::msgs("echo").seed(SEED_SOBJECTIZER))
                    .peer("std_net"),
            };
            let spec = spec.clone();
            cases.push(case.runner(move || run_echo(server, &spec)));
        }
    }
    cases
}

fn run_echo(server: Server, spec: &EchoSpec) -> Result<Sample, BenchError> {
    let result = tcp_echo::run(server, spec, RUN_LIMIT)?;
    verify_eq(
        "echoes received and checked",
        (spec.connections * spec.requests) as u64,
        result.requests,
    )?;
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    Ok(Sample::new()
        .phase("echo", result.elapsed, result.requests)
        .metric("rtt_p50_us", micros(result.p50))
        .metric("rtt_p99_us", micros(result.p99)))
}
