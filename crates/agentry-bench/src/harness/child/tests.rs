use std::process::Command;
use std::time::Duration;

use super::{parse_sample_line, run_in_child, sample_line};
use crate::harness::{BenchError, Sample};

const DEADLINE: Duration = Duration::from_secs(60);

fn shell(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(script);
    command
}

#[test]
fn samples_and_errors_survive_the_line() {
    let sample = Sample::new()
        .phase("ring", Duration::from_nanos(123_456_789), 100_000)
        .phase("registration", Duration::from_micros(7), 1_000)
        .metric("rtt_ns", 41.5)
        .peak_rss(64 << 20);
    assert_eq!(
        parse_sample_line(&sample_line(&Ok(sample.clone()))),
        Ok(sample)
    );
    for error in [
        BenchError::Verify("sum: expected 45, got 44".to_owned()),
        BenchError::Skip("no server".to_owned()),
        BenchError::Harness("cannot build".to_owned()),
        BenchError::Panic("boom".to_owned()),
    ] {
        assert_eq!(
            parse_sample_line(&sample_line(&Err(error.clone()))),
            Err(error)
        );
    }
    assert!(matches!(
        parse_sample_line("hello"),
        Err(BenchError::Harness(_))
    ));
}

#[test]
fn the_last_line_of_a_child_is_its_result() {
    let line = sample_line(&Ok(Sample::new().phase("x", Duration::from_micros(3), 9)));
    let sample = run_in_child(&mut shell(&format!("echo noise; echo '{line}'")), DEADLINE)
        .expect("the child reported a sample");
    assert_eq!(sample.phases()[0].units, 9);
}

#[test]
fn a_child_that_reports_an_error_fails_with_it() {
    let line = sample_line(&Err(BenchError::Verify(
        "count: expected 2, got 1".to_owned(),
    )));
    assert_eq!(
        run_in_child(&mut shell(&format!("echo '{line}'; exit 1")), DEADLINE),
        Err(BenchError::Verify("count: expected 2, got 1".to_owned()))
    );
}

#[test]
fn a_child_without_a_result_fails_with_its_status_and_stderr() {
    let error =
        run_in_child(&mut shell("echo 'it broke' >&2; exit 3"), DEADLINE).expect_err("no result");
    let BenchError::Harness(message) = error else {
        panic!("not a harness error: {error:?}");
    };
    assert!(message.contains("printed no result"), "{message}");
    assert!(message.contains('3'), "{message}");
    assert!(message.contains("it broke"), "{message}");
}

#[test]
fn a_sample_from_a_failed_child_is_not_believed() {
    let line = sample_line(&Ok(Sample::new().phase("x", Duration::from_micros(3), 9)));
    assert!(matches!(
        run_in_child(&mut shell(&format!("echo '{line}'; exit 1")), DEADLINE),
        Err(BenchError::Harness(_))
    ));
}

#[test]
fn a_child_past_its_deadline_is_killed() {
    let error =
        run_in_child(&mut shell("exec sleep 30"), Duration::from_millis(100)).expect_err("killed");
    assert!(
        matches!(&error, BenchError::Harness(m) if m.contains("killed")),
        "{error:?}"
    );
}
