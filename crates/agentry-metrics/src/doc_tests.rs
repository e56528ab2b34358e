//! The documented list of metrics is made from the code's: `METRICS.md` (the crate docs) and
//! the table in the guide's chapter 11 must both be exactly [`table`]. After changing a
//! family, `AGENTRY_METRICS_BLESS=1 cargo test -p agentry-metrics doc_tests` rewrites both.

use crate::family::{Kind, Spec};

fn specs() -> Vec<Spec> {
    let mut all = crate::env::specs();
    all.extend(crate::net::specs());
    all.extend(crate::remote::specs());
    all
}

/// The Markdown table of every family.
fn table() -> String {
    let mut out = String::from("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n");
    for spec in specs() {
        let kind = match spec.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let labels = if spec.labels.is_empty() {
            "—".to_owned()
        } else {
            spec.labels
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let help = spec.help.replace('|', "\\|");
        out += &format!("| `{}` | {kind} | {labels} | {help} |\n", spec.exposed());
    }
    out
}

const BEGIN: &str =
    "<!-- agentry-metrics table: begin (generated, see agentry-metrics/src/doc_tests.rs) -->\n";
const END: &str = "<!-- agentry-metrics table: end -->\n";

fn path(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn bless() -> bool {
    std::env::var_os("AGENTRY_METRICS_BLESS").is_some()
}

#[test]
fn every_family_has_a_unique_conventional_name() {
    let all = specs();
    let mut names: Vec<_> = all.iter().map(|s| s.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len(), "a family name is used twice");
    for spec in &all {
        assert!(spec.name.starts_with("agentry_"), "{}", spec.name);
        assert!(
            !spec.name.ends_with("_total"),
            "{}: `_total` is added",
            spec.name
        );
        assert!(
            spec.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{}",
            spec.name
        );
        assert!(
            spec.help.ends_with('.'),
            "{}: help is a sentence",
            spec.name
        );
    }
}

#[test]
fn the_crate_docs_list_every_family() {
    let expected = table();
    let file = path("METRICS.md");
    if bless() {
        std::fs::write(&file, &expected).expect("write METRICS.md");
    }
    let documented = std::fs::read_to_string(&file).expect("METRICS.md");
    assert_eq!(
        documented, expected,
        "METRICS.md is stale (see this module's docs)"
    );
}

#[test]
fn the_guide_lists_every_family() {
    let file = path("../agentry/src/guide/11_observability.md");
    let guide = std::fs::read_to_string(&file).expect("guide chapter 11");
    let (before, rest) = guide.split_once(BEGIN).expect("the table's begin marker");
    let (_, after) = rest.split_once(END).expect("the table's end marker");
    let expected = format!("{before}{BEGIN}{}{END}{after}", table());
    if bless() {
        std::fs::write(&file, &expected).expect("write the guide");
    }
    assert_eq!(
        guide, expected,
        "the guide's table is stale (see this module's docs)"
    );
}
