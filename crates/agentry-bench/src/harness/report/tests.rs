use std::time::Duration;

use super::{bench_table, duration, failure_summary, number, rate};
use crate::harness::test_support::ring_report;
use crate::harness::{
    BaselineRef, BenchError, Case, MeasureConfig, PhaseSpec, Unit, apply_ratios, measure_case,
};

#[test]
fn table_shows_every_column_and_the_ratio() {
    let mut reports = vec![ring_report("agentry", 2), ring_report("actix", 8)];
    reports[0].baselines.push(BaselineRef {
        label: None,
        impl_name: "actix".to_owned(),
    });
    apply_ratios(&mut reports);
    let table = bench_table("ring", "ring of N agents, M tokens", &reports);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "== ring: ring of N agents, M tokens");
    for header in [
        "case",
        "impl",
        "phase",
        "median",
        "min",
        "max",
        "throughput",
        "per unit",
        "seed",
        "ours/seed",
        "ratio",
    ] {
        assert!(lines[1].contains(header), "header {header} in {}", lines[1]);
    }
    assert!(lines[2].contains("one_thread N=1000 M=100") && lines[2].contains("agentry"));
    assert!(lines[2].contains("2.00 ms"), "{}", lines[2]);
    assert!(lines[2].contains("50.0M msg/s"), "{}", lines[2]);
    assert!(lines[2].contains("20.0 ns/msg"), "{}", lines[2]);
    assert!(lines[2].contains("166k msg/s"), "{}", lines[2]);
    assert!(lines[2].contains("302×"), "{}", lines[2]);
    assert!(lines[2].contains("4.00× vs actix"), "{}", lines[2]);
}

#[test]
fn failed_cases_are_shown_and_summarised() {
    let mut case = Case::builder("N=10")
        .phase(PhaseSpec::msgs("m"))
        .runner(|| Err(BenchError::Verify("sum: expected 45, got 44".to_owned())));
    case.meta.bench = "tiny".to_owned();
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    let table = bench_table("tiny", "sums", std::slice::from_ref(&report));
    assert!(
        table.contains("FAILED: verification failed: sum: expected 45, got 44"),
        "{table}"
    );
    let summary = failure_summary(&[report]).expect("a failure");
    assert!(
        summary.contains("FAILED tiny / N=10 (agentry)"),
        "{summary}"
    );
    assert_eq!(failure_summary(&[ring_report("agentry", 1)]), None);
}

#[test]
fn human_numbers() {
    assert_eq!(duration(Duration::from_nanos(812)), "812 ns");
    assert_eq!(duration(Duration::from_micros(2_100)), "2.10 ms");
    assert_eq!(duration(Duration::from_millis(1_250)), "1.25 s");
    assert_eq!(duration(Duration::from_micros(45)), "45.0 µs");
    assert_eq!(rate(4.76e7, Unit::Msg), "47.6M msg/s");
    assert_eq!(rate(17_000.0, Unit::Agent), "17.0k agents/s");
    assert_eq!(rate(500.0, Unit::Op), "500 op/s");
    assert_eq!(number(0.4123), "0.412");
}

#[test]
fn several_peers_are_all_shown_the_fastest_first_and_notes_too() {
    let mut reports = vec![
        ring_report("agentry", 2),
        ring_report("actix", 8),
        ring_report("kameo", 4),
    ];
    for peer in ["actix", "kameo"] {
        reports[0].baselines.push(BaselineRef {
            label: None,
            impl_name: peer.to_owned(),
        });
    }
    reports[2].meta.notes.push("unbounded mailboxes".to_owned());
    apply_ratios(&mut reports);
    let table = bench_table("ring", "ring", &reports);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[2].contains("2.00× vs kameo (fastest), 4.00× vs actix"),
        "{}",
        lines[2]
    );
    assert!(lines[4].contains("unbounded mailboxes"), "{}", lines[4]);
}
