//! Every implementation of the peer comparison — agentry and each peer, on both runtimes —
//! runs every workload once at `Scale::Smoke` in this process and verifies its own result
//! (counts, sums). Nothing is timed.

use agentry_bench::compare::{Impl, Runtime, WorkloadId, run_in_process};
use agentry_bench::harness::Scale;

#[test]
fn every_implementation_verifies_every_workload_at_smoke_scale() {
    let mut checked = 0;
    for &imp in Impl::ALL {
        for runtime in Runtime::ALL {
            for workload in WorkloadId::ALL {
                let label = format!("{} / {} / {}", workload.name(), imp.name(), runtime.name());
                let sample = run_in_process(workload, imp, runtime, Scale::Smoke)
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                let phases: Vec<&str> = sample.phases().iter().map(|p| p.name.as_str()).collect();
                assert_eq!(phases, [workload.name()], "{label}");
                assert!(sample.phases()[0].units > 0, "{label}");
                checked += 1;
            }
        }
    }
    // agentry alone without the `peers` feature; with it, three peers beside it.
    assert_eq!(checked, Impl::ALL.len() * 2 * WorkloadId::ALL.len());
}

#[cfg(feature = "peers")]
#[test]
fn the_peers_are_built_in() {
    let names: Vec<&str> = Impl::ALL.iter().map(|i| i.name()).collect();
    assert_eq!(names, ["agentry", "actix", "ractor", "kameo"]);
}
