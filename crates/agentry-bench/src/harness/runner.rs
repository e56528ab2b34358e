//! One run of the binary: parse the command line, select benchmarks, measure every case,
//! print the tables, write the report files, decide the exit status.
//!
//! # Ground rules
//! 1. Output files are opened before anything is measured, so a wrong path fails at once.
//! 2. Benchmarks run in the order given, their cases in the order they declare (interleaved
//!    cases last, together in rounds); a benchmark's table (and its JSON lines and charts)
//!    is written as soon as it finishes, its cases in declaration order; the CSV and Markdown
//!    files once every benchmark has run.
//! 3. A failed case does not stop the run; it is listed at the end and makes the exit status 1.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use clap::Parser;

use crate::harness::chart::draw_charts;
use crate::harness::json::{JsonWriter, machine_line, record_line};
use crate::harness::report::{bench_table, duration, failure_summary};
use crate::harness::{
    ALL, BenchDef, Case, CaseMeta, CaseReport, CaseStatus, Cli, MachineInfo, MeasureConfig,
    OutputError, Progress, Record, Registry, Scale, apply_ratios, case_records, csv, markdown,
    measure_case, measure_rounds,
};

/// Exit status: every case passed.
pub const EXIT_OK: u8 = 0;
/// Exit status: a case failed (wrong result, panic, broken harness rule) or a report file could
/// not be written.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: the command line was wrong (unknown id, bad option).
pub const EXIT_USAGE: u8 = 2;

/// What a run did, from which [`exit_code`] decides the exit status.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every case run (or skipped), in run order.
    pub reports: Vec<CaseReport>,
    /// Report files or charts that could not be written.
    pub output_errors: Vec<OutputError>,
    /// The command line was wrong.
    pub usage_error: bool,
}

/// The exit status of a run: [`EXIT_USAGE`] for a usage error, [`EXIT_FAILED`] when any case
/// failed or an output could not be written, [`EXIT_OK`] otherwise (skipped cases are fine).
#[must_use]
pub fn exit_code(outcome: &Outcome) -> u8 {
    if outcome.usage_error {
        EXIT_USAGE
    } else if !outcome.output_errors.is_empty()
        || outcome.reports.iter().any(|r| r.failure().is_some())
    {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// The whole program: parses `args` (the first is the program name), runs what they select
/// from `registry`, writes tables to `out` and errors to `err`, returns the exit status.
pub fn run_cli<I, T>(args: I, registry: &Registry, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => exit_code(&run(&cli, registry, out, err)),
        Err(error) => {
            // --help and --version are "errors" with exit code 0, printed on stdout.
            let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE);
            let target: &mut dyn Write = if code == EXIT_OK { out } else { err };
            // Best effort: nothing better to do if the terminal is gone.
            let _ignored = write!(target, "{}", error.render());
            code
        }
    }
}

/// Runs what `cli` selects from `registry`.
pub fn run(cli: &Cli, registry: &Registry, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
    let mut outcome = Outcome::default();
    if cli.list {
        say(out, &registry.listing());
        return outcome;
    }
    let selection = match registry.select(&cli.ids) {
        Ok(selection) => selection,
        Err(error) => {
            say(err, &format!("error: {error}\n"));
            outcome.usage_error = true;
            return outcome;
        }
    };
    for word in &selection.empty_words {
        let message = if word == ALL {
            "no benchmark is registered yet: `all` has nothing to run\n".to_owned()
        } else {
            format!("`{word}` has no benchmark registered yet: nothing to run\n")
        };
        say(out, &message);
    }
    if selection.benches.is_empty() {
        return outcome;
    }

    // Rule 1: open every output before measuring anything.
    let mut json = match cli.json.as_deref().map(JsonWriter::create).transpose() {
        Ok(json) => json,
        Err(error) => return failed_output(outcome, err, error),
    };
    for path in [&cli.csv, &cli.md].into_iter().flatten() {
        if let Err(error) = File::create(path) {
            return failed_output(outcome, err, OutputError::io(path, error));
        }
    }
    if let Some(dir) = &cli.plot
        && let Err(error) = std::fs::create_dir_all(dir)
    {
        return failed_output(outcome, err, OutputError::io(dir, error));
    }

    let machine = MachineInfo::collect(cli.scale(), cli.measure_config());
    say(out, &format!("{}\n", machine.header_text()));
    let mut keep = |outcome: &mut Outcome, result: Result<(), OutputError>| {
        if let Err(error) = result {
            say(err, &format!("error: {error}\n"));
            outcome.output_errors.push(error);
        }
    };
    if let Some(json) = &mut json {
        keep(&mut outcome, json.line(&machine_line(&machine.fields())));
    }

    let config = cli.measure_config();
    let mut progress = Progress::new(!cli.no_progress);
    let mut records: Vec<Record> = Vec::new();
    let mut md_sections: Vec<String> = Vec::new();
    for bench in &selection.benches {
        let mut reports = run_bench(bench, cli.scale(), &config, &mut progress);
        apply_ratios(&mut reports);
        progress.print(
            out,
            &format!("{}\n", bench_table(bench.id, bench.description, &reports)),
        );
        let bench_records: Vec<Record> = reports.iter().flat_map(case_records).collect();
        if let Some(json) = &mut json {
            for record in &bench_records {
                keep(&mut outcome, json.line(&record_line(record)));
            }
        }
        if let Some(dir) = &cli.plot {
            let drawn = draw_charts(dir, bench.id, bench.charts, &reports);
            keep(
                &mut outcome,
                drawn.map(|paths| progress.print(out, &written(&paths))),
            );
        }
        if cli.md.is_some() {
            md_sections.push(markdown::bench_section(
                bench.id,
                bench.description,
                &reports,
            ));
        }
        records.extend(bench_records);
        outcome.reports.append(&mut reports);
    }
    progress.finish();

    if let Some(path) = &cli.csv {
        keep(&mut outcome, csv::write_csv(path, &records));
    }
    let tally = tally(&outcome.reports);
    if let Some(path) = &cli.md {
        let text = markdown::document(&cli.command_line(), &machine, &tally, &md_sections);
        keep(&mut outcome, markdown::write_markdown(path, &text));
    }
    let mut files: Vec<&Path> = Vec::new();
    files.extend(cli.json.as_deref());
    files.extend(cli.csv.as_deref());
    files.extend(cli.md.as_deref());
    if !files.is_empty() {
        say(out, &written(&files));
    }
    say(out, &format!("{tally}\n"));
    if let Some(summary) = failure_summary(&outcome.reports) {
        say(err, &summary);
    }
    outcome
}

/// How many cases ran, failed and were skipped: `12 case(s) run: 0 failed, 1 skipped`.
fn tally(reports: &[CaseReport]) -> String {
    let failed = reports.iter().filter(|r| r.failure().is_some()).count();
    let skipped = reports
        .iter()
        .filter(|r| matches!(r.status, CaseStatus::Skipped(_)))
        .count();
    format!(
        "{} case(s) run: {failed} failed, {skipped} skipped",
        reports.len()
    )
}

/// Measures every case of `bench`, skipping the rest of a capped series once one of its cases
/// needed more than its budget for a single repetition; interleaved cases are measured after
/// the others, together in rounds. Reports come back in declaration order.
fn run_bench(
    bench: &BenchDef,
    scale: Scale,
    config: &MeasureConfig,
    progress: &mut Progress,
) -> Vec<CaseReport> {
    let cases = bench.build_cases(scale);
    progress.add_cases(cases.len());
    let mut interleaved: Vec<(usize, Case)> = Vec::new();
    let mut sequential: Vec<(usize, Case)> = Vec::new();
    for (index, case) in cases.into_iter().enumerate() {
        if case.interleave {
            interleaved.push((index, case));
        } else {
            sequential.push((index, case));
        }
    }
    let mut reports: Vec<(usize, CaseReport)> = Vec::new();
    // (series, why its remaining cases are skipped)
    let mut capped: Vec<(String, String)> = Vec::new();
    for (index, mut case) in sequential {
        progress.start_case(&case.meta);
        let cap = case
            .cap_series
            .as_ref()
            .and_then(|s| capped.iter().find(|(series, _)| series == s));
        let report = match cap {
            Some((_, reason)) => CaseReport::skipped(&case, reason.clone()),
            None => measure_case(&mut case, config, &mut |rep| progress.rep(rep)),
        };
        if let (Some(series), Some(budget)) = (&case.cap_series, case.budget)
            && report.longest_rep > budget
            && !capped.iter().any(|(s, _)| s == series)
        {
            let reason = format!(
                "capped: `{}` needed {} for one repetition, over the budget of {}",
                case.meta.label,
                duration(report.longest_rep),
                duration(budget)
            );
            capped.push((series.clone(), reason));
        }
        progress.finish_case();
        reports.push((index, report));
    }
    if !interleaved.is_empty() {
        let (indices, mut cases): (Vec<usize>, Vec<Case>) = interleaved.into_iter().unzip();
        let metas: Vec<CaseMeta> = cases.iter().map(|case| case.meta.clone()).collect();
        let round_reports = measure_rounds(&mut cases, config, &mut |i, rep| {
            progress.start_case(&metas[i]);
            progress.rep(rep);
        });
        for (index, report) in indices.into_iter().zip(round_reports) {
            progress.finish_case();
            reports.push((index, report));
        }
    }
    reports.sort_by_key(|(index, _)| *index);
    reports.into_iter().map(|(_, report)| report).collect()
}

/// Writes to the terminal. Best effort: it may be a closed pipe; the report files are checked.
fn say(target: &mut dyn Write, text: &str) {
    let _ignored = target.write_all(text.as_bytes());
}

fn failed_output(mut outcome: Outcome, err: &mut dyn Write, error: OutputError) -> Outcome {
    // Best effort, as for every terminal write.
    let _ignored = writeln!(err, "error: {error}");
    outcome.output_errors.push(error);
    outcome
}

fn written<P: AsRef<Path>>(paths: &[P]) -> String {
    paths
        .iter()
        .map(|p| format!("wrote {}\n", p.as_ref().display()))
        .collect()
}
