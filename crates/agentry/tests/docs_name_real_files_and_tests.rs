//! The project's documents name files and tests that exist, and the architecture map names every
//! source file.
//!
//! `docs/SEMANTICS.md` proves each guarantee by naming its test, `docs/ARCHITECTURE.md` maps
//! every file, `README.md` and `BENCHMARKS.md` point at scripts and results. A rename or a move
//! that forgets them leaves a promise without its proof; this check fails instead. The rules:
//!
//! 1. every name in backticks that ends in a file extension (`slab.rs`, `agent/{cell,ctx}.rs`,
//!    `scripts/test.sh`) names a file of the repository — the path as written is the end of a
//!    real path, brace groups expanded;
//! 2. `file.rs::test_name` (also `file.rs::module::test_name`) names a function of that file or
//!    of the files of its module directory (`file/…`);
//! 3. `module::tests::test_name` names a function of the crates' sources;
//! 4. every source file of the library crates (tests and benchmark code aside) is named in
//!    `docs/ARCHITECTURE.md` by its path under its crate's `src/`.
//!
//! A document may name a file that does not exist only where [`NAMED_ABSENT`] lists it (the
//! text says the code is *not* there); the list fails once such a file exists, so it only shrinks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The documents checked, relative to the repository root.
const DOCUMENTS: &[&str] = &[
    "docs/SEMANTICS.md",
    "docs/ARCHITECTURE.md",
    "README.md",
    "BENCHMARKS.md",
];

/// Extensions that make a backticked name a file reference.
const FILE_EXTENSIONS: &[&str] = &["rs", "md", "sh", "py", "toml", "yml"];

/// `(document, file)`: a file a document names as absent on purpose.
const NAMED_ABSENT: &[(&str, &str)] = &[("docs/ARCHITECTURE.md", "coop/register.rs")];

/// The crates whose every source file `docs/ARCHITECTURE.md` must name (the benchmark crate's
/// section names its many workload files in prose, by module).
const MAPPED_CRATES: &[&str] = &[
    "agentry",
    "agentry-timer",
    "agentry-net",
    "agentry-remote",
    "agentry-cluster",
    "agentry-metrics",
    "agentry-otel",
    "agentry-tokio",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file of the repository, as `/`-separated paths relative to its root (build output and
/// VCS data aside).
fn repository_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, root, out);
                }
            } else if let Ok(relative) = path.strip_prefix(root) {
                out.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// The names a document puts in backticks, each with its line number.
fn backticked(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut parts = line.split('`');
        parts.next();
        while let Some(inside) = parts.next() {
            out.push((index + 1, inside.to_string()));
            parts.next();
        }
    }
    out
}

/// `a/{b,c}.rs` → `a/b.rs`, `a/c.rs` (one brace group; nested groups are not used).
fn expand_braces(name: &str) -> Vec<String> {
    match (name.find('{'), name.find('}')) {
        (Some(open), Some(close)) if open < close => name[open + 1..close]
            .split(',')
            .map(|choice| format!("{}{}{}", &name[..open], choice.trim(), &name[close + 1..]))
            .collect(),
        _ => vec![name.to_string()],
    }
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A backticked name split into the file it names and the item path after it, when it names a
/// file (`x.rs::a::b` → (`x.rs`, [`a`, `b`])).
fn file_reference(name: &str) -> Option<(String, Vec<String>)> {
    let (file, items) = match name.find(".rs::") {
        Some(at) => (&name[..at + 3], &name[at + 5..]),
        None => (name, ""),
    };
    let extension = file.rsplit_once('.')?.1;
    let plain_path = file
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./{},".contains(c));
    if !FILE_EXTENSIONS.contains(&extension) || !plain_path || file.starts_with('.') {
        return None;
    }
    let items: Vec<String> = items
        .split("::")
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect();
    if !items.iter().all(|item| is_identifier(item)) {
        return None;
    }
    Some((file.to_string(), items))
}

/// The repository's files whose path ends with `name` (as whole path components).
fn files_named<'a>(files: &'a [String], name: &str) -> Vec<&'a String> {
    files
        .iter()
        .filter(|path| *path == name || path.ends_with(&format!("/{name}")))
        .collect()
}

/// Whether one of `files` (or a file of its module directory) defines a function `name`.
fn defines_fn(root: &Path, all: &[String], files: &[&String], name: &str) -> bool {
    let pattern = format!("fn {name}(");
    let generic = format!("fn {name}<");
    files.iter().any(|file| {
        let module_dir = format!("{}/", file.trim_end_matches(".rs"));
        std::iter::once(*file)
            .chain(all.iter().filter(|path| path.starts_with(&module_dir)))
            .any(|path| {
                std::fs::read_to_string(root.join(path))
                    .is_ok_and(|text| text.contains(&pattern) || text.contains(&generic))
            })
    })
}

#[test]
fn documents_name_files_and_tests_that_exist() {
    let root = repo_root();
    let files = repository_files(&root);
    let sources: Vec<&String> = files
        .iter()
        .filter(|path| path.starts_with("crates/") && path.ends_with(".rs"))
        .collect();
    let mut broken = Vec::new();
    let mut absent_used = BTreeSet::new();
    for document in DOCUMENTS {
        let text = std::fs::read_to_string(root.join(document))
            .unwrap_or_else(|e| panic!("{document}: {e}"));
        for (line, name) in backticked(&text) {
            if let Some((file, items)) = file_reference(&name) {
                for file in expand_braces(&file) {
                    let found = files_named(&files, &file);
                    if found.is_empty() {
                        if NAMED_ABSENT.contains(&(document, file.as_str())) {
                            absent_used.insert((*document, file.clone()));
                        } else {
                            broken.push(format!("{document}:{line}: no file `{file}`"));
                        }
                    } else if let Some(test) = items.last()
                        && !defines_fn(&root, &files, &found, test)
                    {
                        broken.push(format!("{document}:{line}: `{file}` has no fn `{test}`"));
                    }
                }
            } else if let Some((_, test)) = name.rsplit_once("::tests::")
                && is_identifier(test)
                && !defines_fn(&root, &files, &sources, test)
            {
                broken.push(format!("{document}:{line}: no unit test `{name}`"));
            }
        }
    }
    for (document, file) in NAMED_ABSENT {
        if !absent_used.contains(&(*document, file.to_string())) {
            broken.push(format!(
                "NAMED_ABSENT lists `{file}` for {document}, which no longer names it absent \
                 (or it exists now): drop it from the list"
            ));
        }
    }
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

#[test]
fn the_architecture_map_names_every_source_file() {
    let root = repo_root();
    let map = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let named: BTreeSet<String> = backticked(&map)
        .into_iter()
        .flat_map(|(_, name)| expand_braces(&name))
        .collect();
    let mut unnamed = Vec::new();
    for krate in MAPPED_CRATES {
        let prefix = format!("crates/{krate}/src/");
        for path in repository_files(&root) {
            let Some(relative) = path.strip_prefix(&prefix) else {
                continue;
            };
            let unit_tests = relative == "tests.rs"
                || relative.ends_with("/tests.rs")
                || relative.contains("/tests/");
            if relative.ends_with(".rs") && !unit_tests && !named.contains(relative) {
                unnamed.push(format!("{krate}: `{relative}`"));
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "docs/ARCHITECTURE.md does not name these source files:\n{}",
        unnamed.join("\n")
    );
}

#[test]
fn the_reference_reader_recognises_what_the_documents_write() {
    assert_eq!(
        file_reference("agent_finish_runs_once.rs::every_dispatcher"),
        Some((
            "agent_finish_runs_once.rs".into(),
            vec!["every_dispatcher".into()]
        ))
    );
    assert_eq!(
        file_reference("scripts/test.sh"),
        Some(("scripts/test.sh".into(), vec![]))
    );
    assert_eq!(file_reference("Ctx::env() -> &EnvHandle"), None);
    assert_eq!(file_reference("env.rs::{a}"), None);
    assert_eq!(
        expand_braces("agent/{cell,ctx, restart}.rs"),
        vec!["agent/cell.rs", "agent/ctx.rs", "agent/restart.rs"]
    );
    assert_eq!(
        backticked("a `x.rs` b `y` c"),
        vec![(1, "x.rs".to_string()), (1, "y".to_string())]
    );
    let root = repo_root();
    let files = repository_files(&root);
    let this = files_named(&files, "docs_name_real_files_and_tests.rs");
    assert_eq!(this.len(), 1, "{this:?}");
    assert!(defines_fn(
        &root,
        &files,
        &this,
        "documents_name_files_and_tests_that_exist"
    ));
    assert!(!defines_fn(&root, &files, &this, "no_such_test_anywhere"));
}
