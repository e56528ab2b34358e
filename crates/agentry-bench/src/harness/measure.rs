//! Running one case: warm-up repetitions, then the measured ones, within the case's budget.
//!
//! # Ground rules
//! 1. Warm-up repetitions (at least 1) run first; their samples are checked like the others
//!    (a wrong result fails the case) but their times are discarded.
//! 2. At least [`MIN_REPS`] repetitions are measured, unless `--reps` asks for fewer (debugging
//!    only: the header says so). A case may want more; its budget stops adding repetitions
//!    once their total wall time exceeds it, never below the minimum.
//! 3. Every sample must report exactly the declared phases, each with the same unit count in
//!    every repetition; otherwise the case fails with [`BenchError::Harness`].
//! 4. A panicking runner fails its case ([`BenchError::Panic`]); the other cases still run.
//! 5. Peak RSS: a case that asks for memory has the process's peak reset before each measured
//!    repetition and read after it; a sample that carries its own peak (a repetition run in a
//!    child process) is taken as it is, whether the case asked or not. The case reports the
//!    largest peak of its measured repetitions.
//! 6. Cases measured together ([`measure_rounds`]) each keep rules 1–5; they only share the
//!    order of their repetitions.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::harness::{
    BaselineRef, BenchError, Case, CaseMeta, PhaseSpec, Sample, Stats, median_f64, rss,
};

/// The minimum number of measured repetitions (BENCHMARKS.md: "at least 5").
pub const MIN_REPS: u32 = 5;

/// How many repetitions to run, as chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasureConfig {
    /// Warm-up repetitions before the measured ones (at least 1).
    pub warmup: u32,
    /// `--reps`: measured repetitions for every case, overriding the case's own wish. Below
    /// [`MIN_REPS`] it also lowers the minimum (debugging only).
    pub reps: Option<u32>,
}

impl Default for MeasureConfig {
    fn default() -> Self {
        Self {
            warmup: 1,
            reps: None,
        }
    }
}

impl MeasureConfig {
    /// `(minimum, planned)` measured repetitions for a case that wants `case_reps`.
    #[must_use]
    pub fn plan(&self, case_reps: u32) -> (u32, u32) {
        match self.reps {
            Some(reps) if reps < MIN_REPS => (reps.max(1), reps.max(1)),
            Some(reps) => (MIN_REPS, reps),
            None => (MIN_REPS, case_reps.max(MIN_REPS)),
        }
    }

    /// Whether `--reps` went below the minimum (results are for debugging only).
    #[must_use]
    pub fn below_minimum(&self) -> bool {
        self.reps.is_some_and(|reps| reps < MIN_REPS)
    }
}

/// Where a case is, reported before each repetition (for the progress bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepProgress {
    /// A warm-up repetition.
    pub warmup: bool,
    /// 1-based index among the warm-up or the measured repetitions.
    pub index: u32,
    /// How many of that kind are planned.
    pub planned: u32,
}

/// The measured result of one phase of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseResult {
    /// The declaration.
    pub spec: PhaseSpec,
    /// Units per repetition.
    pub units: u64,
    /// Median, min, max over the measured repetitions.
    pub stats: Stats,
    /// `(baseline name, ours / theirs)` in units per second, one per baseline measured.
    pub ratios: Vec<(String, f64)>,
}

impl PhaseResult {
    /// Units per second at the median.
    #[must_use]
    pub fn per_sec(&self) -> Option<f64> {
        self.stats.per_sec(self.units)
    }

    /// Nanoseconds per unit at the median.
    #[must_use]
    pub fn ns_per_unit(&self) -> Option<f64> {
        self.stats.ns_per_unit(self.units)
    }

    /// Ours / seed, in units per second.
    #[must_use]
    pub fn seed_ratio(&self) -> Option<f64> {
        Some(self.per_sec()? / self.spec.seed_per_sec.filter(|s| *s > 0.0)?)
    }

    /// The ratio against the fastest baseline (the smallest ratio), with its name.
    #[must_use]
    pub fn worst_ratio(&self) -> Option<(&str, f64)> {
        self.ratios
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(name, ratio)| (name.as_str(), *ratio))
    }
}

/// A measured case.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// One result per declared phase, in declaration order.
    pub phases: Vec<PhaseResult>,
    /// Measured repetitions.
    pub reps: u32,
    /// Peak RSS over the measured repetitions, when the case asked for memory.
    pub peak_rss_bytes: Option<u64>,
    /// Why the peak RSS is missing or not per repetition, when it is.
    pub rss_note: Option<String>,
    /// The median of each extra metric, in first-seen order.
    pub metrics: Vec<(String, f64)>,
}

/// How a case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseStatus {
    /// Every repetition succeeded.
    Measured(Measured),
    /// A repetition failed (wrong result, broken rule, panic).
    Failed(BenchError),
    /// The case did not run (its runner said so, or its capped series was exhausted).
    Skipped(String),
}

/// The outcome of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReport {
    /// The case's fixed description.
    pub meta: CaseMeta,
    /// The baselines it is compared with.
    pub baselines: Vec<BaselineRef>,
    /// How it ended.
    pub status: CaseStatus,
    /// The wall time of its slowest single repetition, warm-up included (for capping).
    pub longest_rep: Duration,
}

impl CaseReport {
    /// A report of a case that was not run.
    #[must_use]
    pub fn skipped(case: &Case, reason: impl Into<String>) -> Self {
        Self {
            meta: case.meta.clone(),
            baselines: case.baselines.clone(),
            status: CaseStatus::Skipped(reason.into()),
            longest_rep: Duration::ZERO,
        }
    }

    /// The measured result, if the case was measured.
    #[must_use]
    pub fn measured(&self) -> Option<&Measured> {
        match &self.status {
            CaseStatus::Measured(measured) => Some(measured),
            CaseStatus::Failed(_) | CaseStatus::Skipped(_) => None,
        }
    }

    /// The error, if the case failed.
    #[must_use]
    pub fn failure(&self) -> Option<&BenchError> {
        match &self.status {
            CaseStatus::Failed(error) => Some(error),
            CaseStatus::Measured(_) | CaseStatus::Skipped(_) => None,
        }
    }
}

/// Runs `case`: warm-up, then measured repetitions as planned by `config`.
pub fn measure_case(
    case: &mut Case,
    config: &MeasureConfig,
    on_rep: &mut dyn FnMut(RepProgress),
) -> CaseReport {
    let mut run = CaseRun::new(config, case.reps);
    let result = (|| {
        check_declaration(&case.phases)?;
        for index in 1..=run.warmup {
            on_rep(run.warmup_progress(index));
            run.warmup_rep(case)?;
        }
        while run.wants_rep(case) {
            on_rep(run.rep_progress());
            run.measured_rep(case)?;
        }
        Ok(())
    })();
    run.report(case, result)
}

/// Measures `cases` together in rounds (A B C, A B C, …): a round of warm-ups per warm-up
/// repetition, then rounds of one measured repetition of every case that still wants one, so
/// that a drift of the machine's load hits every case alike. A case that fails leaves the
/// rounds; the others go on. Reports come back in the order of `cases`; `on_rep` is told
/// which case (by index) is about to run which repetition.
pub fn measure_rounds(
    cases: &mut [Case],
    config: &MeasureConfig,
    on_rep: &mut dyn FnMut(usize, RepProgress),
) -> Vec<CaseReport> {
    let mut runs: Vec<CaseRun> = cases
        .iter()
        .map(|case| CaseRun::new(config, case.reps))
        .collect();
    let mut results: Vec<Result<(), BenchError>> = cases
        .iter()
        .map(|case| check_declaration(&case.phases))
        .collect();
    let warmup = runs.first().map_or(0, |run| run.warmup);
    for index in 1..=warmup {
        for (i, (case, run)) in cases.iter_mut().zip(&mut runs).enumerate() {
            if results[i].is_ok() {
                on_rep(i, run.warmup_progress(index));
                results[i] = run.warmup_rep(case);
            }
        }
    }
    loop {
        let mut ran = false;
        for (i, (case, run)) in cases.iter_mut().zip(&mut runs).enumerate() {
            if results[i].is_ok() && run.wants_rep(case) {
                on_rep(i, run.rep_progress());
                results[i] = run.measured_rep(case);
                ran = true;
            }
        }
        if !ran {
            break;
        }
    }
    cases
        .iter()
        .zip(runs)
        .zip(results)
        .map(|((case, run), result)| run.report(case, result))
        .collect()
}

/// The repetitions of one case so far.
struct CaseRun {
    warmup: u32,
    min_reps: u32,
    planned: u32,
    /// Units per declared phase, fixed by the first repetition.
    units: Vec<Option<u64>>,
    /// Measured times per declared phase.
    times: Vec<Vec<Duration>>,
    metrics: Vec<(String, Vec<f64>)>,
    peak_rss_bytes: Option<u64>,
    rss_note: Option<String>,
    /// Wall time of the measured repetitions (for the budget).
    spent: Duration,
    reps: u32,
    longest_rep: Duration,
}

impl CaseRun {
    fn new(config: &MeasureConfig, case_reps: u32) -> Self {
        let (min_reps, planned) = config.plan(case_reps);
        Self {
            warmup: config.warmup.max(1),
            min_reps,
            planned,
            units: Vec::new(),
            times: Vec::new(),
            metrics: Vec::new(),
            peak_rss_bytes: None,
            rss_note: None,
            spent: Duration::ZERO,
            reps: 0,
            longest_rep: Duration::ZERO,
        }
    }

    fn warmup_progress(&self, index: u32) -> RepProgress {
        RepProgress {
            warmup: true,
            index,
            planned: self.warmup,
        }
    }

    fn rep_progress(&self) -> RepProgress {
        RepProgress {
            warmup: false,
            index: self.reps + 1,
            planned: self.planned,
        }
    }

    /// Whether another measured repetition is due (rule 2).
    fn wants_rep(&self, case: &Case) -> bool {
        self.reps < self.planned
            && !(self.reps >= self.min_reps && case.budget.is_some_and(|b| self.spent >= b))
    }

    /// One warm-up repetition: checked like the others, its times discarded.
    fn warmup_rep(&mut self, case: &mut Case) -> Result<(), BenchError> {
        let (sample, wall) = run_once(case)?;
        self.longest_rep = self.longest_rep.max(wall);
        self.ordered_phases(&case.phases, &sample)?;
        Ok(())
    }

    fn measured_rep(&mut self, case: &mut Case) -> Result<(), BenchError> {
        if case.memory {
            // Memory kept by the allocator for earlier repetitions would count as this one's.
            crate::harness::allocator::release_free_memory();
            if let Err(error) = rss::reset_peak_rss() {
                self.rss_note = Some(format!("peak RSS not reset per repetition: {error}"));
            }
        }
        let (sample, wall) = run_once(case)?;
        // A runner that measured its own peak (a repetition in a child process) is believed.
        let peak = match sample.peak_rss_bytes() {
            Some(peak) => Some(peak),
            None if case.memory => match rss::peak_rss_bytes() {
                Ok(peak) => Some(peak),
                Err(error) => {
                    self.rss_note = Some(format!("peak RSS unavailable: {error}"));
                    None
                }
            },
            None => None,
        };
        if let Some(peak) = peak {
            self.peak_rss_bytes = Some(self.peak_rss_bytes.map_or(peak, |p| p.max(peak)));
        }
        self.spent += wall;
        self.longest_rep = self.longest_rep.max(wall);
        let elapsed = self.ordered_phases(&case.phases, &sample)?;
        if self.times.is_empty() {
            self.times = vec![Vec::new(); case.phases.len()];
        }
        for (slot, phase) in self.times.iter_mut().zip(elapsed) {
            slot.push(phase);
        }
        for (name, value) in sample.metrics() {
            match self.metrics.iter_mut().find(|(n, _)| n == name) {
                Some((_, values)) => values.push(*value),
                None => self.metrics.push((name.clone(), vec![*value])),
            }
        }
        self.reps += 1;
        Ok(())
    }

    /// The sample's elapsed times in declaration order, checking names and unit counts
    /// (rule 3).
    fn ordered_phases(
        &mut self,
        declared: &[PhaseSpec],
        sample: &Sample,
    ) -> Result<Vec<Duration>, BenchError> {
        if self.units.is_empty() {
            self.units = vec![None; declared.len()];
        }
        ordered_phases(declared, sample, &mut self.units)
    }

    fn report(self, case: &Case, result: Result<(), BenchError>) -> CaseReport {
        let longest_rep = self.longest_rep;
        let status = match result {
            Ok(()) => CaseStatus::Measured(self.finish(case)),
            Err(BenchError::Skip(reason)) => CaseStatus::Skipped(reason),
            Err(error) => CaseStatus::Failed(error),
        };
        CaseReport {
            meta: case.meta.clone(),
            baselines: case.baselines.clone(),
            status,
            longest_rep,
        }
    }

    fn finish(self, case: &Case) -> Measured {
        let phases = case
            .phases
            .iter()
            .zip(self.times)
            .zip(self.units)
            .map(|((spec, times), units)| PhaseResult {
                spec: spec.clone(),
                units: units.unwrap_or(0),
                stats: Stats::of(&times).expect("invariant: at least one measured repetition"),
                ratios: Vec::new(),
            })
            .collect();
        let metrics = self
            .metrics
            .into_iter()
            .filter_map(|(name, values)| Some((name, median_f64(&values)?)))
            .collect();
        Measured {
            phases,
            reps: self.reps,
            peak_rss_bytes: self.peak_rss_bytes,
            rss_note: self.rss_note,
            metrics,
        }
    }
}

/// Calls the runner once, turning a panic into [`BenchError::Panic`].
fn run_once(case: &mut Case) -> Result<(Sample, Duration), BenchError> {
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| (case.runner)()));
    let wall = start.elapsed();
    match result {
        Ok(sample) => sample.map(|sample| (sample, wall)),
        Err(payload) => Err(BenchError::Panic(panic_message(payload.as_ref()))),
    }
}

pub use agentry::panic_message;

fn check_declaration(phases: &[PhaseSpec]) -> Result<(), BenchError> {
    if phases.is_empty() {
        return Err(BenchError::Harness("the case declares no phase".to_owned()));
    }
    for (i, phase) in phases.iter().enumerate() {
        if phases[..i].iter().any(|p| p.name == phase.name) {
            return Err(BenchError::Harness(format!(
                "phase `{}` is declared twice",
                phase.name
            )));
        }
    }
    Ok(())
}

/// The sample's elapsed times in declaration order, checking names and unit counts.
fn ordered_phases(
    declared: &[PhaseSpec],
    sample: &Sample,
    units: &mut [Option<u64>],
) -> Result<Vec<Duration>, BenchError> {
    let reported: Vec<&str> = sample.phases().iter().map(|p| p.name.as_str()).collect();
    let wanted: Vec<&str> = declared.iter().map(|p| p.name.as_str()).collect();
    let mismatch = || {
        BenchError::Harness(format!(
            "the sample reports phases {reported:?}, the case declares {wanted:?}"
        ))
    };
    if reported.len() != wanted.len() {
        return Err(mismatch());
    }
    let mut elapsed = Vec::with_capacity(declared.len());
    for (spec, seen) in declared.iter().zip(units.iter_mut()) {
        let phase = sample
            .phases()
            .iter()
            .find(|p| p.name == spec.name)
            .ok_or_else(mismatch)?;
        match *seen {
            None => *seen = Some(phase.units),
            Some(first) if first != phase.units => {
                return Err(BenchError::Harness(format!(
                    "phase `{}` reported {} units, then {}: unit counts must not change between repetitions",
                    spec.name, first, phase.units
                )));
            }
            Some(_) => {}
        }
        elapsed.push(phase.elapsed);
    }
    Ok(elapsed)
}

#[cfg(test)]
mod tests;
