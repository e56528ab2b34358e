//! Every public name of every library crate of the workspace is reachable at one path
//! (`docs/ARCHITECTURE.md`, "One path per public name").
//!
//! The check reads each crate's module tree from its `lib.rs` (`mod x;` files and inline
//! `mod x { … }` blocks), and in every module its items: the definitions (`struct`, `enum`,
//! `trait`, `fn`, `type`, `const`, `static`, `union`), the modules it declares and the names its
//! `use` trees bring in, each with its visibility. From the crate root it walks what a user can
//! name: a `pub` item of a module reachable at a path is reachable at `path::name`, and a
//! `pub use` makes its target reachable under its own name (or its `as` name) — a module so
//! re-exported brings its whole content along. Each re-export is followed, through private
//! modules and `pub(crate) use`s, to the definition (or module) it names, and a definition
//! reachable at two paths fails the check with both paths.
//!
//! The rules it holds a crate to:
//!
//! 1. a name has one public path: where a public module defines it, the root does not re-export
//!    it, and what the root re-exports comes from a private module;
//! 2. the preludes (modules in [`PRELUDES`]) are the one sanctioned second path: they gather the
//!    everyday vocabulary and are not walked;
//! 3. items under `#[cfg(test)]`, `#[cfg(loom)]` or `#[cfg(doctest)]` are not part of the API;
//!    items behind a feature are (features are additive, so a name must have one path with all
//!    of them on);
//! 4. a glob re-export (`pub use x::*`) outside a prelude fails the check: list the names.
//!
//! Its limits: a macro invoked at a module's level may define any identifier it is given
//! (`counter_id!(MboxId, …)` in `ids.rs`): those are known to re-exports, which resolve to
//! them, but never walked, so a name a macro defines in a public module is not seen; a
//! re-export of another crate's item counts as one path of an outside name (`pub use mio;`
//! in agentry-net).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

mod source;
use source::{Tok, UseLeaf, absolute, ident, lex, use_tree};

/// Modules that re-export on purpose: `(crate directory, module path)`.
const PRELUDES: &[(&str, &str)] = &[("agentry", "prelude")];

/// The workspace's `crates/` directory: every directory in it with a `src/lib.rs` is checked.
fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vis {
    Pub,
    /// `pub(crate)`, `pub(super)`, `pub(in …)` or none.
    Private,
}

/// A `use` leaf as a module holds it.
#[derive(Debug, Clone)]
struct Import {
    vis: Vis,
    /// The path written (a trailing `self` removed).
    path: Vec<String>,
    /// The name it is known by in the module.
    name: String,
    glob: bool,
    file: String,
    line: usize,
}

#[derive(Debug, Default)]
struct Module {
    /// Definitions by name (a name may be in two namespaces: a fn and a module, say).
    defs: BTreeMap<String, Vis>,
    /// Modules it declares.
    children: BTreeMap<String, Vis>,
    imports: Vec<Import>,
}

/// What a path resolves to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Entity {
    /// A definition: its module and name.
    Def(Vec<String>, String),
    Module(Vec<String>),
    /// A name of another crate (the path as written).
    Outside(Vec<String>),
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entity::Def(m, n) if m.is_empty() => write!(f, "`{n}` (defined at the root)"),
            Entity::Def(m, n) => write!(f, "`{n}` (defined in `{}`)", m.join("::")),
            Entity::Module(m) => write!(f, "module `{}`", m.join("::")),
            Entity::Outside(p) => write!(f, "`{}` (another crate's)", p.join("::")),
        }
    }
}

/// A broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Violation {
    /// A name reachable at more than one path.
    TwoPaths { entity: String, paths: Vec<String> },
    /// A `pub use` whose target the check cannot find.
    Unresolved {
        file: String,
        line: usize,
        path: String,
    },
    /// A glob re-export outside a prelude.
    Glob {
        file: String,
        line: usize,
        path: String,
    },
    /// A `mod x;` with no file.
    MissingFile { module: String },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::TwoPaths { entity, paths } => {
                write!(f, "{entity} is public at {} paths:", paths.len())?;
                for p in paths {
                    write!(f, "\n    {p}")?;
                }
                Ok(())
            }
            Violation::Unresolved { file, line, path } => {
                write!(
                    f,
                    "{file}:{line}: `pub use {path}` names nothing the check finds"
                )
            }
            Violation::Glob { file, line, path } => write!(
                f,
                "{file}:{line}: `pub use {path}::*` outside a prelude: list the names"
            ),
            Violation::MissingFile { module } => write!(f, "module `{module}` has no file"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading a crate.

/// A crate: its name as paths print it, its modules by path, the modules whose file is missing.
struct Crate {
    name: String,
    modules: BTreeMap<Vec<String>, Module>,
    missing: Vec<String>,
}

/// Whether the attribute whose tokens (inside `#[…]`) are `attr` takes its item out of the API.
fn cfg_out(attr: &[Tok]) -> bool {
    let words: Vec<&str> = attr
        .iter()
        .filter_map(|t| match t {
            Tok::Ident(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    words.first() == Some(&"cfg")
        && !words.contains(&"not")
        && words
            .iter()
            .any(|w| matches!(*w, "test" | "loom" | "doctest"))
}

/// Reads the items of one file, module `module`, into `modules`; returns the `mod x;` it
/// declares (as module paths) for the caller to read.
fn read_items(
    file: &str,
    src: &str,
    module: &[String],
    modules: &mut BTreeMap<Vec<String>, Module>,
) -> Vec<Vec<String>> {
    let toks = lex(src);
    let mut out_of_line = Vec::new();
    // The modules open at this point: (path, brace depth of its body).
    let mut open: Vec<(Vec<String>, usize)> = vec![(module.to_vec(), 0)];
    modules.entry(module.to_vec()).or_default();
    let mut depth = 0usize;
    let mut skip_next = false;
    let mut i = 0;
    while i < toks.len() {
        let (current, body) = open.last().expect("the file's module").clone();
        match &toks[i].0 {
            Tok::Open => {
                depth += 1;
                i += 1;
                continue;
            }
            Tok::Close => {
                if depth == body && open.len() > 1 {
                    open.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
                continue;
            }
            _ if depth != body => {
                i += 1;
                continue;
            }
            Tok::Other('#') => {
                // An attribute: `#[…]` (an inner `#![…]` only configures the module).
                let inner = toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Other('!'));
                let mut j = if inner { i + 2 } else { i + 1 };
                if toks.get(j).map(|t| &t.0) == Some(&Tok::Other('[')) {
                    let start = j + 1;
                    let mut nest = 1;
                    j += 1;
                    while j < toks.len() && nest > 0 {
                        match toks[j].0 {
                            Tok::Other('[') => nest += 1,
                            Tok::Other(']') => nest -= 1,
                            _ => {}
                        }
                        j += 1;
                    }
                    let attr: Vec<Tok> = toks[start..j - 1].iter().map(|t| t.0.clone()).collect();
                    if !inner && cfg_out(&attr) {
                        skip_next = true;
                    }
                }
                i = j;
                continue;
            }
            _ => {}
        }
        // An item at the module's level: visibility, then its keyword.
        let mut vis = Vis::Private;
        let mut j = i;
        if ident(toks.get(j)) == Some("pub") {
            j += 1;
            if toks.get(j).map(|t| &t.0) == Some(&Tok::Other('(')) {
                while j < toks.len() && toks[j].0 != Tok::Other(')') {
                    j += 1;
                }
                j += 1;
            } else {
                vis = Vis::Pub;
            }
        }
        while matches!(
            ident(toks.get(j)),
            Some("unsafe" | "async" | "extern" | "auto")
        ) || (ident(toks.get(j)) == Some("const") && ident(toks.get(j + 1)) == Some("fn"))
        {
            j += 1;
        }
        let skip = std::mem::take(&mut skip_next);
        let Some(kw) = ident(toks.get(j)) else {
            i = j.max(i + 1);
            continue;
        };
        if toks.get(j + 1).map(|t| &t.0) == Some(&Tok::Other('!')) && kw != "macro_rules" {
            // A macro invoked at the module's level may define any name it is given: they are
            // known to re-exports (as private definitions), never walked as public paths.
            let end = past_group(&toks, j + 2);
            let m = modules.entry(current).or_default();
            for t in &toks[j + 2..end] {
                if let Tok::Ident(name) = &t.0 {
                    m.defs.entry(name.clone()).or_insert(Vis::Private);
                }
            }
            i = end;
            continue;
        }
        match kw {
            "mod" => {
                let Some(name) = ident(toks.get(j + 1)).map(str::to_string) else {
                    i = j + 1;
                    continue;
                };
                let inline = toks.get(j + 2).map(|t| &t.0) == Some(&Tok::Open);
                i = j + 2;
                if skip {
                    if inline {
                        i = past_group(&toks, i);
                    }
                    continue;
                }
                let mut child = current.clone();
                child.push(name.clone());
                modules
                    .entry(current)
                    .or_default()
                    .children
                    .insert(name, vis);
                modules.entry(child.clone()).or_default();
                if inline {
                    depth += 1;
                    open.push((child, depth));
                    i += 1;
                } else {
                    out_of_line.push(child);
                }
            }
            "use" => {
                i = j + 1;
                let mut leaves: Vec<UseLeaf> = Vec::new();
                use_tree(&toks, &mut i, &[], &mut leaves);
                if skip {
                    continue;
                }
                let m = modules.entry(current).or_default();
                for leaf in leaves {
                    let mut path = leaf.path;
                    if path.last().map(String::as_str) == Some("self") {
                        path.pop();
                    }
                    if let Some(last) = path.last().cloned() {
                        m.imports.push(Import {
                            vis,
                            name: leaf.alias.unwrap_or(last),
                            path,
                            glob: leaf.glob,
                            file: file.to_string(),
                            line: leaf.line,
                        });
                    }
                }
            }
            "struct" | "enum" | "trait" | "fn" | "type" | "const" | "static" | "union" => {
                if let Some(name) = ident(toks.get(j + 1))
                    && name != "_"
                    && !skip
                {
                    let m = modules.entry(current).or_default();
                    m.defs.insert(name.to_string(), vis);
                }
                i = j + 2;
            }
            _ => i = j.max(i + 1),
        }
    }
    out_of_line
}

/// The index just past the group (`{…}`, `(…)` or `[…]`) that opens at `toks[i]` (or `i` if
/// none opens there).
fn past_group(toks: &[(Tok, usize)], mut i: usize) -> usize {
    let mut nest = 0usize;
    while i < toks.len() {
        match toks[i].0 {
            Tok::Open | Tok::Other('(') | Tok::Other('[') => nest += 1,
            Tok::Close | Tok::Other(')') | Tok::Other(']') => {
                nest = nest.saturating_sub(1);
                if nest == 0 {
                    return i + 1;
                }
            }
            _ if nest == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Reads a crate from its files (path relative to `src/` → source), starting at `lib.rs`.
fn read_crate(name: &str, files: &BTreeMap<String, String>) -> Crate {
    let mut modules = BTreeMap::new();
    let mut missing = Vec::new();
    let mut todo: Vec<(Vec<String>, String)> = vec![(Vec::new(), "lib.rs".to_string())];
    while let Some((module, file)) = todo.pop() {
        let Some(src) = files.get(&file) else {
            missing.push(module.join("::"));
            continue;
        };
        for child in read_items(&file, src, &module, &mut modules) {
            let stem = child.join("/");
            let flat = format!("{stem}.rs");
            let nested = format!("{stem}/mod.rs");
            let path = if files.contains_key(&nested) {
                nested
            } else {
                flat
            };
            todo.push((child, path));
        }
    }
    Crate {
        name: name.to_string(),
        modules,
        missing,
    }
}

// ---------------------------------------------------------------------------------------------
// Resolving and walking.

/// Re-exports followed deeper than this are taken for a loop.
const MAX_HOPS: usize = 32;

impl Crate {
    /// What `path`, written in module `module`, names; `None` when the check cannot tell.
    fn resolve(&self, module: &[String], path: &[String], hops: usize) -> Option<Entity> {
        if hops > MAX_HOPS {
            return None;
        }
        if let Some(abs) = absolute(module, path) {
            return self.lookup(Vec::new(), &abs, hops);
        }
        let first = path.first()?;
        let m = self.modules.get(module)?;
        if m.children.contains_key(first) {
            return self.lookup(module.to_vec(), path, hops);
        }
        // `use mio;` names the crate `mio`, not itself.
        let own = |x: &&Import| x.path.len() == 1 && &x.path[0] == first;
        match m
            .imports
            .iter()
            .find(|x| !x.glob && &x.name == first && !own(x))
        {
            Some(imp) => {
                let target = self.resolve(module, &imp.path, hops + 1)?;
                self.continue_from(target, &path[1..], hops)
            }
            None => Some(Entity::Outside(path.to_vec())),
        }
    }

    /// `rest` looked up from `target` (what its first segments named).
    fn continue_from(&self, target: Entity, rest: &[String], hops: usize) -> Option<Entity> {
        match target {
            _ if rest.is_empty() => Some(target),
            Entity::Module(t) => self.lookup(t, rest, hops),
            Entity::Outside(p) => Some(Entity::Outside(
                p.into_iter().chain(rest.iter().cloned()).collect(),
            )),
            Entity::Def(..) => None,
        }
    }

    /// `rest` looked up segment by segment from module `at`.
    fn lookup(&self, at: Vec<String>, rest: &[String], hops: usize) -> Option<Entity> {
        let Some((seg, tail)) = rest.split_first() else {
            return Some(Entity::Module(at));
        };
        let m = self.modules.get(&at)?;
        if tail.is_empty() && m.defs.contains_key(seg) {
            return Some(Entity::Def(at, seg.clone()));
        }
        if m.children.contains_key(seg) {
            let mut child = at;
            child.push(seg.clone());
            return self.lookup(child, tail, hops);
        }
        let imp = m.imports.iter().find(|x| !x.glob && &x.name == seg)?;
        let target = self.resolve(&at, &imp.path, hops + 1)?;
        self.continue_from(target, tail, hops)
    }

    /// Every public path of every name, from the root; `preludes` are not walked.
    fn public_paths(&self, preludes: &[&str]) -> (BTreeMap<Entity, Vec<String>>, Vec<Violation>) {
        let mut paths: BTreeMap<Entity, Vec<String>> = BTreeMap::new();
        let mut violations = Vec::new();
        let mut todo: Vec<(Vec<String>, String)> = vec![(Vec::new(), self.name.clone())];
        while let Some((at, public)) = todo.pop() {
            let prelude = preludes.contains(&at.join("::").as_str());
            // A module that re-exports one of its ancestors would be walked forever.
            if prelude || public.matches("::").count() > MAX_HOPS {
                continue;
            }
            let Some(m) = self.modules.get(&at) else {
                continue;
            };
            let mut add = |e: Entity, name: &str| {
                paths
                    .entry(e)
                    .or_default()
                    .push(format!("{public}::{name}"));
            };
            for (name, _) in m.defs.iter().filter(|(_, v)| **v == Vis::Pub) {
                add(Entity::Def(at.clone(), name.clone()), name);
            }
            for (name, _) in m.children.iter().filter(|(_, v)| **v == Vis::Pub) {
                let mut child = at.clone();
                child.push(name.clone());
                add(Entity::Module(child.clone()), name);
                todo.push((child, format!("{public}::{name}")));
            }
            for imp in m.imports.iter().filter(|x| x.vis == Vis::Pub) {
                if imp.glob {
                    violations.push(Violation::Glob {
                        file: format!("{}/{}", self.name, imp.file),
                        line: imp.line,
                        path: imp.path.join("::"),
                    });
                    continue;
                }
                match self.resolve(&at, &imp.path, 0) {
                    None => violations.push(Violation::Unresolved {
                        file: format!("{}/{}", self.name, imp.file),
                        line: imp.line,
                        path: imp.path.join("::"),
                    }),
                    Some(e) => {
                        if let Entity::Module(t) = &e {
                            todo.push((t.clone(), format!("{public}::{}", imp.name)));
                        }
                        add(e, &imp.name);
                    }
                }
            }
        }
        (paths, violations)
    }

    /// The check: every public name at one path.
    fn check(&self, preludes: &[&str]) -> Vec<Violation> {
        let (paths, mut violations) = self.public_paths(preludes);
        for module in &self.missing {
            violations.push(Violation::MissingFile {
                module: format!("{}::{module}", self.name),
            });
        }
        for (entity, mut at) in paths {
            if at.len() > 1 {
                at.sort();
                violations.push(Violation::TwoPaths {
                    entity: format!("{}: {entity}", self.name),
                    paths: at,
                });
            }
        }
        violations
    }
}

// ---------------------------------------------------------------------------------------------
// The workspace.

/// Every `.rs` file under `src`, by path relative to it.
fn read_sources(src: &Path) -> BTreeMap<String, String> {
    source::read_rs_files(src).into_iter().collect()
}

/// Every library crate of the workspace: (directory name, its `src/`).
fn library_crates() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(crates_dir())
        .expect("crates/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("src/lib.rs").is_file())
        .map(|p| {
            let dir = p.file_name().expect("name").to_string_lossy().into_owned();
            (dir, p.join("src"))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_public_name_of_every_library_crate_has_one_path() {
    let crates = library_crates();
    // The workspace's library crates are all here (a moved `crates/` would make this vacuous).
    let names: Vec<&str> = crates.iter().map(|(d, _)| d.as_str()).collect();
    for expected in ["agentry", "agentry-net", "agentry-remote", "agentry-timer"] {
        assert!(
            names.contains(&expected),
            "{expected} not found in {names:?}"
        );
    }
    let mut violations = Vec::new();
    let mut counts = Vec::new();
    for (dir, src) in &crates {
        let krate = read_crate(&dir.replace('-', "_"), &read_sources(src));
        let preludes: Vec<&str> = PRELUDES
            .iter()
            .filter(|(d, _)| d == dir)
            .map(|(_, m)| *m)
            .collect();
        let (paths, _) = krate.public_paths(&preludes);
        counts.push(format!("{dir}: {}", paths.len()));
        if dir == "agentry" {
            // The walk reaches the root's names, the public modules' and the re-exported ones.
            for (entity, path) in [
                (
                    Entity::Def(vec!["env".into()], "Env".into()),
                    "agentry::Env",
                ),
                (
                    Entity::Def(
                        vec!["disp".into(), "thread_pool".into()],
                        "ThreadPoolDispatcher".into(),
                    ),
                    "agentry::disp::ThreadPoolDispatcher",
                ),
            ] {
                assert_eq!(
                    paths.get(&entity),
                    Some(&vec![path.to_string()]),
                    "{entity}"
                );
            }
        }
        violations.extend(krate.check(&preludes));
    }
    let report: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(
        report.is_empty(),
        "{} violation(s) of one path per public name (names per crate: {}):\n{}",
        report.len(),
        counts.join(", "),
        report.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The check's own tests: synthetic crates.

fn synthetic(files: &[(&str, &str)]) -> Crate {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(f, s)| (f.to_string(), s.to_string()))
        .collect();
    read_crate("toy", &files)
}

fn rendered(violations: &[Violation]) -> Vec<String> {
    violations.iter().map(ToString::to_string).collect()
}

#[test]
fn a_public_modules_name_re_exported_at_the_root_is_caught_with_both_paths() {
    let toy = synthetic(&[
        ("lib.rs", "pub mod chain;\npub use chain::Chain;\n"),
        ("chain.rs", "pub struct Chain;\npub struct Stats;\n"),
    ]);
    assert_eq!(
        toy.check(&[]),
        vec![Violation::TwoPaths {
            entity: "toy: `Chain` (defined in `chain`)".into(),
            paths: vec!["toy::Chain".into(), "toy::chain::Chain".into()],
        }]
    );
}

#[test]
fn re_exports_through_private_modules_are_one_path_each() {
    // `inner` is private: `Chain` is public only where `chain` re-exports it, and the root's
    // re-export of a private module's name (renamed, through `pub(crate) use`) is its one path.
    let toy = synthetic(&[
        (
            "lib.rs",
            "mod hidden;\npub mod chain;\npub use hidden::Renamed as Shown;\npub use hidden::Made;\n",
        ),
        ("chain.rs", "mod inner;\npub use inner::Chain;\n"),
        ("chain/inner.rs", "pub struct Chain;\n"),
        (
            "hidden.rs",
            "mod deep { pub struct Renamed; }\npub(crate) use deep::Renamed;\n\
             make_id!(\n    /// doc\n    Made, COUNTER\n);\n",
        ),
    ]);
    let (paths, violations) = toy.public_paths(&[]);
    assert_eq!(rendered(&violations), Vec::<String>::new());
    assert_eq!(
        paths.get(&Entity::Def(
            vec!["chain".into(), "inner".into()],
            "Chain".into()
        )),
        Some(&vec!["toy::chain::Chain".to_string()])
    );
    assert_eq!(
        paths.get(&Entity::Def(
            vec!["hidden".into(), "deep".into()],
            "Renamed".into()
        )),
        Some(&vec!["toy::Shown".to_string()])
    );
    // A name a macro makes resolves; the macro's other arguments are no public paths.
    assert_eq!(
        paths.get(&Entity::Def(vec!["hidden".into()], "Made".into())),
        Some(&vec!["toy::Made".to_string()])
    );
    assert_eq!(paths.len(), 4, "{paths:#?}");
}

#[test]
fn a_public_module_re_exported_elsewhere_doubles_every_name_in_it() {
    let toy = synthetic(&[
        (
            "lib.rs",
            "mod mbox;\npub use mbox::limit;\npub mod more { pub use crate::limit; }\n",
        ),
        ("mbox.rs", "pub mod limit { pub enum Overload {} }\n"),
    ]);
    let report = rendered(&toy.check(&[]));
    assert_eq!(report.len(), 2, "{report:#?}");
    assert!(report[0].starts_with("toy: `Overload` (defined in `mbox::limit`) is public at 2"));
    assert!(report[1].starts_with("toy: module `mbox::limit` is public at 2"));
}

#[test]
fn methods_fields_test_code_and_preludes_are_not_public_paths() {
    let toy = synthetic(&[
        (
            "lib.rs",
            "pub mod prelude;\nmod agent;\npub use agent::Agent;\n\
             #[cfg(test)]\nmod tests { pub use crate::agent::Agent; }\n\
             #[cfg(test)]\npub use agent::Agent as TestAgent;\n\
             #[cfg(not(loom))]\npub struct Kept(pub u8);\n\
             impl Kept { pub fn new() -> Self { Kept(0) } pub const ZERO: u8 = 0; }\n",
        ),
        ("agent.rs", "pub trait Agent { fn go(&self); }\n"),
        ("prelude.rs", "pub use crate::{Agent, Kept};\n"),
    ]);
    let (paths, violations) = toy.public_paths(&["prelude"]);
    assert_eq!(rendered(&violations), Vec::<String>::new());
    let mut all: Vec<&String> = paths.values().flatten().collect();
    all.sort();
    assert_eq!(all, ["toy::Agent", "toy::Kept", "toy::prelude"]);
    // Without the exemption, the prelude's names are second paths.
    assert_eq!(toy.check(&[]).len(), 2);
}

#[test]
fn globs_unresolved_re_exports_and_missing_files_are_reported() {
    let toy = synthetic(&[
        (
            "lib.rs",
            "mod a;\nmod gone;\npub use a::*;\npub use a::Missing;\npub use a::b::Deeper;\n",
        ),
        ("a.rs", "pub struct There;\n"),
    ]);
    assert_eq!(
        rendered(&toy.check(&[])),
        vec![
            "toy/lib.rs:3: `pub use a::*` outside a prelude: list the names".to_string(),
            "toy/lib.rs:4: `pub use a::Missing` names nothing the check finds".to_string(),
            "toy/lib.rs:5: `pub use a::b::Deeper` names nothing the check finds".to_string(),
            "module `toy::gone` has no file".to_string(),
        ]
    );
}
