use super::*;
use prometheus_client::collector::Collector;
use prometheus_client::registry::Registry;
use std::sync::Arc;

const HITS: Spec = Spec {
    name: "test_hits",
    help: "Hits.",
    kind: Kind::Counter,
    labels: &["who"],
};
const LEVEL: Spec = Spec {
    name: "test_level_seconds",
    help: "A level, with \\ and\na newline.",
    kind: Kind::Gauge,
    labels: &[],
};

#[derive(Debug)]
struct Fixed(Vec<(Spec, Vec<&'static str>, Value)>);

impl Collector for Fixed {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut f = Families::default();
        for (spec, labels, value) in &self.0 {
            f.add(spec, labels, *value);
        }
        f.encode(encoder)
    }
}

fn render(samples: Vec<(Spec, Vec<&'static str>, Value)>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Arc::new(Fixed(samples))));
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
    text
}

#[test]
fn a_family_is_written_once_with_all_its_samples_and_escaped_labels() {
    let text = render(vec![
        (HITS, vec!["a"], Value::Int(3)),
        (LEVEL, vec![], Value::Int(5)),
        (HITS, vec!["b\"\\\n"], Value::Int(4)),
    ]);
    assert_eq!(
        text,
        "# HELP test_hits_total Hits.\n\
         # TYPE test_hits_total counter\n\
         test_hits_total{who=\"a\"} 3\n\
         test_hits_total{who=\"b\\\"\\\\\\n\"} 4\n\
         # HELP test_level_seconds A level, with \\\\ and\\na newline.\n\
         # TYPE test_level_seconds gauge\n\
         test_level_seconds 5\n"
    );
}

#[test]
fn counters_never_go_below_what_was_exported_and_gone_series_are_forgotten() {
    let mut last = Monotonic::default();
    let scrape = |last: &mut Monotonic, samples: &[(&'static str, u64)], level: u64| {
        let mut f = Families::default();
        for (who, n) in samples {
            f.int(&HITS, &[who], *n);
        }
        f.int(&LEVEL, &[], level);
        f.clamp(last);
        f.list
            .iter()
            .flat_map(|fam| fam.samples.iter().map(move |s| (fam.spec.name, s.value)))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        scrape(&mut last, &[("a", 5), ("b", 1)], 9),
        [
            ("test_hits", Value::Int(5)),
            ("test_hits", Value::Int(1)),
            ("test_level_seconds", Value::Int(9))
        ]
    );
    // A lagging read of `a` is held at 5; gauges go down freely.
    assert_eq!(
        scrape(&mut last, &[("a", 4), ("b", 2)], 1),
        [
            ("test_hits", Value::Int(5)),
            ("test_hits", Value::Int(2)),
            ("test_level_seconds", Value::Int(1))
        ]
    );
    // `b` is gone; when a series of that name comes back, it starts afresh.
    scrape(&mut last, &[("a", 6)], 1);
    assert_eq!(
        scrape(&mut last, &[("a", 6), ("b", 0)], 1)[1],
        ("test_hits", Value::Int(0))
    );
}

#[test]
fn series_keys_do_not_collide_across_label_boundaries() {
    const PAIR: Spec = Spec {
        name: "test_pair",
        help: "Pairs.",
        kind: Kind::Counter,
        labels: &["x", "y"],
    };
    let mut last = Monotonic::default();
    let mut f = Families::default();
    f.int(&PAIR, &["a/1:b", "c"], 7);
    f.clamp(&mut last);
    let mut f = Families::default();
    f.int(&PAIR, &["a", "b/1:c"], 1);
    f.clamp(&mut last);
    assert_eq!(f.list[0].samples[0].value, Value::Int(1));
}

const TIMES: Spec = Spec {
    name: "test_handler_seconds",
    help: "Times.",
    kind: Kind::Histogram,
    labels: &["who"],
};

fn times(total_us: u64, counts: [u64; HandlerTimes::BUCKETS]) -> Value {
    let mut h = HandlerTimes::default();
    h.total = Duration::from_micros(total_us);
    h.counts = counts;
    Value::Histogram(h)
}

#[test]
fn handler_times_are_a_histogram_with_cumulative_buckets_that_never_go_down() {
    let mut counts = [0; HandlerTimes::BUCKETS];
    counts[0] = 2;
    counts[2] = 1;
    counts[HandlerTimes::BUCKETS - 1] = 1;
    let text = render(vec![(TIMES, vec!["a"], times(1_500_000, counts))]);
    assert!(
        text.contains("# TYPE test_handler_seconds histogram\n"),
        "{text}"
    );
    assert!(
        text.contains("test_handler_seconds_sum{who=\"a\"} 1.5\n"),
        "{text}"
    );
    assert!(
        text.contains("test_handler_seconds_count{who=\"a\"} 4\n"),
        "{text}"
    );
    // Cumulative, one bucket per bound: 2 runs ≤ 1 µs, 3 ≤ 16 µs, 4 in all.
    for line in [
        "test_handler_seconds_bucket{who=\"a\",le=\"1e-06\"} 2\n",
        "test_handler_seconds_bucket{who=\"a\",le=\"4e-06\"} 2\n",
        "test_handler_seconds_bucket{who=\"a\",le=\"1.6e-05\"} 3\n",
        "test_handler_seconds_bucket{who=\"a\",le=\"1.048576\"} 3\n",
        "test_handler_seconds_bucket{who=\"a\",le=\"+Inf\"} 4\n",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    assert_eq!(
        text.matches("test_handler_seconds_bucket").count(),
        HandlerTimes::BUCKETS
    );
    // A lagging read is held at what was exported, bucket by bucket.
    let mut last = Monotonic::default();
    for (total, first) in [(10, 5), (8, 4), (12, 6)] {
        let mut f = Families::default();
        let mut c = [0; HandlerTimes::BUCKETS];
        c[0] = first;
        f.add(&TIMES, &["a"], times(total, c));
        f.clamp(&mut last);
        let Value::Histogram(h) = f.list[0].samples[0].value else {
            panic!("a histogram");
        };
        let expected = if first == 4 { (10, 5) } else { (total, first) };
        assert_eq!(
            (h.total, h.counts[0]),
            (Duration::from_micros(expected.0), expected.1)
        );
    }
}
