//! Prometheus metrics for Agentry: the environment's, dispatchers', agent types', TCP and
//! remote counters, queue depths and handler time, in the Prometheus text format, on an HTTP
//! endpoint you enable — or rendered for your own server.
//!
//! ```
//! use agentry::Env;
//! use agentry_metrics::Metrics;
//!
//! let env = Env::builder().queue_depth(true).handler_time(true).build()?;
//! let server = Metrics::new(env.handle()).serve("127.0.0.1:0")?; // e.g. "0.0.0.0:9464"
//! println!("scrape http://{}/metrics", server.local_addr());
//! // … run the application …
//! server.stop(); // or drop it
//! env.handle().stop();
//! env.run();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design: read when scraped, nothing on the message paths
//!
//! The runtime already counts everything it reports, in relaxed atomics it keeps anyway
//! ([`EnvStats`](agentry::EnvStats), [`DispatcherStats`](agentry::disp::DispatcherStats),
//! [`AgentTypeStats`](agentry::AgentTypeStats), `NetStats`, `ListenerStats`, `RemoteStats`).
//! An exporter *pulls* them when Prometheus scrapes: it holds handles to what it reports and
//! reads their snapshots inside a `prometheus-client`
//! [`Collector`](prometheus_client::collector::Collector). Nothing is pushed per message, no
//! registry is touched on a send or a handler: metrics cost nothing until an exporter is made,
//! and then only a scrape costs — about one lock per agent slot for the per-type totals, so a
//! scrape of an environment with a million agents takes milliseconds, not microseconds.
//!
//! Two measurements are opt-in in the core because they cost on every message, and so they
//! are exported only where they are on: queue depth (`EnvBuilder::queue_depth`,
//! `Define::track_queue_depth`) and handler time (`EnvBuilder::handler_time`,
//! `Define::measure_handler_time`).
//!
//! **Handler time is a histogram.** The core counts each timed agent's handler runs per
//! duration bucket ([`HandlerTimes`](agentry::HandlerTimes): 1 µs × 4ⁱ up to ~1.05 s, then
//! +Inf) beside their total; the exporter reports `agentry_agent_handler_seconds` per agent
//! type as a Prometheus histogram (`_bucket{le}`, `_sum`, `_count`), so
//! `histogram_quantile(0.99, rate(agentry_agent_handler_seconds_bucket[5m]))` is the p99 handler
//! time of a type, to within its bucket. The runs timed are a sample — one in 256 by default,
//! at pseudo-random intervals (`EnvBuilder::handler_time_sampling`;
//! `HandlerSampling::EVERY_RUN` times all) —, so `_count` counts the sample; message rates come
//! from `agentry_agent_messages_total`.
//!
//! # Guarantees
//!
//! - **Counters never go down.** Each is read from a counter that only grows, except at two
//!   known instants where a read may lag (an agent whose last mbox is being dropped while it is
//!   read; an io thread taking back a count for an outcome that did not happen): the exporter
//!   never reports a counter below what it reported before, so Prometheus never sees a false
//!   reset.
//! - **Exact when quiet.** With no message in flight, every counter is exactly the runtime's
//!   own count; the agent-type totals include the agents that are gone.
//! - **Per-type outcomes add up.** `agentry_agent_messages_total` has one series per outcome
//!   — `handled`, `unhandled`, `insend_handled`, `redirected`, `dropped` — and every message
//!   sent to an agent ends in exactly one, so their sum per type is what was sent to agents of
//!   that type.
//!
//! # The endpoint
//!
//! [`Metrics::serve`] answers `GET` (and `HEAD`) `/metrics` from one thread of its own, plain
//! `std::net` HTTP/1.1, one connection at a time with [`IO_TIMEOUT`] each; anything else gets
//! the proper status (400, 404, 405, 408, 431, 505) and the endpoint keeps serving. Stopping
//! or dropping the [`MetricsServer`] frees the port. An application with its own HTTP server
//! serves [`Metrics::render`] with [`CONTENT_TYPE`] instead.
//!
//! # Features
//!
//! `net` (the `agentry_net_*` families, [`MetricsBuilder::io_dispatcher`],
//! [`MetricsBuilder::listener`]) and `remote` (the `agentry_remote_*` families,
//! [`MetricsBuilder::gateway`]) are on by default; `default-features = false` builds without
//! `agentry-net` and `agentry-remote`.
//!
//! # Names and labels
//!
//! Every name starts with `agentry_`, counters end in `_total`, times are in seconds. Labels:
//! `dispatcher` (its name) and `kind` (`one_thread`, `thread_pool`, …), `agent_type` (the
//! agent's Rust type name), `outcome` and `reason` (fixed sets, listed below),
//! `io_dispatcher` (its name), `listener` and `gateway` (the names given to the builder).
//! A family with no series (no gateway added, no agent type that tracks its queue depth) is
//! left out.
//!
//! Two dispatchers that share a name and kind are reported as one series, summed. The
//! per-type series cover every agent type the environment has had, so their number is the
//! number of agent types — keep it bounded (a generic agent type makes one type per
//! instantiation).
//!
//! Label values: `outcome` is one of `handled`, `unhandled`, `insend_handled`, `redirected`,
//! `dropped`; the `reason` of `agentry_net_connections_closed_total` is one of `peer`,
//! `peer_mid_frame`, `error`, `idle`, `frame_too_big`, `write_overflow`, `by_owner`,
//! `shutdown`, `frame_timeout`, `below_min_rate`, `lifetime`; the `reason` of
//! `agentry_remote_rejected_total` is one of `unknown_type`, `wrong_version`, `malformed`,
//! `oversized`.
//!
//! ## Every metric
//!
#![doc = include_str!("../METRICS.md")]
#![forbid(unsafe_code)]

mod env;
mod error;
mod family;
mod http;
#[cfg(feature = "inspector")]
pub mod inspector;
mod metrics;
#[cfg(feature = "net")]
mod net;
#[cfg(feature = "remote")]
mod remote;
mod server;

pub use error::BuildError;
pub use metrics::{CONTENT_TYPE, Metrics, MetricsBuilder};
pub use server::{IO_TIMEOUT, MetricsServer};

/// The documented list (`METRICS.md`, the guide's chapter 11) against the code (it lists the
/// TCP and remote families too).
#[cfg(all(test, feature = "net", feature = "remote"))]
mod doc_tests;
