//! Drives the whole binary path (`run_cli`) with a tiny benchmark registered only here: a loop
//! summing numbers that verifies its sum, and a twin that gets it wrong.

use std::path::PathBuf;

use agentry_bench::harness::{
    BenchDef, Case, ChartKind, ChartY, EXIT_FAILED, EXIT_OK, Group, PhaseSpec, Registry, Sample,
    Scale, black_box, run_cli, timed, verify_eq,
};

fn sum_cases(scale: Scale) -> Vec<Case> {
    [1_000u64, 10_000]
        .into_iter()
        .map(|n| scale.pick(n, n, n * 10))
        .flat_map(|n| {
            let sum = move || {
                let numbers: Vec<u64> = (0..n).collect(); // setup, not timed
                let (total, elapsed) = timed(|| black_box(&numbers).iter().sum::<u64>());
                verify_eq("sum", n * (n - 1) / 2, total)?;
                Ok(Sample::new()
                    .phase("sum", elapsed, n)
                    .phase("setup", elapsed, 1))
            };
            let baseline = move || {
                let (total, elapsed) = timed(|| (0..black_box(n)).rev().sum::<u64>());
                verify_eq("sum", n * (n - 1) / 2, total)?;
                Ok(Sample::new()
                    .phase("sum", elapsed, n)
                    .phase("setup", elapsed, 1))
            };
            let phases = || [PhaseSpec::ops("sum").seed(1e8), PhaseSpec::msgs("setup")];
            let [a, b] = phases();
            let [c, d] = phases();
            [
                Case::builder(format!("N={n}"))
                    .param("N", n)
                    .phase(a)
                    .phase(b)
                    .peer("rev")
                    .runner(sum),
                Case::builder(format!("N={n}"))
                    .impl_name("rev")
                    .param("N", n)
                    .phase(c)
                    .phase(d)
                    .runner(baseline),
            ]
        })
        .collect()
}

fn wrong_cases(_scale: Scale) -> Vec<Case> {
    vec![
        Case::builder("N=10")
            .param("N", 10)
            .phase(PhaseSpec::msgs("sum"))
            .runner(|| {
                let (total, elapsed) = timed(|| (0..10u64).sum::<u64>() + 1);
                verify_eq("sum", 45, total)?;
                Ok(Sample::new().phase("sum", elapsed, 10))
            }),
    ]
}

static BENCHES: &[BenchDef] = &[
    BenchDef {
        id: "tiny_sum",
        description: "sums 0..N and checks the sum",
        cases: sum_cases,
        charts: &[
            ChartKind::LogLog {
                x_param: "N",
                y: ChartY::NsPerUnit,
            },
            ChartKind::Bars,
        ],
    },
    BenchDef {
        id: "tiny_wrong",
        description: "a sum that is off by one",
        cases: wrong_cases,
        charts: &[],
    },
];
static GROUPS: &[Group] = &[Group {
    id: "compare",
    description: "peers",
    members: &["tiny_sum"],
}];
static REGISTRY: Registry = Registry::new(BENCHES, GROUPS);

fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "agentry-bench-e2e-{name}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn run(args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("agentry-bench")
        .chain(args.iter().copied())
        .chain(["--no-progress"]);
    let code = run_cli(argv, &REGISTRY, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf-8"),
        String::from_utf8(err).expect("utf-8"),
    )
}

#[test]
fn a_passing_benchmark_writes_table_json_csv_markdown_and_charts() {
    let dir = temp_dir("pass");
    let (json, csv, plots) = (dir.join("out.json"), dir.join("out.csv"), dir.join("plots"));
    let md = dir.join("out.md");
    let (code, out, err) = run(&[
        "tiny_sum",
        "--quick",
        "--json",
        json.to_str().expect("utf-8 path"),
        "--csv",
        csv.to_str().expect("utf-8 path"),
        "--md",
        md.to_str().expect("utf-8 path"),
        "--plot",
        plots.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, EXIT_OK, "out:\n{out}\nerr:\n{err}");
    assert!(out.starts_with("agentry-bench "), "header first:\n{out}");
    assert!(out.contains("scale quick"));
    assert!(out.contains("== tiny_sum: sums 0..N and checks the sum"));
    assert!(out.contains("× vs rev"), "ratio column:\n{out}");
    assert!(out.contains("4 case(s) run: 0 failed, 0 skipped"), "{out}");

    let text = std::fs::read_to_string(&json).expect("json written");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert!(
        lines[0]["machine"]["cores"].as_u64().is_some(),
        "machine line first: {}",
        lines[0]
    );
    // 4 cases × 2 phases.
    assert_eq!(lines.len(), 1 + 8);
    let sum = &lines[1];
    assert_eq!(sum["bench"], "tiny_sum");
    assert_eq!(sum["case"], "N=1000");
    assert_eq!(sum["impl"], "agentry");
    assert_eq!(sum["phase"], "sum");
    assert_eq!(sum["operations"], 1000);
    assert_eq!(sum["reps"], 5);
    assert!(sum["ns_per_op"].as_f64().is_some());
    assert_eq!(sum["seed_ops_per_sec"], 1e8);
    assert!(sum["ratio"].as_f64().is_some_and(|r| r > 0.0));
    assert_eq!(lines[2]["phase"], "setup");
    assert!(lines[2]["ns_per_msg"].as_f64().is_some());

    let csv_text = std::fs::read_to_string(&csv).expect("csv written");
    let header = csv_text.lines().next().expect("header");
    assert!(
        header.starts_with("bench,case,impl,dispatcher,threads,params.N,phase,status"),
        "{header}"
    );
    assert_eq!(csv_text.lines().count(), 1 + 8);

    let md_text = std::fs::read_to_string(&md).expect("markdown written");
    let md_lines: Vec<&str> = md_text.lines().collect();
    assert!(
        md_lines[0].starts_with("## ")
            && md_lines[0].ends_with(": `agentry-bench tiny_sum --quick`"),
        "{md_text}"
    );
    assert_eq!(
        md_lines[2],
        "`agentry-bench tiny_sum --quick`: 4 case(s) run: 0 failed, 0 skipped."
    );
    assert!(md_lines[5].starts_with("agentry-bench ") && md_lines[5].ends_with("scale quick"));
    assert!(md_lines[6].contains(" cores"), "{md_text}");
    let section = md_lines
        .iter()
        .position(|l| *l == "#### `tiny_sum`")
        .expect("the benchmark's section");
    assert_eq!(md_lines[section + 2], "sums 0..N and checks the sum");
    // The terminal's rows, 4 cases × 2 phases, between the header and the closing fence.
    let rows = &md_lines[section + 6..section + 14];
    assert_eq!(md_lines[section + 14], "```", "{md_text}");
    let first = rows[0];
    for cell in ["N=1000", "agentry", "sum", "ns/op", "× vs rev", "5 reps"] {
        assert!(first.contains(cell), "{cell} in {first}");
    }
    assert!(
        rows.iter()
            .any(|r| r.contains("N=10000") && r.contains("rev")),
        "{md_text}"
    );
    assert!(out.contains(&format!("wrote {}", md.display())), "{out}");

    for chart in [
        "tiny_sum-sum-loglog.svg",
        "tiny_sum-setup-loglog.svg",
        "tiny_sum-sum-bars.svg",
    ] {
        let svg = std::fs::read_to_string(plots.join(chart)).expect("chart written");
        assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn a_verification_failure_exits_non_zero_and_names_the_case() {
    let dir = temp_dir("fail");
    let json = dir.join("out.json");
    let (code, out, err) = run(&[
        "tiny_wrong",
        "tiny_sum",
        "--quick",
        "--json",
        json.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, EXIT_FAILED);
    assert!(
        err.contains(
            "FAILED tiny_wrong / N=10 (agentry): verification failed: sum: expected 45, got 46"
        ),
        "{err}"
    );
    assert!(out.contains("FAILED: verification failed"), "{out}");
    // The other benchmark still ran and was recorded.
    assert!(out.contains("== tiny_sum"));
    let text = std::fs::read_to_string(&json).expect("json written");
    let failed: serde_json::Value =
        serde_json::from_str(text.lines().nth(1).expect("failure line")).expect("JSON");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["bench"], "tiny_wrong");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn an_unwritable_output_fails_before_measuring() {
    let (code, out, err) = run(&["tiny_sum", "--quick", "--json", "/nonexistent-dir/x.json"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("/nonexistent-dir/x.json"), "{err}");
    assert!(!out.contains("== tiny_sum"), "nothing measured:\n{out}");
}

#[test]
fn a_group_runs_its_members() {
    let (code, out, _) = run(&["compare", "--quick", "--reps", "1"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("== tiny_sum") && !out.contains("== tiny_wrong"));
    assert!(
        out.contains("below the minimum of 5"),
        "debug reps are flagged:\n{out}"
    );
}

fn capped_cases(_scale: Scale) -> Vec<Case> {
    let sleepy = |label: &str, series: &str, ms: u64| {
        Case::builder(label)
            .phase(PhaseSpec::ops("add"))
            .budget(std::time::Duration::from_millis(10))
            .cap_series(series)
            .runner(move || {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                Ok(Sample::new().phase("add", std::time::Duration::from_millis(ms), 1))
            })
    };
    vec![
        sleepy("list N=100", "list", 20),
        sleepy("heap N=100", "heap", 0),
        sleepy("list N=1000", "list", 0),
        sleepy("heap N=1000", "heap", 0),
    ]
}

#[test]
fn a_capped_series_skips_its_larger_sizes() {
    static CAPPED: &[BenchDef] = &[BenchDef {
        id: "capped",
        description: "list capped by its budget",
        cases: capped_cases,
        charts: &[],
    }];
    static CAPPED_REGISTRY: Registry = Registry::new(CAPPED, &[]);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = ["agentry-bench", "capped", "--reps", "1", "--no-progress"];
    let code = run_cli(argv, &CAPPED_REGISTRY, &mut out, &mut err);
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(code, EXIT_OK, "{out}");
    let line = |label: &str| {
        out.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line("list N=1000").contains("skipped: capped: `list N=100` needed"),
        "{out}"
    );
    assert!(
        line("heap N=1000").contains("add"),
        "heap is not capped:\n{out}"
    );
    assert!(out.contains("4 case(s) run: 0 failed, 1 skipped"), "{out}");
}
