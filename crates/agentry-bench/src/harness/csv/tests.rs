use super::to_csv;
use crate::harness::test_support::{fixed_case, report_of, ring_report};
use crate::harness::{PhaseSpec, Record, Value, case_records};

#[test]
fn header_is_the_union_of_fields_with_params_flattened() {
    let mut records = case_records(&ring_report("agentry", 2));
    let op = fixed_case(
        "heap N=100",
        "agentry",
        vec![PhaseSpec::ops("add")],
        vec![("add", 1, 100)],
    );
    records.extend(case_records(&report_of("sched", op)));
    let text = to_csv(&records);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let header: Vec<&str> = lines[0].split(',').collect();
    for column in [
        "bench",
        "case",
        "impl",
        "dispatcher",
        "threads",
        "params.N",
        "params.M",
        "phase",
        "messages",
        "median_s",
        "msgs_per_sec",
        "ns_per_msg",
        "seed_msgs_per_sec",
        "ns_per_op",
        "operations",
    ] {
        assert!(
            header.contains(&column),
            "missing column {column} in {header:?}"
        );
    }
    assert_eq!(&header[..3], ["bench", "case", "impl"]);
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    for row in &rows {
        assert_eq!(row.len(), header.len(), "every row has every column");
    }
    let col = |name: &str| header.iter().position(|h| *h == name).expect("column");
    assert_eq!(rows[0][col("bench")], "ring");
    assert_eq!(rows[0][col("params.N")], "1000");
    assert_eq!(rows[0][col("msgs_per_sec")], "50000000.0");
    assert_eq!(rows[0][col("ns_per_op")], "");
    assert_eq!(rows[1][col("ns_per_op")], "10000.0");
    assert_eq!(rows[1][col("messages")], "");
}

#[test]
fn cells_with_separators_are_quoted() {
    let record = Record {
        fields: vec![
            ("case".into(), Value::Text("a, \"b\"".into())),
            ("n".into(), Value::Int(3)),
            ("x".into(), Value::Float(f64::INFINITY)),
        ],
    };
    assert_eq!(to_csv(&[record]), "case,n,x\n\"a, \"\"b\"\"\",3,\n");
}

#[test]
fn no_records_gives_an_empty_header() {
    assert_eq!(to_csv(&[]), "\n");
}
