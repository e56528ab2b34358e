//! The Markdown report of known results: heading, tally, machine header, one section per
//! benchmark with its rows.

use super::{bench_section, document};
use crate::harness::test_support::ring_report;
use crate::harness::{MachineInfo, MeasureConfig, Scale};

fn machine(git_rev: Option<&'static str>) -> MachineInfo {
    MachineInfo {
        date_utc: "2026-11-25T02:37:38Z".to_owned(),
        hostname: Some("vm".to_owned()),
        cpu_model: Some("Intel(R) Xeon(R) Processor".to_owned()),
        cores: 2,
        loadavg: Some([1.55, 12.74, 13.26]),
        rustc: Some("rustc 1.95.0"),
        git_rev,
        allocator: None,
        scale: Scale::Quick,
        config: MeasureConfig::default(),
    }
}

#[test]
fn a_run_becomes_a_dated_section_with_one_table_per_benchmark() {
    let sections = vec![
        bench_section(
            "ring",
            "ring of N agents, M tokens",
            &[ring_report("agentry", 2)],
        ),
        bench_section("idle", "an env with no work", &[]),
    ];
    let text = document(
        "agentry-bench ring idle --quick",
        &machine(Some("5edc99e53c71")),
        "1 case(s) run: 0 failed, 0 skipped",
        &sections,
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "## 2026-11-25T02:37:38Z: `agentry-bench ring idle --quick`"
    );
    assert_eq!(
        lines[2],
        "`agentry-bench ring idle --quick`: 1 case(s) run: 0 failed, 0 skipped."
    );
    assert_eq!(lines[4], "```text");
    assert_eq!(lines[5], "agentry-bench  2026-11-25T02:37:38Z  scale quick");
    assert_eq!(
        lines[6],
        "host vm  cpu Intel(R) Xeon(R) Processor (2 cores)  load 1.55 12.74 13.26"
    );
    assert_eq!(lines[7], "rustc 1.95.0  git 5edc99e53c71");
    assert_eq!(lines[8], "warm-up 1, measured repetitions ≥ 5");
    assert_eq!(lines[9], "```");

    let ring = lines
        .iter()
        .position(|l| *l == "#### `ring`")
        .expect("the ring section");
    assert_eq!(lines[ring + 2], "ring of N agents, M tokens");
    assert_eq!(lines[ring + 4], "```text");
    assert!(lines[ring + 5].starts_with("case "), "{}", lines[ring + 5]);
    let row = lines[ring + 6];
    for cell in [
        "one_thread N=1000 M=100",
        "agentry",
        "ringing",
        "2.00 ms",
        "50.0M msg/s",
        "20.0 ns/msg",
        "166k msg/s",
        "5 reps",
    ] {
        assert!(row.contains(cell), "{cell} in {row}");
    }
    assert_eq!(lines[ring + 7], "```");
    let idle = lines
        .iter()
        .position(|l| *l == "#### `idle`")
        .expect("the idle section");
    assert_eq!(lines[idle + 6], "(no case)");
    assert!(text.ends_with("```\n"), "{text}");
}

#[test]
fn without_a_git_revision_the_header_omits_it() {
    let text = document(
        "agentry-bench ring",
        &machine(None),
        "0 case(s) run: 0 failed, 0 skipped",
        &[],
    );
    assert!(text.contains("\nrustc 1.95.0\n"), "{text}");
    assert!(!text.contains("git "), "{text}");
}
