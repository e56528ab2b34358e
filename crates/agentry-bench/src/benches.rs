//! The product registry: every benchmark the `agentry-bench` binary runs.
//!
//! Register a benchmark by adding its module here (`mod ring;`) and its `BenchDef` to
//! [`BENCHES`]. The peer comparison (`crate::compare`) registers its own benchmarks as
//! extras, run by the `compare` group and never by `all`; it reuses the workloads of the
//! modules declared `pub(crate)` here.

mod agent_memory;
mod async_rr;
mod cluster;
mod event_priority;
pub(crate) mod fan_in;
pub(crate) mod idle;
mod insend;
mod observability;
pub(crate) mod pingpong;
mod random_send;
mod remote_rr;
mod remote_stream;
pub(crate) mod ring;
mod savina;
mod sched;
mod send;
pub(crate) mod send_process;
pub(crate) mod skynet;
mod spawn;
mod state_change;
pub(crate) mod support;
mod tcp_echo;
mod timer_accuracy;
mod timer_churn;
pub(crate) mod ttl;

pub use cluster::{NODE_COMMAND as CLUSTER_NODE_COMMAND, node_main as cluster_node_main};
pub use remote_rr::{
    SERVER_COMMAND as REMOTE_RR_SERVER_COMMAND, server_main as remote_rr_server_main,
};

use crate::harness::{BenchDef, Group, Registry};

/// Every registered benchmark, in `all` order.
pub static BENCHES: &[BenchDef] = &[
    send::BENCH,
    send_process::BENCH,
    insend::BENCH,
    state_change::BENCH,
    event_priority::BENCH,
    random_send::BENCH,
    ring::BENCH,
    pingpong::BENCH,
    skynet::BENCH,
    spawn::BENCH,
    ttl::BENCH,
    fan_in::BENCH,
    savina::BENCH,
    sched::BENCH,
    timer_churn::BENCH,
    timer_accuracy::BENCH,
    tcp_echo::BENCH,
    remote_rr::BENCH,
    remote_stream::BENCH,
    async_rr::BENCH,
    cluster::BENCH,
    idle::BENCH,
    agent_memory::BENCH,
    observability::BENCH,
];

/// Named sets of benchmarks.
pub static GROUPS: &[Group] = &[Group {
    id: "compare",
    description: "the peer comparison: agentry beside actix, ractor and kameo in the same run",
    members: crate::compare::IDS,
}];

/// The registry the binary runs.
pub static REGISTRY: Registry = Registry::new(BENCHES, GROUPS).with_extras(crate::compare::BENCHES);

#[cfg(test)]
mod tests {
    use super::REGISTRY;

    #[test]
    fn product_registry_is_sound() {
        assert_eq!(REGISTRY.problems(), Vec::<String>::new());
    }
}
