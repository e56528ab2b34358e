//! The product registry: every benchmark the `agentry-bench` binary runs.
//!
//! Register a benchmark by adding its module here (`mod ring;`) and its `BenchDef` to
//! [`BENCHES`]; add peer-comparison benchmarks to the `compare` group too.

mod agent_memory;
mod idle;
mod insend;
mod pingpong;
mod random_send;
mod ring;
mod sched;
mod send;
mod send_process;
mod skynet;
mod state_change;
mod support;
mod timer_churn;

use crate::harness::{BenchDef, Group, Registry};

/// Every registered benchmark, in `all` order.
pub static BENCHES: &[BenchDef] = &[
    send::BENCH,
    send_process::BENCH,
    insend::BENCH,
    state_change::BENCH,
    random_send::BENCH,
    ring::BENCH,
    pingpong::BENCH,
    skynet::BENCH,
    sched::BENCH,
    timer_churn::BENCH,
    idle::BENCH,
    agent_memory::BENCH,
];

/// Named sets of benchmarks.
pub static GROUPS: &[Group] = &[Group {
    id: "compare",
    description: "the peer comparison: agentry beside actix, ractor and kameo in the same run",
    members: &[],
}];

/// The registry the binary runs.
pub static REGISTRY: Registry = Registry::new(BENCHES, GROUPS);

#[cfg(test)]
mod tests {
    use super::REGISTRY;

    #[test]
    fn product_registry_is_sound() {
        assert_eq!(REGISTRY.problems(), Vec::<String>::new());
    }
}
