//! The peer comparison through the built binary: a repetition runs in a child process
//! (`agentry-bench __run-child …`) that prints its sample with its own peak RSS, and
//! `agentry-bench compare_pingpong --smoke` measures every implementation that way, with the
//! ratios agentry / peer in its records. Nothing is timed.

use std::process::Command;

use agentry_bench::harness::BenchError;
use agentry_bench::harness::child::parse_sample_line;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agentry-bench");

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agentry-bench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn a_child_prints_its_sample_with_its_peak_rss() {
    let output = Command::new(BIN)
        .args(["__run-child", "ring", "agentry", "single", "smoke"])
        .output()
        .expect("the binary runs");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let sample = parse_sample_line(stdout.trim()).expect("a sample");
    assert_eq!(sample.phases()[0].name, "ring");
    assert!(sample.peak_rss_bytes().is_some_and(|peak| peak > 0));
}

#[test]
fn a_child_given_wrong_arguments_says_so() {
    let output = Command::new(BIN)
        .args(["__run-child", "ring", "nobody", "single", "smoke"])
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(matches!(
        parse_sample_line(stdout.trim()),
        Err(BenchError::Harness(m)) if m.contains("usage")
    ));
}

#[test]
fn compare_measures_every_implementation_in_children() {
    let dir = temp_dir("compare");
    let json = dir.join("compare.json");
    let csv = dir.join("compare.csv");
    let plots = dir.join("plots");
    let output = Command::new(BIN)
        .args([
            "compare_pingpong",
            "--smoke",
            "--reps",
            "1",
            "--no-progress",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--plot")
        .arg(&plots)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("== compare_pingpong"), "{stdout}");

    let text = std::fs::read_to_string(&json).expect("json written");
    let rows: Vec<Value> = text
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let impls = rows
        .iter()
        .filter(|r| r["case"].as_str().is_some_and(|c| c.starts_with("single")))
        .count();
    assert_eq!(
        rows.len(),
        2 * impls,
        "both runtimes for each implementation"
    );
    for row in &rows {
        assert_eq!(row["status"], "ok", "{row}");
        assert_eq!(row["bench"], "compare_pingpong");
        assert!(
            row["peak_rss_bytes"].as_u64().is_some_and(|b| b > 0),
            "{row}"
        );
        if row["impl"] == "agentry" && impls > 1 {
            assert!(row["ratio"].as_f64().is_some_and(|r| r > 0.0), "{row}");
        }
    }
    assert!(
        std::fs::read_to_string(&csv)
            .expect("csv written")
            .contains("peak_rss_bytes")
    );
    assert!(plots.join("compare_pingpong-bars.svg").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
