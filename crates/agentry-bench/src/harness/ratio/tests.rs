use super::apply_ratios;
use crate::harness::BaselineRef;
use crate::harness::PhaseSpec;
use crate::harness::test_support::{fixed_case, report_of, ring_report};

#[test]
fn ratio_is_ours_over_theirs_and_the_fastest_peer_is_the_worst_ratio() {
    let mut ours = ring_report("agentry", 2);
    ours.baselines = vec![
        BaselineRef {
            label: None,
            impl_name: "actix".to_owned(),
        },
        BaselineRef {
            label: None,
            impl_name: "kameo".to_owned(),
        },
        BaselineRef {
            label: None,
            impl_name: "missing".to_owned(),
        },
    ];
    let mut reports = vec![ours, ring_report("actix", 10), ring_report("kameo", 4)];
    apply_ratios(&mut reports);
    let phase = &reports[0].measured().expect("measured").phases[0];
    assert_eq!(
        phase.ratios,
        vec![("actix".to_owned(), 5.0), ("kameo".to_owned(), 2.0)]
    );
    assert_eq!(phase.worst_ratio(), Some(("kameo", 2.0)));
    assert!(
        reports[1].measured().expect("measured").phases[0]
            .ratios
            .is_empty()
    );
}

#[test]
fn baseline_of_another_label_with_a_single_phase_matches() {
    let mut echo = report_of(
        "tcp_echo",
        fixed_case(
            "agents M=10000",
            "agentry",
            vec![PhaseSpec::msgs("echo")],
            vec![("echo", 4, 10_000)],
        ),
    );
    echo.baselines = vec![BaselineRef {
        label: Some("plain M=10000".to_owned()),
        impl_name: "std_net".to_owned(),
    }];
    let plain = report_of(
        "tcp_echo",
        fixed_case(
            "plain M=10000",
            "std_net",
            vec![PhaseSpec::msgs("round trip")],
            vec![("round trip", 5, 10_000)],
        ),
    );
    let mut reports = vec![echo, plain];
    apply_ratios(&mut reports);
    let phase = &reports[0].measured().expect("measured").phases[0];
    assert_eq!(
        phase.ratios,
        vec![("plain M=10000 (std_net)".to_owned(), 1.25)]
    );
}
