//! The human table printed on the terminal: one block per benchmark, one row per case-phase.

use std::time::Duration;

use crate::harness::{CaseReport, CaseStatus, PhaseResult, Unit};

/// Column headers of the table.
const HEADERS: [&str; 12] = [
    "case",
    "impl",
    "phase",
    "median",
    "min",
    "max",
    "throughput",
    "per unit",
    "seed",
    "ours/seed",
    "ratio",
    "notes",
];
/// Which columns are right-aligned (the numbers).
const RIGHT: [bool; 12] = [
    false, false, false, true, true, true, true, true, true, true, false, false,
];

/// The table of one benchmark: a title line with its description, then the rows.
#[must_use]
pub fn bench_table(id: &str, description: &str, reports: &[CaseReport]) -> String {
    format!("== {id}: {description}\n{}", case_table(reports))
}

/// The rows of one benchmark's table under their column headers: one row per case-phase, a
/// failed or skipped case on one row with its reason.
#[must_use]
pub fn case_table(reports: &[CaseReport]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut messages: Vec<(usize, String)> = Vec::new();
    for report in reports {
        let (label, impl_name) = (report.meta.label.clone(), report.meta.impl_name.clone());
        match &report.status {
            CaseStatus::Measured(measured) => {
                for (i, phase) in measured.phases.iter().enumerate() {
                    let unit = phase.spec.unit;
                    let first = i == 0;
                    let mut notes = Vec::new();
                    if first {
                        if let Some(peak) = measured.peak_rss_bytes {
                            notes.push(format!("peak RSS {}", bytes(peak)));
                        }
                        if let Some(note) = &measured.rss_note {
                            notes.push(note.clone());
                        }
                        notes.extend(
                            measured
                                .metrics
                                .iter()
                                .map(|(n, v)| format!("{n} {}", number(*v))),
                        );
                        notes.push(format!("{} reps", measured.reps));
                    }
                    if first {
                        notes.extend(report.meta.notes.iter().cloned());
                    }
                    let ratio = ratio_cell(phase);
                    rows.push(vec![
                        if first { label.clone() } else { String::new() },
                        if first {
                            impl_name.clone()
                        } else {
                            String::new()
                        },
                        phase.spec.name.clone(),
                        duration(phase.stats.median),
                        duration(phase.stats.min),
                        duration(phase.stats.max),
                        phase
                            .per_sec()
                            .map_or_else(|| "-".to_owned(), |r| rate(r, unit)),
                        phase.ns_per_unit().map_or_else(
                            || "-".to_owned(),
                            |ns| format!("{} ns/{}", number(ns), unit.noun()),
                        ),
                        phase
                            .spec
                            .seed_per_sec
                            .map_or_else(String::new, |s| rate(s, unit)),
                        phase
                            .seed_ratio()
                            .map_or_else(String::new, |r| format!("{}×", number(r))),
                        ratio,
                        notes.join(", "),
                    ]);
                }
            }
            CaseStatus::Failed(error) => {
                messages.push((rows.len(), format!("FAILED: {error}")));
                rows.push(vec![label, impl_name]);
            }
            CaseStatus::Skipped(reason) => {
                messages.push((rows.len(), format!("skipped: {reason}")));
                rows.push(vec![label, impl_name]);
            }
        }
    }

    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let header: Vec<String> = HEADERS.iter().map(|h| (*h).to_owned()).collect();
    text.push_str(&render_row(&header, &widths));
    for (index, row) in rows.iter().enumerate() {
        let mut line = render_row(row, &widths);
        if let Some((_, message)) = messages.iter().find(|(i, _)| *i == index) {
            line.pop();
            line.push_str(&format!("  {message}\n"));
        }
        text.push_str(&line);
    }
    if reports.is_empty() {
        text.push_str("(no case)\n");
    }
    text
}

/// The ratio column: ours / theirs against each baseline, the fastest one first.
fn ratio_cell(phase: &PhaseResult) -> String {
    let Some((fastest, worst)) = phase.worst_ratio() else {
        return String::new();
    };
    if phase.ratios.len() == 1 {
        return format!("{worst:.2}× vs {fastest}");
    }
    let others: Vec<String> = phase
        .ratios
        .iter()
        .filter(|(name, _)| name != fastest)
        .map(|(name, ratio)| format!("{ratio:.2}× vs {name}"))
        .collect();
    format!("{worst:.2}× vs {fastest} (fastest), {}", others.join(", "))
}

fn render_row(cells: &[String], widths: &[usize]) -> String {
    let mut line = String::new();
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            line.push_str("  ");
        }
        let pad = widths[i].saturating_sub(cell.chars().count());
        if RIGHT[i] {
            line.push_str(&" ".repeat(pad));
            line.push_str(cell);
        } else {
            line.push_str(cell);
            line.push_str(&" ".repeat(pad));
        }
    }
    let mut line = line.trim_end().to_owned();
    line.push('\n');
    line
}

/// The failure summary printed after all tables: one line per failed case, or `None`.
#[must_use]
pub fn failure_summary(reports: &[CaseReport]) -> Option<String> {
    let failed: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            let error = r.failure()?;
            Some(format!(
                "FAILED {} / {} ({}): {error}\n",
                r.meta.bench, r.meta.label, r.meta.impl_name
            ))
        })
        .collect();
    (!failed.is_empty()).then(|| format!("{} case(s) failed:\n{}", failed.len(), failed.concat()))
}

/// A duration with a unit chosen for 3–4 significant digits: `812 ns`, `2.10 ms`, `1.25 s`.
#[must_use]
pub fn duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", number(value))
}

/// A rate with an SI multiplier: `47.6M msg/s`, `17.0k agents/s`.
#[must_use]
pub fn rate(per_sec: f64, unit: Unit) -> String {
    let (value, prefix) = if per_sec >= 1e9 {
        (per_sec / 1e9, "G")
    } else if per_sec >= 1e6 {
        (per_sec / 1e6, "M")
    } else if per_sec >= 1e3 {
        (per_sec / 1e3, "k")
    } else {
        (per_sec, "")
    };
    let noun = match unit {
        Unit::Msg => "msg",
        Unit::Op => "op",
        Unit::Agent => "agents",
    };
    format!("{}{prefix} {noun}/s", number(value))
}

/// A number with 3 significant digits (more for large integers parts): `21.2`, `0.412`, `287`.
#[must_use]
pub fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 || magnitude == 0.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

fn bytes(value: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    format!("{} MiB", number(value as f64 / MIB))
}

#[cfg(test)]
mod tests;
