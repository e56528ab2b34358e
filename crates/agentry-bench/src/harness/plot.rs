//! SVG charts drawn with plotters from plain data: a line chart (log-log for the Asterisk
//! scheduler table, linear for thread scaling) and a grouped bar chart (peer comparisons).
//!
//! Plotters is built without its `ttf`/`ab_glyph` features: text sizes are estimated by its
//! built-in naive font metrics and the SVG carries `<text>` elements that the viewer renders
//! with its own `sans-serif`, so drawing needs no system font at all.

use std::ops::Range;
use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::harness::OutputError;

/// Chart size in pixels.
const SIZE: (u32, u32) = (960, 600);

/// One line of a line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points, drawn in x order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart, described as plain data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineChart<'a> {
    /// Caption above the chart.
    pub title: &'a str,
    /// X axis description.
    pub x_label: &'a str,
    /// Y axis description.
    pub y_label: &'a str,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The lines.
    pub series: &'a [Series],
}

/// One group of bars (a case), one bar per implementation.
#[derive(Debug, Clone, PartialEq)]
pub struct BarGroup {
    /// The group label printed under the bars.
    pub label: String,
    /// `(implementation, value)`, one bar each.
    pub bars: Vec<(String, f64)>,
}

/// A log-log line chart (x = N, y = time or ns/op; one series per implementation or engine).
///
/// # Errors
/// When the file cannot be written.
pub fn loglog_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), OutputError> {
    line_chart(
        path,
        &LineChart {
            title,
            x_label,
            y_label,
            log_x: true,
            log_y: true,
            series,
        },
    )
}

/// A thread-scaling chart: x = threads, y = throughput from 0, one series per variant.
///
/// # Errors
/// When the file cannot be written.
pub fn scaling_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), OutputError> {
    line_chart(
        path,
        &LineChart {
            title,
            x_label: "threads",
            y_label,
            log_x: false,
            log_y: false,
            series,
        },
    )
}

/// Draws a line chart to an SVG file. Points that a log axis cannot show (≤ 0, not finite)
/// are left out.
///
/// # Errors
/// When the file cannot be written.
pub fn line_chart(path: &Path, chart: &LineChart<'_>) -> Result<(), OutputError> {
    let series: Vec<Series> = chart
        .series
        .iter()
        .map(|s| {
            let mut points: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| {
                    x.is_finite()
                        && y.is_finite()
                        && (!chart.log_x || x > 0.0)
                        && (!chart.log_y || y > 0.0)
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                name: s.name.clone(),
                points,
            }
        })
        .collect();
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let x = axis_range(xs, chart.log_x, false);
    let y = axis_range(ys, chart.log_y, true);
    // Integer x values on a linear axis (threads): one tick per integer, no 1.5 threads.
    let integer_x = !chart.log_x
        && series
            .iter()
            .flat_map(|s| &s.points)
            .all(|p| p.0.fract() == 0.0)
        && x.end - x.start <= 32.0;
    let x_ticks = if integer_x {
        (x.end - x.start).ceil() as usize + 1
    } else {
        10
    };
    let axes = Axes { x_ticks, integer_x };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let result = match (chart.log_x, chart.log_y) {
        (true, true) => draw_lines(&root, chart, &series, axes, x.log_scale(), y.log_scale()),
        (true, false) => draw_lines(&root, chart, &series, axes, x.log_scale(), y),
        (false, true) => draw_lines(&root, chart, &series, axes, x, y.log_scale()),
        (false, false) => draw_lines(&root, chart, &series, axes, x, y),
    };
    result
        .and_then(|()| root.present())
        .map_err(|e| plot_error(path, &e))
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// How the x axis is labelled.
#[derive(Debug, Clone, Copy)]
struct Axes {
    x_ticks: usize,
    integer_x: bool,
}

fn draw_lines<X, Y>(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &LineChart<'_>,
    series: &[Series],
    axes: Axes,
    x: X,
    y: Y,
) -> DrawResult
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    root.fill(&WHITE)?;
    let mut ctx = ChartBuilder::on(root)
        .caption(chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .x_labels(axes.x_ticks)
        .x_label_formatter(&|v| {
            if axes.integer_x && v.fract() != 0.0 {
                String::new()
            } else {
                si(*v)
            }
        })
        .y_label_formatter(&|v| si(*v))
        .draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        ctx.draw_series(LineSeries::new(
            s.points.iter().copied(),
            color.stroke_width(2),
        ))?
        .label(s.name.as_str())
        .legend(move |(lx, ly)| PathElement::new([(lx, ly), (lx + 20, ly)], color.stroke_width(2)));
        ctx.draw_series(PointSeries::of_element(
            s.points.iter().copied(),
            3,
            color.filled(),
            &|c, size, style| EmptyElement::at(c) + Circle::new((0, 0), size, style),
        ))?;
    }
    if !series.is_empty() {
        ctx.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}

/// Draws a grouped bar chart (one group per case, one bar per implementation) to an SVG file.
///
/// # Errors
/// When the file cannot be written.
pub fn bar_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    groups: &[BarGroup],
) -> Result<(), OutputError> {
    let mut impls: Vec<&str> = Vec::new();
    for group in groups {
        for (name, _) in &group.bars {
            if !impls.contains(&name.as_str()) {
                impls.push(name);
            }
        }
    }
    let values = groups.iter().flat_map(|g| g.bars.iter().map(|b| b.1));
    let top = values.filter(|v| v.is_finite()).fold(0.0_f64, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let longest = groups
        .iter()
        .map(|g| g.label.chars().count())
        .max()
        .unwrap_or(0);
    // Long labels under many groups would overlap: turn them vertical.
    let vertical = groups.len() > 1 && longest * 8 > (SIZE.0 as usize - 120) / groups.len().max(1);
    let label_area = if vertical {
        (longest as u32 * 8).clamp(40, 260)
    } else {
        40
    };

    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let draw = || -> DrawResult {
        root.fill(&WHITE)?;
        let width = groups.len().max(1) as f64;
        let mut ctx = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(label_area)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..width - 0.5, 0.0..top)?;
        ctx.configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .y_desc(y_label)
            .y_label_formatter(&|v| si(*v))
            .draw()?;
        let slot = 0.8 / impls.len().max(1) as f64;
        for (k, name) in impls.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            let bars = groups.iter().enumerate().filter_map(|(g, group)| {
                let value = group.bars.iter().find(|(n, _)| n == name)?.1;
                let left = g as f64 - 0.4 + k as f64 * slot;
                Some(Rectangle::new(
                    [(left, 0.0), (left + slot * 0.9, value)],
                    color.filled(),
                ))
            });
            ctx.draw_series(bars)?.label(*name).legend(move |(lx, ly)| {
                Rectangle::new([(lx, ly - 5), (lx + 10, ly + 5)], color.filled())
            });
        }
        if !impls.is_empty() {
            ctx.configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
        }
        let style = TextStyle::from(("sans-serif", 14).into_font()).color(&BLACK);
        for (g, group) in groups.iter().enumerate() {
            let (px, py) = ctx.backend_coord(&(g as f64, 0.0));
            let (style, pos) = if vertical {
                (
                    style
                        .transform(FontTransform::Rotate90)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                    (px, py + 8),
                )
            } else {
                (style.pos(Pos::new(HPos::Center, VPos::Top)), (px, py + 8))
            };
            root.draw(&Text::new(group.label.as_str(), pos, style))?;
        }
        Ok(())
    };
    draw()
        .and_then(|()| root.present())
        .map_err(|e| plot_error(path, &e))
}

fn plot_error(path: &Path, error: &DrawingAreaErrorKind<std::io::Error>) -> OutputError {
    OutputError::Plot {
        path: path.to_owned(),
        message: error.to_string(),
    }
}

/// A padded axis range over `values`; positive for a log axis, from 0 for a linear y axis.
fn axis_range(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> Range<f64> {
    let (mut low, mut high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    if !low.is_finite() || !high.is_finite() {
        (low, high) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (low / 1.5)..(high * 1.5)
    } else if from_zero {
        let high = if high > 0.0 { high * 1.1 } else { 1.0 };
        low.min(0.0)..high
    } else if high > low {
        let pad = (high - low) * 0.05;
        (low - pad)..(high + pad)
    } else {
        (low - 0.5)..(high + 0.5)
    }
}

/// A short number with an SI prefix: `1.5k`, `2M`, `250µ`.
#[must_use]
pub fn si(value: f64) -> String {
    const PREFIXES: [(f64, &str); 8] = [
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
    ];
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs();
    let (scale, prefix) = PREFIXES
        .iter()
        .copied()
        .find(|&(scale, _)| magnitude >= scale * 0.9995)
        .unwrap_or((1e-9, "n"));
    let scaled = value / scale;
    let digits = if scaled.abs() >= 100.0 {
        0
    } else if scaled.abs() >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{scaled:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    format!("{text}{prefix}")
}

#[cfg(test)]
mod tests;
