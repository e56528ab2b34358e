//! The list of benchmarks a binary knows, and how command-line ids select from it.

use std::fmt;

use crate::harness::{Case, ChartKind, Scale};

/// The word that selects every registered benchmark.
pub const ALL: &str = "all";

/// Builds the cases of a benchmark for a scale.
pub type CasesFn = fn(Scale) -> Vec<Case>;

/// One registered benchmark.
///
/// ```
/// use agentry_bench::harness::{BenchDef, ChartKind, Scale};
/// static SEND: BenchDef = BenchDef {
///     id: "send",
///     description: "one agent sends N messages to its own mbox; nobody handles them",
///     cases: |_scale: Scale| Vec::new(),
///     charts: &[ChartKind::Bars],
/// };
/// assert!(SEND.build_cases(Scale::Quick).is_empty());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BenchDef {
    /// The id given on the command line (`ring`).
    pub id: &'static str,
    /// One line: the workload, exactly (printed by `--list` and above the table).
    pub description: &'static str,
    /// The cases for a scale, in the order they run and are printed.
    pub cases: CasesFn,
    /// The charts `--plot DIR` draws for this benchmark.
    pub charts: &'static [ChartKind],
}

impl BenchDef {
    /// The cases for `scale`, each stamped with this benchmark's id.
    #[must_use]
    pub fn build_cases(&self, scale: Scale) -> Vec<Case> {
        let mut cases = (self.cases)(scale);
        for case in &mut cases {
            self.id.clone_into(&mut case.meta.bench);
        }
        cases
    }
}

/// A named set of benchmarks selected by one word (`compare`: the peer comparison).
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The word given on the command line.
    pub id: &'static str,
    /// One line, printed by `--list`.
    pub description: &'static str,
    /// The ids of the member benchmarks, in run order.
    pub members: &'static [&'static str],
}

/// Every benchmark (and group) a binary can run.
#[derive(Debug, Clone, Copy)]
pub struct Registry {
    benches: &'static [BenchDef],
    groups: &'static [Group],
    /// Selected by their id or a group, never by `all`.
    extras: &'static [BenchDef],
}

/// The benchmarks chosen by the command-line ids, in run order without repeats.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The benchmarks to run.
    pub benches: Vec<&'static BenchDef>,
    /// Words that selected nothing (`all` or a group with no benchmark registered yet).
    pub empty_words: Vec<String>,
}

/// The command-line ids do not name benchmarks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectError {
    /// No id was given.
    NoId {
        /// Every word that would have been accepted.
        valid: Vec<String>,
        /// No benchmark is registered at all.
        registry_empty: bool,
    },
    /// Some ids are unknown.
    Unknown {
        /// The unknown words, as given.
        unknown: Vec<String>,
        /// Every word that would have been accepted.
        valid: Vec<String>,
        /// No benchmark is registered at all.
        registry_empty: bool,
    },
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (valid, registry_empty) = match self {
            Self::NoId {
                valid,
                registry_empty,
            } => {
                f.write_str("no benchmark id given")?;
                (valid, *registry_empty)
            }
            Self::Unknown {
                unknown,
                valid,
                registry_empty,
            } => {
                let quoted: Vec<String> = unknown.iter().map(|u| format!("`{u}`")).collect();
                let noun = if unknown.len() == 1 { "id" } else { "ids" };
                write!(f, "unknown benchmark {noun} {}", quoted.join(", "))?;
                (valid, *registry_empty)
            }
        };
        write!(f, "; valid ids: {}", valid.join(", "))?;
        if registry_empty {
            f.write_str(" (no benchmark is registered yet)")?;
        }
        f.write_str(" (see --list)")
    }
}

impl std::error::Error for SelectError {}

impl Registry {
    /// A registry of `benches` and `groups`.
    #[must_use]
    pub const fn new(benches: &'static [BenchDef], groups: &'static [Group]) -> Self {
        Self {
            benches,
            groups,
            extras: &[],
        }
    }

    /// Adds benchmarks that run only when named, by their id or through a group, and that
    /// `all` leaves out (the peer comparison, which starts a process per repetition).
    #[must_use]
    pub const fn with_extras(self, extras: &'static [BenchDef]) -> Self {
        Self { extras, ..self }
    }

    /// The registered benchmarks that `all` runs, in registration order.
    #[must_use]
    pub fn benches(&self) -> &'static [BenchDef] {
        self.benches
    }

    /// The benchmarks run only when named (see [`with_extras`](Self::with_extras)).
    #[must_use]
    pub fn extras(&self) -> &'static [BenchDef] {
        self.extras
    }

    /// The registered groups.
    #[must_use]
    pub fn groups(&self) -> &'static [Group] {
        self.groups
    }

    /// The benchmark with id `id`.
    #[must_use]
    pub fn get(&self, id: &str) -> Option<&'static BenchDef> {
        self.benches.iter().chain(self.extras).find(|b| b.id == id)
    }

    /// Every word `select` accepts: `all`, the groups, the benchmark ids.
    #[must_use]
    pub fn valid_words(&self) -> Vec<String> {
        let mut words = vec![ALL.to_owned()];
        words.extend(self.groups.iter().map(|g| g.id.to_owned()));
        words.extend(
            self.benches
                .iter()
                .chain(self.extras)
                .map(|b| b.id.to_owned()),
        );
        words
    }

    /// Resolves command-line words (benchmark ids, `all`, group ids) to benchmarks.
    ///
    /// # Errors
    /// [`SelectError::NoId`] when `words` is empty, [`SelectError::Unknown`] listing every
    /// word that names nothing.
    pub fn select(&self, words: &[String]) -> Result<Selection, SelectError> {
        if words.is_empty() {
            return Err(SelectError::NoId {
                valid: self.valid_words(),
                registry_empty: self.benches.is_empty(),
            });
        }
        let mut selection = Selection::default();
        let mut unknown = Vec::new();
        for word in words {
            let chosen: Vec<&'static BenchDef> = if word == ALL {
                self.benches.iter().collect()
            } else if let Some(group) = self.groups.iter().find(|g| g.id == word) {
                group.members.iter().filter_map(|id| self.get(id)).collect()
            } else if let Some(bench) = self.get(word) {
                vec![bench]
            } else {
                unknown.push(word.clone());
                continue;
            };
            if chosen.is_empty() {
                selection.empty_words.push(word.clone());
            }
            for bench in chosen {
                if !selection.benches.iter().any(|b| b.id == bench.id) {
                    selection.benches.push(bench);
                }
            }
        }
        if unknown.is_empty() {
            Ok(selection)
        } else {
            Err(SelectError::Unknown {
                unknown,
                valid: self.valid_words(),
                registry_empty: self.benches.is_empty(),
            })
        }
    }

    /// The `--list` text: one line per benchmark and group with its description.
    #[must_use]
    pub fn listing(&self) -> String {
        let width = self
            .benches
            .iter()
            .chain(self.extras)
            .map(|b| b.id.len())
            .chain(self.groups.iter().map(|g| g.id.len()))
            .chain([ALL.len()])
            .max()
            .unwrap_or(0);
        let mut text = String::new();
        if self.benches.is_empty() {
            text.push_str("no benchmark is registered yet\n");
        }
        for bench in self.benches {
            text.push_str(&format!("{:width$}  {}\n", bench.id, bench.description));
        }
        text.push_str(&format!("{ALL:width$}  every benchmark above\n"));
        for bench in self.extras {
            text.push_str(&format!(
                "{:width$}  {} (not in `all`)\n",
                bench.id, bench.description
            ));
        }
        for group in self.groups {
            let members = if group.members.is_empty() {
                "no benchmark registered yet".to_owned()
            } else {
                group.members.join(", ")
            };
            text.push_str(&format!(
                "{:width$}  {} ({members})\n",
                group.id, group.description
            ));
        }
        text
    }

    /// Problems in the registry itself: duplicate or reserved ids, groups naming unknown
    /// benchmarks. Empty when the registry is sound (checked by a test).
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut seen: Vec<&str> = vec![ALL];
        let ids = self
            .benches
            .iter()
            .chain(self.extras)
            .map(|b| b.id)
            .chain(self.groups.iter().map(|g| g.id));
        for id in ids {
            if seen.contains(&id) {
                problems.push(format!("id `{id}` is registered twice or is reserved"));
            }
            if id.is_empty() || id.starts_with('-') || id.contains(char::is_whitespace) {
                problems.push(format!("id `{id}` cannot be typed on a command line"));
            }
            seen.push(id);
        }
        for group in self.groups {
            for member in group.members {
                if self.get(member).is_none() {
                    problems.push(format!(
                        "group `{}` names unknown benchmark `{member}`",
                        group.id
                    ));
                }
            }
        }
        problems
    }
}
