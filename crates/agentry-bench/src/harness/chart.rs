//! Which charts a benchmark asks for, and how its measured cases become chart data.
//!
//! A chart is drawn per phase. Lines are grouped into series by whatever distinguishes the
//! cases besides the x axis: among the implementation, the dispatcher and the parameters, the
//! ones that vary form the series name ("heap", "list"; "agentry variant=3").

use std::path::{Path, PathBuf};

use crate::harness::plot::{self, BarGroup, Series};
use crate::harness::{CaseMeta, CaseReport, OutputError, PhaseResult};

/// A chart a benchmark asks `--plot DIR` to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// Log-log line chart: x = the parameter `x_param`, y = `y`; one series per variant
    /// (the Asterisk scheduler table: x = N, y = time, one series per engine).
    LogLog {
        /// The parameter on the x axis (`"N"`).
        x_param: &'static str,
        /// What is on the y axis.
        y: ChartY,
    },
    /// Thread scaling: x = threads, y = units/s; one series per variant.
    ThreadScaling,
    /// Grouped bars of units/s: one group per case label, one bar per implementation.
    Bars,
}

impl ChartKind {
    fn slug(self) -> &'static str {
        match self {
            Self::LogLog { .. } => "loglog",
            Self::ThreadScaling => "threads",
            Self::Bars => "bars",
        }
    }
}

/// The y axis of a [`ChartKind::LogLog`] chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartY {
    /// Median wall time of the phase, in seconds.
    MedianSeconds,
    /// Nanoseconds per unit (ns/op, ns/msg).
    NsPerUnit,
    /// Units per second.
    PerSec,
}

impl ChartY {
    fn value(self, phase: &PhaseResult) -> Option<f64> {
        match self {
            Self::MedianSeconds => Some(phase.stats.median.as_secs_f64()),
            Self::NsPerUnit => phase.ns_per_unit(),
            Self::PerSec => phase.per_sec(),
        }
    }

    fn label(self, phase: &PhaseResult) -> String {
        let unit = phase.spec.unit;
        match self {
            Self::MedianSeconds => "median time (s)".to_owned(),
            Self::NsPerUnit => format!("ns/{}", unit.noun()),
            Self::PerSec => format!("{}/s", unit.plural()),
        }
    }
}

/// Draws every chart `charts` asks for from one benchmark's reports into `dir`; returns the
/// files written. Charts without any measured point are not written.
///
/// # Errors
/// When a chart file cannot be written.
pub fn draw_charts(
    dir: &Path,
    bench: &str,
    charts: &[ChartKind],
    reports: &[CaseReport],
) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    let phases = phase_names(reports);
    for &kind in charts {
        for phase in &phases {
            let points: Vec<(&CaseMeta, &PhaseResult)> = reports
                .iter()
                .filter_map(|r| {
                    Some((
                        &r.meta,
                        r.measured()?
                            .phases
                            .iter()
                            .find(|p| &p.spec.name == phase)?,
                    ))
                })
                .collect();
            let Some(&(_, first)) = points.first() else {
                continue;
            };
            let name = if phases.len() == 1 {
                format!("{bench}-{}.svg", kind.slug())
            } else {
                format!("{bench}-{}-{}.svg", file_safe(phase), kind.slug())
            };
            let path = dir.join(name);
            let rate_label = format!("{}/s", first.spec.unit.plural());
            let drawn = match kind {
                ChartKind::LogLog { x_param, y } => {
                    let series = line_series(&points, Some(x_param), |meta, p| {
                        Some((meta.param(x_param)? as f64, y.value(p)?))
                    });
                    let title = format!("{bench}: {phase}, {} vs {x_param}", y.label(first));
                    let nonempty = series.iter().any(|s| !s.points.is_empty());
                    nonempty
                        && plot::loglog_chart(&path, &title, x_param, &y.label(first), &series)
                            .map(|()| true)?
                }
                ChartKind::ThreadScaling => {
                    let series = line_series(&points, None, |meta, p| {
                        Some((meta.threads as f64, p.per_sec()?))
                    });
                    let title = format!("{bench}: {phase}, {rate_label} vs threads");
                    let nonempty = series.iter().any(|s| !s.points.is_empty());
                    nonempty
                        && plot::scaling_chart(&path, &title, &rate_label, &series)
                            .map(|()| true)?
                }
                ChartKind::Bars => {
                    let groups = bar_groups(&points);
                    let title =
                        format!("{bench}: {phase}, {rate_label} per case and implementation");
                    !groups.is_empty()
                        && plot::bar_chart(&path, &title, &rate_label, &groups).map(|()| true)?
                }
            };
            if drawn {
                written.push(path);
            }
        }
    }
    Ok(written)
}

fn phase_names(reports: &[CaseReport]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for phase in reports
        .iter()
        .filter_map(CaseReport::measured)
        .flat_map(|m| &m.phases)
    {
        if !names.contains(&phase.spec.name) {
            names.push(phase.spec.name.clone());
        }
    }
    names
}

/// The parts of a case that name its series: impl, dispatcher, and each parameter but the
/// x axis parameter.
fn variant_parts(meta: &CaseMeta, x_param: Option<&str>) -> Vec<(String, String)> {
    let mut parts = vec![
        ("impl".to_owned(), meta.impl_name.clone()),
        (
            "dispatcher".to_owned(),
            meta.dispatcher.clone().unwrap_or_default(),
        ),
    ];
    for (name, value) in &meta.params {
        if Some(name.as_str()) != x_param {
            parts.push((name.clone(), format!("{name}={value}")));
        }
    }
    parts
}

/// One series per variant, named by the parts that vary across `points`.
fn line_series(
    points: &[(&CaseMeta, &PhaseResult)],
    x_param: Option<&str>,
    point: impl Fn(&CaseMeta, &PhaseResult) -> Option<(f64, f64)>,
) -> Vec<Series> {
    let parts: Vec<Vec<(String, String)>> = points
        .iter()
        .map(|(meta, _)| variant_parts(meta, x_param))
        .collect();
    let varying = |key: &str| {
        let mut values = parts
            .iter()
            .map(|p| p.iter().find(|(k, _)| k == key).map(|(_, v)| v));
        let first = values.next().flatten();
        values.any(|v| v != first)
    };
    let mut series: Vec<Series> = Vec::new();
    for ((meta, phase), parts) in points.iter().zip(&parts) {
        let name: Vec<&str> = parts
            .iter()
            .filter(|(k, _)| varying(k))
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
            .collect();
        let name = if name.is_empty() {
            meta.impl_name.clone()
        } else {
            name.join(" ")
        };
        let Some(xy) = point(meta, phase) else {
            continue;
        };
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(xy),
            None => series.push(Series {
                name,
                points: vec![xy],
            }),
        }
    }
    series
}

fn bar_groups(points: &[(&CaseMeta, &PhaseResult)]) -> Vec<BarGroup> {
    let mut groups: Vec<BarGroup> = Vec::new();
    for (meta, phase) in points {
        let Some(rate) = phase.per_sec() else {
            continue;
        };
        let bar = (meta.impl_name.clone(), rate);
        match groups.iter_mut().find(|g| g.label == meta.label) {
            Some(group) => group.bars.push(bar),
            None => groups.push(BarGroup {
                label: meta.label.clone(),
                bars: vec![bar],
            }),
        }
    }
    groups
}

fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
