use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use super::{CaseStatus, MeasureConfig, RepProgress, measure_case, measure_rounds};
use crate::harness::{BenchError, Case, PhaseSpec, Sample};

/// A case counting its runner calls, each reporting one 1 ms phase of 10 units.
fn counting_case(calls: &Rc<Cell<u32>>) -> Case {
    let calls = Rc::clone(calls);
    Case::builder("count")
        .phase(PhaseSpec::ops("op"))
        .runner(move || {
            calls.set(calls.get() + 1);
            Ok(Sample::new().phase("op", Duration::from_millis(1), 10))
        })
}

fn config(warmup: u32, reps: Option<u32>) -> MeasureConfig {
    MeasureConfig { warmup, reps }
}

fn measured_reps(status: &CaseStatus) -> u32 {
    match status {
        CaseStatus::Measured(m) => m.reps,
        other => panic!("not measured: {other:?}"),
    }
}

#[test]
fn warmup_then_minimum_repetitions_by_default() {
    let calls = Rc::new(Cell::new(0));
    let mut events = Vec::new();
    let report = measure_case(&mut counting_case(&calls), &config(2, None), &mut |e| {
        events.push(e)
    });
    assert_eq!(measured_reps(&report.status), 5);
    assert_eq!(calls.get(), 7);
    assert_eq!(events.iter().filter(|e| e.warmup).count(), 2);
    assert_eq!(
        events.last(),
        Some(&RepProgress {
            warmup: false,
            index: 5,
            planned: 5
        })
    );
}

#[test]
fn warmup_is_at_least_one() {
    let calls = Rc::new(Cell::new(0));
    measure_case(&mut counting_case(&calls), &config(0, None), &mut |_| {});
    assert_eq!(calls.get(), 6);
}

#[test]
fn reps_option_overrides_and_may_go_below_the_minimum() {
    let calls = Rc::new(Cell::new(0));
    let report = measure_case(&mut counting_case(&calls), &config(1, Some(8)), &mut |_| {});
    assert_eq!(measured_reps(&report.status), 8);
    let report = measure_case(&mut counting_case(&calls), &config(1, Some(2)), &mut |_| {});
    assert_eq!(measured_reps(&report.status), 2);
    assert!(config(1, Some(2)).below_minimum());
    assert!(!config(1, Some(5)).below_minimum());
}

#[test]
fn case_reps_below_the_minimum_are_raised() {
    let mut case = Case::builder("few")
        .phase(PhaseSpec::msgs("m"))
        .reps(2)
        .runner(|| Ok(Sample::new().phase("m", Duration::from_micros(5), 1)));
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert_eq!(measured_reps(&report.status), 5);
}

#[test]
fn budget_stops_adding_repetitions_but_never_below_the_minimum() {
    let mut case = Case::builder("slow")
        .phase(PhaseSpec::msgs("m"))
        .reps(50)
        .budget(Duration::from_millis(1))
        .runner(|| {
            std::thread::sleep(Duration::from_millis(1));
            Ok(Sample::new().phase("m", Duration::from_millis(1), 1))
        });
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert_eq!(measured_reps(&report.status), 5);

    let mut generous = Case::builder("fast")
        .phase(PhaseSpec::msgs("m"))
        .reps(12)
        .budget(Duration::from_secs(60))
        .runner(|| Ok(Sample::new().phase("m", Duration::from_millis(1), 1)));
    let report = measure_case(&mut generous, &MeasureConfig::default(), &mut |_| {});
    assert_eq!(measured_reps(&report.status), 12);
}

#[test]
fn stats_come_from_the_measured_repetitions_only() {
    let rep = Rc::new(Cell::new(0u64));
    let counter = Rc::clone(&rep);
    // Warm-up reports 1 s; the measured repetitions 1, 2, 3, 4, 5 ms.
    let mut case = Case::builder("ramp")
        .phase(PhaseSpec::msgs("m").seed(1e3))
        .runner(move || {
            let ms = if counter.get() == 0 {
                1_000
            } else {
                counter.get()
            };
            counter.set(counter.get() + 1);
            Ok(Sample::new()
                .phase("m", Duration::from_millis(ms), 1_000)
                .metric("cpu", ms as f64))
        });
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    let measured = report.measured().expect("measured");
    let phase = &measured.phases[0];
    assert_eq!(phase.stats.median, Duration::from_millis(3));
    assert_eq!(phase.stats.min, Duration::from_millis(1));
    assert_eq!(phase.stats.max, Duration::from_millis(5));
    assert_eq!(phase.units, 1_000);
    let per_sec = phase.per_sec().expect("rate");
    assert!((per_sec - 1_000.0 / 0.003).abs() < 1e-6);
    assert!((phase.seed_ratio().expect("seed ratio") - per_sec / 1e3).abs() < 1e-9);
    assert_eq!(measured.metrics, vec![("cpu".to_owned(), 3.0)]);
}

#[test]
fn verification_failure_fails_the_case() {
    let mut case = Case::builder("wrong")
        .phase(PhaseSpec::msgs("m"))
        .runner(|| Err(BenchError::Verify("sum: expected 10, got 11".to_owned())));
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert_eq!(
        report.failure(),
        Some(&BenchError::Verify("sum: expected 10, got 11".to_owned()))
    );
}

#[test]
fn verification_failure_in_a_later_repetition_fails_the_case() {
    let calls = Rc::new(Cell::new(0));
    let counter = Rc::clone(&calls);
    let mut case = Case::builder("flaky")
        .phase(PhaseSpec::msgs("m"))
        .runner(move || {
            counter.set(counter.get() + 1);
            if counter.get() == 4 {
                return Err(BenchError::Verify("lost a message".to_owned()));
            }
            Ok(Sample::new().phase("m", Duration::from_millis(1), 1))
        });
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert!(matches!(report.failure(), Some(BenchError::Verify(_))));
}

#[test]
fn skip_is_not_a_failure() {
    let mut case = Case::builder("nats")
        .phase(PhaseSpec::msgs("m"))
        .runner(|| Err(BenchError::Skip("no nats-server".to_owned())));
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert_eq!(
        report.status,
        CaseStatus::Skipped("no nats-server".to_owned())
    );
    assert_eq!(report.failure(), None);
}

#[test]
fn panic_fails_the_case_with_its_message() {
    let mut case = Case::builder("boom")
        .phase(PhaseSpec::msgs("m"))
        .runner(|| panic!("handler exploded"));
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert_eq!(
        report.failure(),
        Some(&BenchError::Panic("handler exploded".to_owned()))
    );
}

#[test]
fn undeclared_or_missing_phases_break_the_harness_rule() {
    let mut none =
        Case::builder("none").runner(|| Ok(Sample::new().phase("m", Duration::from_millis(1), 1)));
    let report = measure_case(&mut none, &MeasureConfig::default(), &mut |_| {});
    assert!(matches!(report.failure(), Some(BenchError::Harness(_))));

    let mut other = Case::builder("other")
        .phase(PhaseSpec::msgs("send"))
        .phase(PhaseSpec::msgs("process"))
        .runner(|| {
            Ok(Sample::new()
                .phase("send", Duration::from_millis(1), 1)
                .phase("handle", Duration::from_millis(1), 1))
        });
    let report = measure_case(&mut other, &MeasureConfig::default(), &mut |_| {});
    match report.failure() {
        Some(BenchError::Harness(message)) => assert!(message.contains("handle"), "{message}"),
        other => panic!("expected a harness error, got {other:?}"),
    }

    let mut twice = Case::builder("twice")
        .phase(PhaseSpec::msgs("m"))
        .phase(PhaseSpec::ops("m"))
        .runner(|| Ok(Sample::new()));
    let report = measure_case(&mut twice, &MeasureConfig::default(), &mut |_| {});
    assert!(matches!(report.failure(), Some(BenchError::Harness(_))));
}

#[test]
fn unit_counts_must_not_change_between_repetitions() {
    let calls = Rc::new(Cell::new(0u64));
    let counter = Rc::clone(&calls);
    let mut case = Case::builder("drift")
        .phase(PhaseSpec::msgs("m"))
        .runner(move || {
            counter.set(counter.get() + 1);
            Ok(Sample::new().phase("m", Duration::from_millis(1), 100 + counter.get()))
        });
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert!(matches!(report.failure(), Some(BenchError::Harness(m)) if m.contains("units")));
}

#[cfg(target_os = "linux")]
#[test]
fn memory_cases_report_peak_rss() {
    let mut case = Case::builder("rss")
        .phase(PhaseSpec::msgs("m"))
        .memory()
        .runner(|| {
            let block = vec![7u8; 8 << 20];
            let units = block.iter().map(|&b| u64::from(b)).sum::<u64>() / 7;
            Ok(Sample::new().phase("m", Duration::from_millis(1), units))
        });
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    let peak = report
        .measured()
        .and_then(|m| m.peak_rss_bytes)
        .expect("peak RSS on Linux");
    assert!(peak >= 8 << 20, "peak {peak}");
}

#[test]
fn longest_repetition_includes_warmup() {
    let calls = Rc::new(Cell::new(0u32));
    let counter = Rc::clone(&calls);
    let mut case = Case::builder("slow start")
        .phase(PhaseSpec::msgs("m"))
        .runner(move || {
            counter.set(counter.get() + 1);
            if counter.get() == 1 {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(Sample::new().phase("m", Duration::from_millis(1), 1))
        });
    let report = measure_case(&mut case, &MeasureConfig::default(), &mut |_| {});
    assert!(report.longest_rep >= Duration::from_millis(20));
}

#[test]
fn a_peak_carried_by_the_sample_is_the_case_peak() {
    let peaks = Rc::new(Cell::new(0u64));
    let counter = Rc::clone(&peaks);
    let mut case = Case::builder("child")
        .phase(PhaseSpec::msgs("m"))
        .runner(move || {
            counter.set(counter.get() + 1);
            Ok(Sample::new()
                .phase("m", Duration::from_millis(1), 1)
                .peak_rss(counter.get() << 20))
        });
    let report = measure_case(&mut case, &config(1, None), &mut |_| {});
    // Warm-up (1 MiB) is not counted; the largest of the 5 measured peaks is 6 MiB.
    assert_eq!(
        report.measured().and_then(|m| m.peak_rss_bytes),
        Some(6 << 20)
    );
}

/// A case that logs `name` into `log` at each call, failing at call `fail_at` if given.
fn logging_case(
    name: &'static str,
    log: &Rc<RefCell<Vec<&'static str>>>,
    fail_at: Option<u32>,
) -> Case {
    let (log, calls) = (Rc::clone(log), Cell::new(0));
    Case::builder(name)
        .phase(PhaseSpec::msgs("m"))
        .runner(move || {
            log.borrow_mut().push(name);
            calls.set(calls.get() + 1);
            if fail_at == Some(calls.get()) {
                return Err(BenchError::Verify("wrong".to_owned()));
            }
            Ok(Sample::new().phase("m", Duration::from_millis(1), 1))
        })
}

#[test]
fn rounds_interleave_the_repetitions_of_their_cases() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut cases = vec![logging_case("a", &log, None), logging_case("b", &log, None)];
    let mut seen = Vec::new();
    let reports = measure_rounds(&mut cases, &config(1, Some(5)), &mut |i, rep| {
        seen.push((i, rep.warmup));
    });
    assert_eq!(
        *log.borrow(),
        ["a", "b", "a", "b", "a", "b", "a", "b", "a", "b", "a", "b"]
    );
    assert_eq!(seen[..3], [(0, true), (1, true), (0, false)]);
    assert_eq!(reports.len(), 2);
    assert!(reports.iter().all(|r| measured_reps(&r.status) == 5));
    assert_eq!(reports[1].meta.label, "b");
}

#[test]
fn a_failing_case_leaves_the_rounds_and_the_others_go_on() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut cases = vec![
        logging_case("a", &log, Some(3)),
        logging_case("b", &log, None),
    ];
    let reports = measure_rounds(&mut cases, &config(1, None), &mut |_, _| {});
    assert_eq!(log.borrow().iter().filter(|n| **n == "a").count(), 3);
    assert_eq!(log.borrow().iter().filter(|n| **n == "b").count(), 6);
    assert!(matches!(reports[0].failure(), Some(BenchError::Verify(_))));
    assert_eq!(measured_reps(&reports[1].status), 5);
}
