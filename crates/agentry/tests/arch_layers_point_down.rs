//! The core crate's modules sit in named layers, and every import points down
//! (`docs/ARCHITECTURE.md`, "Layers").
//!
//! The check reads every `.rs` file under `crates/agentry/src`, maps it to its module path
//! (`mbox/direct.rs` → `mbox::direct`, inline `mod x { … }` blocks included), and extracts
//! every reference to another module of the crate: `use crate::…` (grouped trees expanded),
//! inline paths `crate::x::y` in code, and `super::…` paths that climb out of a module. Comments
//! (doc comments' intra-doc links included) and string literals are not code and are skipped.
//! A path through a root re-export (`crate::Mbox`) is followed to the module it re-exports
//! (`lib.rs`'s `pub use`).
//!
//! Each module is placed by the most specific entry of [`LAYERS`] that is a prefix of its path.
//! The rules:
//!
//! 1. every file sits in a layer, and every entry of the table names a module that exists;
//! 2. a module may use a module of a lower layer, never one of a higher layer;
//! 3. inside one layer the entries may use each other only without a cycle;
//! 4. unit tests (`tests.rs` files, inline `mod tests`) may use any layer — the testing kit sits
//!    on top and drives the lowest modules' tests; `lib.rs` (the public map) and `prelude.rs`
//!    re-export from every layer and are not in the table.
//!
//! There are no exceptions: the list of excused arrows the check began with (40 arrows of the
//! knot the crate grew as) went to zero on 2026-11-29 and was removed with its machinery.
//!
//! `docs/ARCHITECTURE.md` states the same table between the `layers-table` markers; a test
//! compares the two. With `AGENTRY_LAYERS_PRINT=1` the test prints the module graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

mod source;
use source::{Tok, UseLeaf, absolute, ident, lex, use_tree};

/// The layers, bottom to top, each with the modules it holds (module paths; the most specific
/// prefix places a module).
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "sync",
            "ids",
            "priority",
            "reason",
            "panic_reaction",
            "trace",
            "message",
            "error",
        ],
    ),
    ("counters and timers", &["stats", "timer"]),
    ("queues and dispatchers", &["slab", "demand", "disp"]),
    ("mboxes", &["mbox", "mchain", "request", "destination"]),
    ("agents", &["agent"]),
    (
        "coops",
        &["coop", "supervision", "supervision::supervisor", "watch"],
    ),
    ("env", &["env", "snapshot"]),
    ("testing kit", &["testing"]),
];

/// Files outside the table: the crate's public map and the prelude re-export every layer; the
/// guide is documentation only.
const EXEMPT: &[&str] = &["", "prelude", "guide"];

/// One reference from a module to another module of the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference {
    /// The referring file, relative to `src/`.
    file: String,
    /// 1-based line of the reference.
    line: usize,
    /// The module the reference is written in (`mbox::direct`, `disp::tests`, …).
    from: Vec<String>,
    /// The referenced path, absolute (`crate` removed).
    to: Vec<String>,
    /// Written in unit-test code.
    in_test: bool,
}

/// A broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Violation {
    /// An arrow from a lower layer to a higher one.
    PointsUp {
        file: String,
        line: usize,
        from: String,
        from_layer: String,
        to: String,
        to_layer: String,
        path: String,
    },
    /// A cycle between entries of one layer (each arrow with one place it is written).
    Cycle { layer: String, arrows: Vec<String> },
    /// A file that no entry places.
    Unplaced { file: String },
    /// An entry that names no module.
    StaleEntry { entry: String },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::PointsUp {
                file,
                line,
                from,
                from_layer,
                to,
                to_layer,
                path,
            } => write!(
                f,
                "crates/agentry/src/{file}:{line}: `{from}` ({from_layer}) -> `{to}` ({to_layer}) \
                 points up (`crate::{path}`)"
            ),
            Violation::Cycle { layer, arrows } => {
                write!(f, "cycle inside the layer `{layer}`:")?;
                for a in arrows {
                    write!(f, "\n    {a}")?;
                }
                Ok(())
            }
            Violation::Unplaced { file } => {
                write!(f, "crates/agentry/src/{file}: its module sits in no layer")
            }
            Violation::StaleEntry { entry } => {
                write!(
                    f,
                    "layer table entry `{entry}` names no module of the crate"
                )
            }
        }
    }
}

/// Every reference to a module of the crate written in `file` (relative to `src/`).
fn references(file: &str, src: &str) -> Vec<Reference> {
    let file_module = module_of(file);
    let file_is_test = file_module
        .last()
        .is_some_and(|m| m == "tests" || m == "loom_tests");
    let toks = lex(src);
    let mut out = Vec::new();
    // Inline modules: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let module: Vec<String> = file_module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(m, _)| m.clone()))
            .collect();
        let in_test = file_is_test || inline.iter().any(|(m, _)| m == "tests");
        let prev_is_sep = i > 0 && toks[i - 1].0 == Tok::PathSep;
        match &toks[i].0 {
            Tok::Open => {
                depth += 1;
                i += 1;
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some(name), Some((Tok::Open, _))) =
                    (ident(toks.get(i + 1)), toks.get(i + 2))
                {
                    inline.push((name.to_string(), depth + 1));
                    depth += 1;
                    i += 3;
                } else {
                    i += 1;
                }
            }
            Tok::Ident(w) if w == "use" && !prev_is_sep => {
                i += 1;
                let mut leaves = Vec::new();
                // `use ::x` (an external crate) is not ours.
                if toks.get(i).map(|t| &t.0) != Some(&Tok::PathSep) {
                    use_tree(&toks, &mut i, &[], &mut leaves);
                }
                for UseLeaf { path, line, .. } in leaves {
                    if let Some(to) = absolute(&module, &path) {
                        out.push(Reference {
                            file: file.to_string(),
                            line,
                            from: module.clone(),
                            to,
                            in_test,
                        });
                    }
                }
            }
            Tok::Ident(w) if (w == "crate" || w == "super") && !prev_is_sep => {
                let line = toks[i].1;
                let mut path = vec![w.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.0) == Some(&Tok::PathSep) {
                    match ident(toks.get(j + 1)) {
                        Some(s) => {
                            path.push(s.to_string());
                            j += 2;
                        }
                        None => break,
                    }
                }
                if path.len() > 1
                    && let Some(to) = absolute(&module, &path)
                {
                    out.push(Reference {
                        file: file.to_string(),
                        line,
                        from: module,
                        to,
                        in_test,
                    });
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

/// `mbox/direct.rs` → `["mbox", "direct"]`; `lib.rs` → `[]`.
fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    if stem == "lib" {
        return Vec::new();
    }
    stem.split('/').map(str::to_string).collect()
}

// ---------------------------------------------------------------------------------------------
// The check.

struct Table {
    /// Entry (`agent`, `mbox::direct`, …) → layer index.
    entries: BTreeMap<String, usize>,
    names: Vec<String>,
}

impl Table {
    fn new(layers: &[(&str, &[&str])]) -> Table {
        let mut entries = BTreeMap::new();
        for (k, (_, mods)) in layers.iter().enumerate() {
            for m in *mods {
                entries.insert(m.to_string(), k);
            }
        }
        Table {
            entries,
            names: layers.iter().map(|(n, _)| n.to_string()).collect(),
        }
    }

    /// The most specific entry whose path is a prefix of `module`.
    fn place(&self, module: &[String]) -> Option<(&str, usize)> {
        (1..=module.len()).rev().find_map(|len| {
            let key = module[..len].join("::");
            self.entries
                .get_key_value(&key)
                .map(|(k, l)| (k.as_str(), *l))
        })
    }
}

/// Checks `files` (path relative to `src/`, source) against `layers`.
fn check(layers: &[(&str, &[&str])], files: &[(String, String)]) -> (Vec<Violation>, Vec<Edge>) {
    let table = Table::new(layers);
    let mut violations = Vec::new();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(f, _)| module_of(f)).collect();
    let reexports = root_reexports(files);

    for entry in table.entries.keys() {
        let path: Vec<String> = entry.split("::").map(str::to_string).collect();
        if !modules.iter().any(|m| m.starts_with(&path)) {
            violations.push(Violation::StaleEntry {
                entry: entry.clone(),
            });
        }
    }

    let mut edges: Vec<Edge> = Vec::new();
    for (file, src) in files {
        let module = module_of(file);
        if EXEMPT.contains(&module.first().map_or("", String::as_str)) {
            continue;
        }
        let Some((from, from_layer)) = table.place(&module) else {
            violations.push(Violation::Unplaced { file: file.clone() });
            continue;
        };
        for r in references(file, src) {
            if r.in_test {
                continue;
            }
            let to = resolve(&r.to, &modules, &reexports);
            let Some((target, to_layer)) = table.place(&to) else {
                continue;
            };
            if target == from {
                continue;
            }
            if to_layer > from_layer {
                violations.push(Violation::PointsUp {
                    file: r.file.clone(),
                    line: r.line,
                    from: from.to_string(),
                    from_layer: table.names[from_layer].clone(),
                    to: target.to_string(),
                    to_layer: table.names[to_layer].clone(),
                    path: r.to.join("::"),
                });
            }
            edges.push(Edge {
                from: from.to_string(),
                to: target.to_string(),
                file: r.file.clone(),
                line: r.line,
                same_layer: to_layer == from_layer,
                layer: from_layer,
            });
        }
    }

    // Cycles inside one layer: strongly connected components of its entries.
    for (k, name) in table.names.iter().enumerate() {
        let inner: Vec<&Edge> = edges
            .iter()
            .filter(|e| e.same_layer && e.layer == k)
            .collect();
        for scc in cycles(&inner) {
            let mut arrows: Vec<String> = Vec::new();
            let mut seen = BTreeSet::new();
            for e in &inner {
                if scc.contains(&e.from) && scc.contains(&e.to) && seen.insert((&e.from, &e.to)) {
                    arrows.push(format!(
                        "`{}` -> `{}` (crates/agentry/src/{}:{})",
                        e.from, e.to, e.file, e.line
                    ));
                }
            }
            violations.push(Violation::Cycle {
                layer: name.clone(),
                arrows,
            });
        }
    }
    (violations, edges)
}

/// An arrow between two entries of the table, with one place it is written.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    file: String,
    line: usize,
    same_layer: bool,
    layer: usize,
}

/// The sets of entries that reach each other (more than one entry each).
fn cycles(edges: &[&Edge]) -> Vec<BTreeSet<String>> {
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|e| [e.from.as_str(), e.to.as_str()])
        .collect();
    let reach = |start: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.to_string()];
        while let Some(n) = stack.pop() {
            for e in edges.iter().filter(|e| e.from == n) {
                if seen.insert(e.to.clone()) {
                    stack.push(e.to.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<String>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for n in &nodes {
        let scc: BTreeSet<String> = nodes
            .iter()
            .filter(|m| reaches[n].contains(**m) && reaches[*m].contains(*n))
            .map(|m| m.to_string())
            .collect();
        if scc.len() > 1 && !out.contains(&scc) {
            out.push(scc);
        }
    }
    out
}

/// The names `lib.rs` re-exports at the root, each with the path it re-exports.
fn root_reexports(files: &[(String, String)]) -> BTreeMap<String, Vec<String>> {
    let mut map = BTreeMap::new();
    let Some((_, lib)) = files.iter().find(|(f, _)| f == "lib.rs") else {
        return map;
    };
    for r in references("lib.rs", lib) {
        if let Some(last) = r.to.last() {
            map.insert(last.clone(), r.to.clone());
        }
    }
    map
}

/// A path that starts with a root re-export continues at the re-exported item.
fn resolve(
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
    reexports: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let Some(first) = path.first() else {
        return Vec::new();
    };
    if modules.iter().any(|m| m.first() == Some(first)) {
        return path.to_vec();
    }
    match reexports.get(first) {
        Some(target) => target.iter().chain(&path[1..]).cloned().collect(),
        None => path.to_vec(),
    }
}

// ---------------------------------------------------------------------------------------------
// The crate's files, and the tests.

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read_sources() -> Vec<(String, String)> {
    source::read_rs_files(&src_dir())
}

fn print_graph(edges: &[Edge]) {
    let mut counts: BTreeMap<(&str, &str), (usize, String)> = BTreeMap::new();
    for e in edges {
        let c = counts
            .entry((&e.from, &e.to))
            .or_insert((0, format!("{}:{}", e.file, e.line)));
        c.0 += 1;
    }
    for ((from, to), (n, at)) in counts {
        eprintln!("{from} -> {to}  ({n}x, e.g. {at})");
    }
}

#[test]
fn every_import_of_the_core_points_down() {
    let files = read_sources();
    assert!(
        files.len() > 50,
        "the crate's sources were found ({} files)",
        files.len()
    );
    let (violations, edges) = check(LAYERS, &files);
    if std::env::var_os("AGENTRY_LAYERS_PRINT").is_some() {
        print_graph(&edges);
    }
    assert!(
        !edges.is_empty(),
        "references between modules were extracted"
    );
    let report: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(
        report.is_empty(),
        "{} layer violation(s):\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn architecture_md_states_the_same_layers() {
    let md = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md"),
    )
    .expect("docs/ARCHITECTURE.md is readable");
    let start = md
        .find("<!-- layers-table -->")
        .expect("ARCHITECTURE.md has the layers-table marker");
    let end = md
        .find("<!-- /layers-table -->")
        .expect("ARCHITECTURE.md closes the layers-table");
    // Rows `| n | name | `a`, `b` | … |`, bottom (1) to top.
    let mut stated: Vec<(String, Vec<String>)> = Vec::new();
    for row in md[start..end].lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if cells.len() < 4 || cells[1].parse::<usize>().is_err() {
            continue;
        }
        let mods = cells[3]
            .split(',')
            .map(|m| m.trim().trim_matches('`').to_string())
            .filter(|m| !m.is_empty())
            .collect();
        stated.push((cells[2].to_string(), mods));
    }
    let table: Vec<(String, Vec<String>)> = LAYERS
        .iter()
        .map(|(n, m)| (n.to_string(), m.iter().map(|s| s.to_string()).collect()))
        .collect();
    assert_eq!(
        stated, table,
        "ARCHITECTURE.md's layer table is the checker's"
    );
}

// The checker itself: a violation cannot slip through.

fn synthetic(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(f, s)| (f.to_string(), s.to_string()))
        .collect()
}

const TOY: &[(&str, &[&str])] = &[
    ("low", &["ids", "queue"]),
    ("mid", &["mbox"]),
    ("high", &["env"]),
];

#[test]
fn a_lower_layer_importing_a_higher_one_is_caught_with_file_line_and_arrow() {
    let files = synthetic(&[
        (
            "lib.rs",
            "mod ids;\nmod mbox;\nmod env;\npub use crate::env::Env;\n",
        ),
        (
            "ids.rs",
            "//! ids\n\nuse crate::{\n    queue::Q,\n    env::{Env, builder::B},\n};\n",
        ),
        ("queue.rs", "pub struct Q;\n"),
        (
            "mbox.rs",
            "use crate::ids::Id;\nfn f() { let _ = crate::Env::new(); }\n",
        ),
        ("env.rs", "use crate::mbox::Mbox;\n"),
        ("env/builder.rs", "use super::super::ids::Id;\n"),
    ]);
    let (v, _) = check(TOY, &files);
    let msgs: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "crates/agentry/src/ids.rs:5: `ids` (low) -> `env` (high) points up (`crate::env::Env`)",
            "crates/agentry/src/ids.rs:5: `ids` (low) -> `env` (high) points up (`crate::env::builder::B`)",
            "crates/agentry/src/mbox.rs:2: `mbox` (mid) -> `env` (high) points up (`crate::Env::new`)",
        ]
    );
}

#[test]
fn super_paths_climbing_out_of_a_module_are_caught() {
    let files = synthetic(&[
        ("lib.rs", ""),
        ("ids.rs", ""),
        ("queue.rs", ""),
        ("mbox.rs", ""),
        ("env.rs", ""),
        (
            "ids/inner.rs",
            "fn f() { super::super::env::go(); }\nuse super::super::mbox;\n",
        ),
    ]);
    let (v, _) = check(TOY, &files);
    let msgs: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "crates/agentry/src/ids/inner.rs:1: `ids` (low) -> `env` (high) points up (`crate::env::go`)",
            "crates/agentry/src/ids/inner.rs:2: `ids` (low) -> `mbox` (mid) points up (`crate::mbox`)",
        ]
    );
}

#[test]
fn comments_strings_and_unit_tests_are_not_imports() {
    let files = synthetic(&[
        ("lib.rs", ""),
        (
            "ids.rs",
            "/// See [`Env`](crate::env::Env).\n// use crate::env;\n/* crate::env::X */\nconst S: &str = \"crate::env::Y\";\nconst R: &str = r#\"use crate::env;\"#;\nfn f<'a>(x: &'a u8) -> char { 'c' }\n#[cfg(test)]\nmod tests {\n    use crate::env::Env;\n}\n",
        ),
        ("ids/tests.rs", "use crate::env::Env;\n"),
        ("queue.rs", ""),
        ("mbox.rs", ""),
        ("env.rs", ""),
    ]);
    let (v, _) = check(TOY, &files);
    assert_eq!(v, []);
}

#[test]
fn a_cycle_inside_one_layer_is_caught_and_a_chain_is_not() {
    let chain = synthetic(&[
        ("lib.rs", ""),
        ("ids.rs", ""),
        ("queue.rs", "use crate::ids::Id;\n"),
        ("mbox.rs", ""),
        ("env.rs", ""),
    ]);
    assert_eq!(check(TOY, &chain).0, []);
    let cycle = synthetic(&[
        ("lib.rs", ""),
        ("ids.rs", "\nuse crate::queue::Q;\n"),
        ("queue.rs", "use crate::ids::Id;\n"),
        ("mbox.rs", ""),
        ("env.rs", ""),
    ]);
    let msgs: Vec<String> = check(TOY, &cycle)
        .0
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        msgs,
        [
            "cycle inside the layer `low`:\n    `ids` -> `queue` (crates/agentry/src/ids.rs:2)\n    `queue` -> `ids` (crates/agentry/src/queue.rs:1)"
        ]
    );
}

#[test]
fn unplaced_files_and_stale_entries_are_caught() {
    let files = synthetic(&[
        ("lib.rs", ""),
        ("ids.rs", ""),
        ("queue.rs", ""),
        ("mbox.rs", ""),
        ("stray.rs", ""),
    ]);
    let msgs: Vec<String> = check(TOY, &files)
        .0
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        msgs,
        [
            "layer table entry `env` names no module of the crate",
            "crates/agentry/src/stray.rs: its module sits in no layer",
        ]
    );
}
