//! One measured configuration of a benchmark: its fixed parameters, its declared phases and the
//! runner that performs one repetition.

use std::fmt;
use std::time::Duration;

use crate::harness::{BenchError, PhaseSpec, Sample};

/// Performs one repetition: builds the workload (untimed), times its phases, verifies the result.
pub type Runner = Box<dyn FnMut() -> Result<Sample, BenchError>>;

/// The implementation name of a case when none is given.
pub const DEFAULT_IMPL: &str = "agentry";

/// The fixed, printed description of a case (everything but the runner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseMeta {
    /// The benchmark id (`ring`), filled in by the registry.
    pub bench: String,
    /// The case label, showing its parameters (`one_thread N=1000 M=100`).
    pub label: String,
    /// The implementation measured: `agentry`, a peer (`actix`), or a baseline (`std_net`).
    pub impl_name: String,
    /// The dispatcher (or engine) label, when the case has one.
    pub dispatcher: Option<String>,
    /// Worker threads used by the case.
    pub threads: usize,
    /// The parameters, in declaration order.
    pub params: Vec<(String, u64)>,
    /// Remarks printed with the results (a peer default that had to change, and why).
    pub notes: Vec<String>,
}

impl CaseMeta {
    /// The value of parameter `name`, if declared.
    #[must_use]
    pub fn param(&self, name: &str) -> Option<u64> {
        self.params.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }
}

/// A reference to another case of the same benchmark, measured in the same run, against which
/// a `ratio` (ours / theirs, in units per second) is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineRef {
    /// The baseline's case label; `None` means the same label as the referring case.
    pub label: Option<String>,
    /// The baseline's implementation name.
    pub impl_name: String,
}

impl BaselineRef {
    /// Whether `meta` is the case this reference names, seen from a case labelled `own_label`.
    pub(crate) fn matches(&self, own_label: &str, meta: &CaseMeta) -> bool {
        let label = self.label.as_deref().unwrap_or(own_label);
        meta.label == label && meta.impl_name == self.impl_name
    }
}

impl fmt::Display for BaselineRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.label {
            None => f.write_str(&self.impl_name),
            Some(label) => write!(f, "{label} ({})", self.impl_name),
        }
    }
}

/// A measured configuration of a benchmark. Built with [`Case::builder`].
pub struct Case {
    pub(crate) meta: CaseMeta,
    pub(crate) phases: Vec<PhaseSpec>,
    pub(crate) runner: Runner,
    pub(crate) baselines: Vec<BaselineRef>,
    pub(crate) memory: bool,
    pub(crate) reps: u32,
    pub(crate) budget: Option<Duration>,
    pub(crate) cap_series: Option<String>,
    pub(crate) interleave: bool,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("meta", &self.meta)
            .field("phases", &self.phases)
            .field("baselines", &self.baselines)
            .field("memory", &self.memory)
            .field("reps", &self.reps)
            .field("budget", &self.budget)
            .field("cap_series", &self.cap_series)
            .field("interleave", &self.interleave)
            .finish_non_exhaustive()
    }
}

impl Case {
    /// Starts a case with its label, which should show its parameters
    /// (`"one_thread N=1000 M=100"`). Finish it with [`CaseBuilder::runner`].
    ///
    /// ```
    /// use agentry_bench::harness::{timed, verify_eq, Case, PhaseSpec, Sample};
    /// let n = 1_000u64;
    /// let case = Case::builder(format!("N={n}"))
    ///     .param("N", n)
    ///     .phase(PhaseSpec::msgs("sum"))
    ///     .runner(move || {
    ///         let (sum, elapsed) = timed(|| (0..n).sum::<u64>());
    ///         verify_eq("sum", n * (n - 1) / 2, sum)?;
    ///         Ok(Sample::new().phase("sum", elapsed, n))
    ///     });
    /// assert_eq!(case.meta().params, vec![("N".to_owned(), 1_000)]);
    /// ```
    pub fn builder(label: impl Into<String>) -> CaseBuilder {
        CaseBuilder {
            meta: CaseMeta {
                bench: String::new(),
                label: label.into(),
                impl_name: DEFAULT_IMPL.to_owned(),
                dispatcher: None,
                threads: 1,
                params: Vec::new(),
                notes: Vec::new(),
            },
            phases: Vec::new(),
            baselines: Vec::new(),
            memory: false,
            reps: crate::harness::MIN_REPS,
            budget: None,
            cap_series: None,
            interleave: false,
        }
    }

    /// The fixed description of the case.
    #[must_use]
    pub fn meta(&self) -> &CaseMeta {
        &self.meta
    }

    /// Runs one repetition outside the harness (the test suite uses it at
    /// [`Scale::Smoke`](crate::harness::Scale::Smoke) to check every benchmark's result).
    ///
    /// # Errors
    /// Whatever the runner returns (a failed verification, a setup error).
    pub fn run_once(&mut self) -> Result<crate::harness::Sample, BenchError> {
        (self.runner)()
    }

    /// The declared phases, in declaration order.
    #[must_use]
    pub fn phases(&self) -> &[PhaseSpec] {
        &self.phases
    }

    /// The baselines this case is compared with.
    #[must_use]
    pub fn baselines(&self) -> &[BaselineRef] {
        &self.baselines
    }
}

/// Builder of a [`Case`]; every setter is optional except the runner, which finishes it.
#[derive(Debug)]
#[must_use = "a case builder does nothing until `.runner(..)` turns it into a Case"]
pub struct CaseBuilder {
    meta: CaseMeta,
    phases: Vec<PhaseSpec>,
    baselines: Vec<BaselineRef>,
    memory: bool,
    reps: u32,
    budget: Option<Duration>,
    cap_series: Option<String>,
    interleave: bool,
}

impl CaseBuilder {
    /// The implementation measured (default `"agentry"`): a peer such as `"actix"`, or a
    /// baseline such as `"std_net"`.
    pub fn impl_name(mut self, name: impl Into<String>) -> Self {
        self.meta.impl_name = name.into();
        self
    }

    /// The dispatcher (or engine) label: `"one_thread"`, `"active_group"`, `"heap"`.
    pub fn dispatcher(mut self, label: impl Into<String>) -> Self {
        self.meta.dispatcher = Some(label.into());
        self
    }

    /// Worker threads used (default 1).
    pub fn threads(mut self, threads: usize) -> Self {
        self.meta.threads = threads;
        self
    }

    /// Adds a fixed parameter; parameters keep their declaration order.
    pub fn param(mut self, name: impl Into<String>, value: u64) -> Self {
        self.meta.params.push((name.into(), value));
        self
    }

    /// Declares a timed phase. Every sample must report exactly the declared phases.
    pub fn phase(mut self, phase: PhaseSpec) -> Self {
        self.phases.push(phase);
        self
    }

    /// Compares this case with the case of the same label run by `impl_name` (a peer).
    pub fn peer(mut self, impl_name: impl Into<String>) -> Self {
        self.baselines.push(BaselineRef {
            label: None,
            impl_name: impl_name.into(),
        });
        self
    }

    /// Compares this case with the case `label` run by `impl_name` (a baseline such as the
    /// plain blocking std::net echo).
    pub fn baseline(mut self, label: impl Into<String>, impl_name: impl Into<String>) -> Self {
        self.baselines.push(BaselineRef {
            label: Some(label.into()),
            impl_name: impl_name.into(),
        });
        self
    }

    /// Reports the peak RSS (VmHWM) of the repetitions, reset before each one.
    pub fn memory(mut self) -> Self {
        self.memory = true;
        self
    }

    /// Measured repetitions wanted (default and minimum 5; `--reps` overrides).
    pub fn reps(mut self, reps: u32) -> Self {
        self.reps = reps;
        self
    }

    /// Stops adding repetitions once their total wall time exceeds `budget`, never going below
    /// the minimum number of repetitions.
    pub fn budget(mut self, budget: Duration) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Puts the case in a capped series (`"list"` in `sched`): once one case of the series has
    /// needed more than its budget for a single repetition, the later cases of the series in
    /// the same benchmark are skipped (the sorted-list baseline at large N). Needs a budget.
    pub fn cap_series(mut self, series: impl Into<String>) -> Self {
        self.cap_series = Some(series.into());
        self
    }

    /// Adds a remark printed with the results (table notes, `note` in JSON and CSV): a peer
    /// default that had to change, and why.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.meta.notes.push(note.into());
        self
    }

    /// Measures the case in rounds with the other interleaved cases of its benchmark
    /// (A B C, A B C, …) instead of all its repetitions in a row, so that a drift of the
    /// machine's load hits every implementation alike (the peer comparison). Interleaved cases
    /// run after the benchmark's other cases and are never capped.
    pub fn interleave(mut self) -> Self {
        self.interleave = true;
        self
    }

    /// Finishes the case with the function that performs one repetition.
    pub fn runner(self, runner: impl FnMut() -> Result<Sample, BenchError> + 'static) -> Case {
        Case {
            meta: self.meta,
            phases: self.phases,
            runner: Box::new(runner),
            baselines: self.baselines,
            memory: self.memory,
            reps: self.reps,
            budget: self.budget,
            cap_series: self.cap_series,
            interleave: self.interleave,
        }
    }
}
