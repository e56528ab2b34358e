//! Workloads that need more than an environment and a few agents: a client and servers over
//! real sockets, io threads, another process. Each is driven by the benchmark of the same
//! name in [`benches`](crate::benches) (`remote_rr` also by the `remote_rr` binary).
//!
//! - [`tcp_echo`]: SObjectizer 4.4 b5 `tcp_echo_client_server` — agentry's echo server
//!   (channels on an `agentry-net` io dispatcher) and a plain blocking `std::net` one, with
//!   the same client.
//! - [`io_ttl`]: CSO's TTL echo, variants 4 and 5 (objects on the io threads of an
//!   `agentry-net` io dispatcher, woken through eventfd); variants 1–3 live in
//!   `benches/ttl.rs`.
//! - [`remote_rr`]: SObjectizer 4.4 b5 `server_client_speed` — request/reply with an echo
//!   agent in another process over the direct link and NATS (`agentry-remote`), beside raw
//!   TCP and raw `async-nats`.
//! - [`nats_server`]: a private nats-server on a loopback port, for `remote_rr` and the
//!   soak.
//!
//! # Ground rules
//! 1. A workload uses only the public API of the crates it measures, as a user would: what
//!    it cannot do from outside, a user could not either.
//! 2. A workload is specified by a plain struct (`EchoSpec`, `TtlSpec`, `RrSpec`), checks its
//!    own result (every echo, every handled message, every reply) and returns raw figures
//!    (counts and durations); the benchmark module declares the cases and turns the
//!    figures into samples.
//! 3. Errors are the harness's [`BenchError`](crate::harness::BenchError): a wrong result is
//!    `Verify`, something missing here (nats-server) is `Skip`, anything that could not be
//!    set up (a socket, an environment, a process, a time limit reached) is `Harness`.

pub mod io_ttl;
pub mod nats_server;
pub mod remote_rr;
pub mod tcp_echo;
