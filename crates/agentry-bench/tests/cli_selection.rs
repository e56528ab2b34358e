//! Command-line parsing and benchmark selection: ids, `all`, groups, `--list`, usage errors.

use agentry_bench::harness::{
    BenchDef, Case, Cli, EXIT_OK, EXIT_USAGE, Group, MIN_REPS, PhaseSpec, Registry, Sample, Scale,
    SelectError, run_cli,
};
use clap::Parser;

fn one_case(_scale: Scale) -> Vec<Case> {
    vec![
        Case::builder("x")
            .phase(PhaseSpec::msgs("m"))
            .runner(|| Ok(Sample::new().phase("m", std::time::Duration::from_micros(1), 1))),
    ]
}

static BENCHES: &[BenchDef] = &[
    BenchDef {
        id: "send",
        description: "sends",
        cases: one_case,
        charts: &[],
    },
    BenchDef {
        id: "ring",
        description: "rings",
        cases: one_case,
        charts: &[],
    },
];
static GROUPS: &[Group] = &[Group {
    id: "compare",
    description: "peer comparison",
    members: &["ring"],
}];
static REGISTRY: Registry = Registry::new(BENCHES, GROUPS);
static EMPTY: Registry = Registry::new(
    &[],
    &[Group {
        id: "compare",
        description: "peer comparison",
        members: &[],
    }],
);

fn run(registry: &Registry, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("agentry-bench").chain(args.iter().copied());
    let code = run_cli(argv, registry, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf-8"),
        String::from_utf8(err).expect("utf-8"),
    )
}

fn ids(registry: &Registry, words: &[&str]) -> Result<Vec<&'static str>, SelectError> {
    let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    Ok(registry
        .select(&words)?
        .benches
        .iter()
        .map(|b| b.id)
        .collect())
}

#[test]
fn parses_every_option() {
    let cli = Cli::try_parse_from([
        "agentry-bench",
        "ring",
        "send",
        "--quick",
        "--json",
        "a.json",
        "--csv",
        "a.csv",
        "--plot",
        "plots",
        "--reps",
        "7",
    ])
    .expect("valid command line");
    assert_eq!(cli.ids, ["ring", "send"]);
    assert_eq!(cli.scale(), Scale::Quick);
    assert_eq!(cli.json.as_deref(), Some(std::path::Path::new("a.json")));
    assert_eq!(cli.csv.as_deref(), Some(std::path::Path::new("a.csv")));
    assert_eq!(cli.plot.as_deref(), Some(std::path::Path::new("plots")));
    assert_eq!(cli.measure_config().plan(MIN_REPS), (5, 7));
    assert_eq!(cli.warmup, 1);

    let cli = Cli::try_parse_from(["agentry-bench", "all"]).expect("valid command line");
    assert_eq!(cli.scale(), Scale::Full);
    assert_eq!(cli.reps, None);
    assert!(Cli::try_parse_from(["agentry-bench", "all", "--reps", "0"]).is_err());
    assert!(Cli::try_parse_from(["agentry-bench", "all", "--warmup", "0"]).is_err());
}

#[test]
fn all_selects_every_benchmark_once_in_order() {
    assert_eq!(ids(&REGISTRY, &["all"]).expect("valid"), ["send", "ring"]);
    assert_eq!(
        ids(&REGISTRY, &["ring", "all", "ring"]).expect("valid"),
        ["ring", "send"]
    );
    assert_eq!(ids(&REGISTRY, &["compare"]).expect("valid"), ["ring"]);
}

#[test]
fn unknown_id_is_a_usage_error_listing_valid_ids() {
    let error = ids(&REGISTRY, &["ring", "rnig", "bogus"]).expect_err("unknown ids");
    let message = error.to_string();
    assert!(
        message.contains("unknown benchmark ids `rnig`, `bogus`"),
        "{message}"
    );
    assert!(
        message.contains("valid ids: all, compare, send, ring"),
        "{message}"
    );

    let (code, out, err) = run(&REGISTRY, &["rnig", "--no-progress"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(out.is_empty(), "nothing measured: {out}");
    assert!(
        err.contains("unknown benchmark id `rnig`; valid ids: all, compare, send, ring"),
        "{err}"
    );
}

#[test]
fn no_id_and_bad_options_are_usage_errors() {
    let (code, _, err) = run(&REGISTRY, &[]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("no benchmark id given"), "{err}");
    let (code, _, err) = run(&REGISTRY, &["ring", "--frobnicate"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("--frobnicate"), "{err}");
}

#[test]
fn help_and_version_exit_zero() {
    let (code, out, _) = run(&REGISTRY, &["--help"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("--quick") && out.contains("--json"), "{out}");
    let (code, out, _) = run(&REGISTRY, &["--version"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.starts_with("agentry-bench "), "{out}");
}

#[test]
fn list_prints_ids_with_descriptions() {
    let (code, out, _) = run(&REGISTRY, &["--list"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("send     sends\n"), "{out}");
    assert!(out.contains("ring     rings\n"), "{out}");
    assert!(out.contains("all      every benchmark above\n"), "{out}");
    assert!(out.contains("compare  peer comparison (ring)\n"), "{out}");
}

#[test]
fn empty_registry_says_so() {
    let (code, out, _) = run(&EMPTY, &["all", "--no-progress"]);
    assert_eq!(code, EXIT_OK);
    assert!(
        out.contains("no benchmark is registered yet: `all` has nothing to run"),
        "{out}"
    );
    let (code, out, _) = run(&EMPTY, &["compare", "--no-progress"]);
    assert_eq!(code, EXIT_OK);
    assert!(
        out.contains("`compare` has no benchmark registered yet"),
        "{out}"
    );
    let (_, out, _) = run(&EMPTY, &["--list"]);
    assert!(out.starts_with("no benchmark is registered yet\n"), "{out}");
    let (code, _, err) = run(&EMPTY, &["ring"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(
        err.contains("valid ids: all, compare (no benchmark is registered yet)"),
        "{err}"
    );
}

#[test]
fn registry_problems_are_detected() {
    static DUP: Registry = Registry::new(
        &[
            BenchDef {
                id: "send",
                description: "a",
                cases: one_case,
                charts: &[],
            },
            BenchDef {
                id: "send",
                description: "b",
                cases: one_case,
                charts: &[],
            },
            BenchDef {
                id: "all",
                description: "c",
                cases: one_case,
                charts: &[],
            },
        ],
        &[Group {
            id: "compare",
            description: "d",
            members: &["nope"],
        }],
    );
    assert_eq!(DUP.problems().len(), 3, "{:?}", DUP.problems());
    assert!(REGISTRY.problems().is_empty());
}

#[test]
fn extras_are_selected_by_id_or_group_but_not_by_all() {
    static EXTRAS: &[BenchDef] = &[BenchDef {
        id: "compare_ring",
        description: "rings beside peers",
        cases: one_case,
        charts: &[],
    }];
    static GROUPED: &[Group] = &[Group {
        id: "compare",
        description: "peer comparison",
        members: &["compare_ring"],
    }];
    static WITH_EXTRAS: Registry = Registry::new(BENCHES, GROUPED).with_extras(EXTRAS);
    assert_eq!(ids(&WITH_EXTRAS, &["all"]), Ok(vec!["send", "ring"]));
    assert_eq!(ids(&WITH_EXTRAS, &["compare"]), Ok(vec!["compare_ring"]));
    assert_eq!(
        ids(&WITH_EXTRAS, &["compare_ring", "send"]),
        Ok(vec!["compare_ring", "send"])
    );
    assert!(
        WITH_EXTRAS.problems().is_empty(),
        "{:?}",
        WITH_EXTRAS.problems()
    );
    let listing = WITH_EXTRAS.listing();
    assert!(listing.contains("compare_ring"), "{listing}");
    assert!(listing.contains("(not in `all`)"), "{listing}");
    static CLASH: Registry = Registry::new(BENCHES, &[]).with_extras(&[BenchDef {
        id: "ring",
        description: "again",
        cases: one_case,
        charts: &[],
    }]);
    assert_eq!(CLASH.problems().len(), 1, "{:?}", CLASH.problems());
}
