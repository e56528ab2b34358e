use std::path::Path;

use super::{BarGroup, Series, bar_chart, loglog_chart, scaling_chart, si};
use crate::harness::test_support::{fixed_case, report_of, temp_dir};
use crate::harness::{ChartKind, ChartY, PhaseSpec, draw_charts};

/// Checks that `path` is a well-formed SVG document: tags balance, one `<svg>` root.
fn assert_well_formed_svg(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("chart written");
    assert!(
        text.trim_start().starts_with("<svg"),
        "starts with <svg: {}",
        &text[..text.len().min(80)]
    );
    assert!(text.trim_end().ends_with("</svg>"));
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("tag closes") + start;
        let tag = &rest[start + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "balanced tags");
        } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
            stack.push(tag.split_whitespace().next().unwrap_or_default().to_owned());
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed tags {stack:?}");
    text
}

#[test]
fn writes_loglog_scaling_and_bar_charts() {
    let dir = temp_dir("plot");
    let loglog = dir.join("loglog.svg");
    let series = vec![
        Series {
            name: "heap".into(),
            points: vec![(100.0, 1e-5), (1e4, 1.2e-3), (1e6, 0.2)],
        },
        Series {
            name: "list".into(),
            points: vec![(100.0, 2e-5), (1e4, 0.5), (0.0, 3.0)],
        },
    ];
    loglog_chart(&loglog, "sched: add", "N", "median time (s)", &series).expect("loglog drawn");
    let text = assert_well_formed_svg(&loglog);
    assert!(text.contains("heap") && text.contains("list") && text.contains("sched: add"));

    let scaling = dir.join("threads.svg");
    let series = vec![Series {
        name: "variant=3".into(),
        points: vec![(1.0, 3e7), (2.0, 5.5e7), (4.0, 5.6e7)],
    }];
    scaling_chart(&scaling, "ttl", "msgs/s", &series).expect("scaling drawn");
    assert!(assert_well_formed_svg(&scaling).contains("variant=3"));

    let bars = dir.join("bars.svg");
    let groups = vec![
        BarGroup {
            label: "one_thread N=1000 M=100".into(),
            bars: vec![("agentry".into(), 5e7), ("actix".into(), 1e7)],
        },
        BarGroup {
            label: "one_thread N=100000 M=100".into(),
            bars: vec![("agentry".into(), 2e7)],
        },
    ];
    bar_chart(&bars, "ring", "msgs/s", &groups).expect("bars drawn");
    let text = assert_well_formed_svg(&bars);
    assert!(text.contains("actix") && text.contains("one_thread N=100000 M=100"));

    let empty = dir.join("empty.svg");
    loglog_chart(&empty, "nothing", "N", "s", &[]).expect("an empty chart still draws");
    assert_well_formed_svg(&empty);
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn draw_charts_writes_one_file_per_kind_and_phase() {
    let dir = temp_dir("charts");
    let reports: Vec<_> = [
        (100, "heap"),
        (10_000, "heap"),
        (100, "list"),
        (10_000, "list"),
    ]
    .into_iter()
    .map(|(n, engine)| {
        let specs = vec![PhaseSpec::ops("add"), PhaseSpec::ops("delete")];
        let mut case = fixed_case(
            &format!("{engine} N={n}"),
            "agentry",
            specs,
            vec![("add", n / 10, n), ("delete", n / 100, n)],
        );
        case.meta.dispatcher = Some(engine.to_owned());
        case.meta.params = vec![("N".to_owned(), n)];
        report_of("sched", case)
    })
    .collect();
    let charts = [
        ChartKind::LogLog {
            x_param: "N",
            y: ChartY::MedianSeconds,
        },
        ChartKind::Bars,
    ];
    let written = draw_charts(&dir, "sched", &charts, &reports).expect("charts drawn");
    let names: Vec<String> = written
        .iter()
        .map(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        names,
        [
            "sched-add-loglog.svg",
            "sched-delete-loglog.svg",
            "sched-add-bars.svg",
            "sched-delete-bars.svg"
        ]
    );
    let text = assert_well_formed_svg(&written[0]);
    // Series are named by what varies between cases: the engine.
    assert!(
        text.contains(">heap") || text.contains("heap\n"),
        "heap series"
    );
    assert!(text.contains("list"), "list series");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn si_prefixes() {
    assert_eq!(si(0.0), "0");
    assert_eq!(si(1_000.0), "1k");
    assert_eq!(si(1_500_000.0), "1.5M");
    assert_eq!(si(0.00025), "250µ");
    assert_eq!(si(42.0), "42");
    assert_eq!(si(999.9), "1k");
}
