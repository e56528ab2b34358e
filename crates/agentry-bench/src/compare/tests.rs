use super::{BENCHES, IDS, Impl, Runtime, Workload, WorkloadId, cases, parse_scale};
use crate::harness::Scale;

#[test]
fn ids_name_every_comparison_benchmark_in_order() {
    let ids: Vec<&str> = BENCHES.iter().map(|b| b.id).collect();
    assert_eq!(ids, IDS);
    let expected: Vec<String> = WorkloadId::ALL
        .iter()
        .map(|w| format!("compare_{}", w.name()))
        .collect();
    assert_eq!(ids, expected);
}

#[test]
fn names_on_the_child_command_line_parse_back() {
    for id in WorkloadId::ALL {
        assert_eq!(WorkloadId::parse(id.name()), Some(id));
    }
    for &imp in Impl::ALL {
        assert_eq!(Impl::parse(imp.name()), Some(imp));
    }
    for runtime in Runtime::ALL {
        assert_eq!(Runtime::parse(runtime.name()), Some(runtime));
    }
    for scale in [Scale::Smoke, Scale::Quick, Scale::Full] {
        assert_eq!(parse_scale(scale.name()), Some(scale));
    }
    assert_eq!(WorkloadId::parse("nope"), None);
}

#[test]
fn every_implementation_and_runtime_is_a_case_and_agentry_names_the_peers() {
    let cases = cases(WorkloadId::Ring, Scale::Smoke);
    assert_eq!(cases.len(), Impl::ALL.len() * Runtime::ALL.len());
    let agentry = &cases[0];
    assert_eq!(agentry.meta().impl_name, "agentry");
    assert_eq!(agentry.baselines().len(), Impl::ALL.len() - 1);
    // Same label for every implementation of a runtime: that is how ratios find their peer.
    let labels: Vec<&str> = cases.iter().map(|c| c.meta().label.as_str()).collect();
    assert!(labels[..Impl::ALL.len()].iter().all(|l| *l == labels[0]));
    let workload = Workload::at(WorkloadId::Ring, Scale::Smoke);
    assert_eq!(agentry.meta().params.len(), workload.params().len());
}

#[test]
fn units_follow_the_parameters() {
    let ttl = Workload::at(WorkloadId::Ttl, Scale::Quick);
    assert_eq!(ttl.units(), 1024 * 256);
    let skynet = Workload::at(WorkloadId::Skynet, Scale::Quick);
    assert_eq!(skynet.units(), 111_111);
    let pingpong = Workload::at(WorkloadId::Pingpong, Scale::Smoke);
    let sample = pingpong.sample(std::time::Duration::from_micros(100));
    assert_eq!(sample.phases()[0].units, 200);
    assert_eq!(sample.metrics()[0].0, "rtt_ns");
}
