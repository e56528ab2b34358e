//! Every registered benchmark computes and checks its own result (counts, sums); here each one
//! runs once at `Scale::Smoke` so that a wrong result fails the test suite. Nothing is timed.
//! A case that cannot run here (`remote_rr` over NATS without nats-server) may skip; it is
//! printed, not counted as checked.

use agentry_bench::benches::REGISTRY;
use agentry_bench::harness::{BenchError, Scale};

#[test]
fn every_benchmark_verifies_its_result_at_smoke_scale() {
    let mut checked = 0;
    for bench in REGISTRY.benches() {
        for mut case in bench.build_cases(Scale::Smoke) {
            let label = format!("{} / {}", bench.id, case.meta().label);
            match case.run_once() {
                Ok(sample) => {
                    let declared: Vec<&str> =
                        case.phases().iter().map(|p| p.name.as_str()).collect();
                    let reported: Vec<&str> =
                        sample.phases().iter().map(|p| p.name.as_str()).collect();
                    assert_eq!(declared, reported, "{label}: phases");
                }
                Err(BenchError::Skip(why)) => {
                    eprintln!("{label}: skipped: {why}");
                    continue;
                }
                Err(e) => panic!("{label}: {e}"),
            }
            checked += 1;
        }
    }
    assert!(
        checked >= REGISTRY.benches().len(),
        "every benchmark has at least one case"
    );
}
