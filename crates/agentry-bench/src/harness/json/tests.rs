use serde_json::Value as Json;

use super::{machine_line, record_line};
use crate::harness::test_support::{fixed_case, report_of, ring_report};
use crate::harness::{
    BenchError, Case, MachineInfo, MeasureConfig, PhaseSpec, Record, Scale, Value, apply_ratios,
    case_records,
};

fn parse(line: &str) -> serde_json::Map<String, Json> {
    assert!(!line.contains('\n'), "one object per line: {line}");
    match serde_json::from_str::<Json>(line).expect("valid JSON") {
        Json::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn measured_message_case_has_the_benchmarks_md_fields() {
    let mut reports = vec![ring_report("agentry", 2), ring_report("actix", 8)];
    reports[0].baselines.push(crate::harness::BaselineRef {
        label: None,
        impl_name: "actix".to_owned(),
    });
    apply_ratios(&mut reports);
    let records = case_records(&reports[0]);
    assert_eq!(records.len(), 1);
    let map = parse(&record_line(&records[0]));

    for field in [
        "bench",
        "case",
        "impl",
        "dispatcher",
        "threads",
        "params",
        "messages",
        "median_s",
        "min_s",
        "max_s",
        "msgs_per_sec",
        "ns_per_msg",
        "seed_msgs_per_sec",
        "ratio",
        "phase",
    ] {
        assert!(map.contains_key(field), "missing {field} in {map:?}");
    }
    assert_eq!(map["bench"], "ring");
    assert_eq!(map["case"], "one_thread N=1000 M=100");
    assert_eq!(map["impl"], "agentry");
    assert_eq!(map["dispatcher"], "one_thread");
    assert_eq!(map["threads"], 1);
    assert_eq!(map["params"], serde_json::json!({"N": 1000, "M": 100}));
    assert_eq!(map["phase"], "ringing");
    assert_eq!(map["messages"], 100_000);
    assert_eq!(map["median_s"], 0.002);
    assert_eq!(map["msgs_per_sec"], 5e7);
    assert_eq!(map["ns_per_msg"], 20.0);
    assert_eq!(map["seed_msgs_per_sec"], 165_796.9);
    assert_eq!(map["ratio"], 4.0);
    assert_eq!(map["ratio_vs"], "actix");
    assert_eq!(map["status"], "ok");
    assert!(!map.contains_key("ns_per_op"));
}

#[test]
fn params_keep_declaration_order() {
    let line = record_line(&case_records(&ring_report("agentry", 2))[0]);
    let n = line.find("\"N\"").expect("N present");
    let m = line.find("\"M\"").expect("M present");
    assert!(n < m, "N declared before M: {line}");
}

#[test]
fn operation_phases_report_ns_per_op() {
    let case = fixed_case(
        "heap N=100",
        "agentry",
        vec![PhaseSpec::ops("add").seed(370_370.0)],
        vec![("add", 1, 100)],
    );
    let map = parse(&record_line(&case_records(&report_of("sched", case))[0]));
    assert_eq!(map["ns_per_op"], 10_000.0);
    assert_eq!(map["operations"], 100);
    assert_eq!(map["seed_ops_per_sec"], 370_370.0);
    assert!(!map.contains_key("ns_per_msg"));
    assert!(!map.contains_key("ratio"));
}

#[test]
fn one_line_per_phase() {
    let case = fixed_case(
        "N=10",
        "agentry",
        vec![
            PhaseSpec::msgs("send").seed(242_570.0),
            PhaseSpec::msgs("process").seed(485_593.0),
        ],
        vec![("process", 1, 10), ("send", 2, 10)],
    );
    let records = case_records(&report_of("send_process", case));
    let phases: Vec<String> = records
        .iter()
        .map(|r| parse(&record_line(r))["phase"].to_string())
        .collect();
    assert_eq!(phases, ["\"send\"", "\"process\""]);
}

#[test]
fn failed_case_has_status_and_error() {
    let mut case = Case::builder("bad \"label\"")
        .phase(PhaseSpec::msgs("m"))
        .runner(|| Err(BenchError::Verify("expected 3, got 4".to_owned())));
    case.meta.bench = "ring".to_owned();
    let report = crate::harness::measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    let map = parse(&record_line(&case_records(&report)[0]));
    assert_eq!(map["status"], "failed");
    assert_eq!(map["case"], "bad \"label\"");
    assert!(
        map["error"]
            .as_str()
            .is_some_and(|e| e.contains("expected 3, got 4"))
    );
}

#[test]
fn non_finite_numbers_are_null() {
    let record = Record {
        fields: vec![
            ("x".into(), Value::Float(f64::NAN)),
            ("y".into(), Value::Null),
        ],
    };
    assert_eq!(record_line(&record), r#"{"x":null,"y":null}"#);
}

#[test]
fn machine_line_comes_first_and_parses() {
    let machine = MachineInfo::collect(Scale::Quick, MeasureConfig::default());
    let map = parse(&machine_line(&machine.fields()));
    let inner = map["machine"].as_object().expect("machine object");
    assert_eq!(inner["scale"], "quick");
    assert!(inner["cores"].as_u64().is_some_and(|c| c >= 1));
    assert!(inner["date_utc"].as_str().is_some_and(|d| d.ends_with('Z')));
    assert_eq!(inner["min_reps"], 5);
}

#[test]
fn notes_are_one_field() {
    let mut report = ring_report("kameo", 2);
    report.meta.notes = vec!["unbounded mailboxes".to_owned(), "2 threads".to_owned()];
    let map = parse(&record_line(&case_records(&report)[0]));
    assert_eq!(map["note"], "unbounded mailboxes; 2 threads");
    assert!(
        !parse(&record_line(&case_records(&ring_report("agentry", 2))[0])).contains_key("note")
    );
}
