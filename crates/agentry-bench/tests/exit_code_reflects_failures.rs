//! The exit status decided from a run's outcome: 0 clean, 1 on a failed case or output, 2 on
//! a usage error; skipped cases do not fail the run.

use std::time::Duration;

use agentry_bench::harness::{
    BenchError, Case, EXIT_FAILED, EXIT_OK, EXIT_USAGE, MeasureConfig, Outcome, OutputError,
    PhaseSpec, Sample, exit_code, measure_case,
};

fn report(result: Result<(), BenchError>) -> agentry_bench::harness::CaseReport {
    let mut case = Case::builder("c")
        .phase(PhaseSpec::msgs("m"))
        .runner(move || {
            result.clone()?;
            Ok(Sample::new().phase("m", Duration::from_micros(1), 1))
        });
    measure_case(&mut case, &MeasureConfig::default(), &mut |_| {})
}

#[test]
fn clean_and_skipped_runs_exit_zero() {
    assert_eq!(exit_code(&Outcome::default()), EXIT_OK);
    let outcome = Outcome {
        reports: vec![
            report(Ok(())),
            report(Err(BenchError::Skip("no server".into()))),
        ],
        ..Outcome::default()
    };
    assert_eq!(exit_code(&outcome), EXIT_OK);
}

#[test]
fn any_failed_case_exits_one() {
    for error in [
        BenchError::Verify("wrong sum".into()),
        BenchError::Harness("phases".into()),
        BenchError::Panic("boom".into()),
    ] {
        let outcome = Outcome {
            reports: vec![report(Ok(())), report(Err(error))],
            ..Outcome::default()
        };
        assert_eq!(exit_code(&outcome), EXIT_FAILED);
    }
}

#[test]
fn an_output_error_exits_one() {
    let error = OutputError::Plot {
        path: "x.svg".into(),
        message: "no".into(),
    };
    let outcome = Outcome {
        output_errors: vec![error],
        ..Outcome::default()
    };
    assert_eq!(exit_code(&outcome), EXIT_FAILED);
}

#[test]
fn a_usage_error_exits_two() {
    let outcome = Outcome {
        usage_error: true,
        ..Outcome::default()
    };
    assert_eq!(exit_code(&outcome), EXIT_USAGE);
}
