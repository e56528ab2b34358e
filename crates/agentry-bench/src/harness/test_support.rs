//! Builders of deterministic reports for the unit tests: runners that report fixed durations.

use std::time::Duration;

use crate::harness::{Case, CaseReport, MeasureConfig, PhaseSpec, Sample, measure_case};

/// A case whose every repetition reports `phases` as `(name, milliseconds, units)`.
pub(crate) fn fixed_case(
    label: &str,
    impl_name: &str,
    specs: Vec<PhaseSpec>,
    phases: Vec<(&'static str, u64, u64)>,
) -> Case {
    let mut builder = Case::builder(label)
        .impl_name(impl_name)
        .dispatcher("one_thread")
        .param("N", 1000)
        .param("M", 100);
    for spec in specs {
        builder = builder.phase(spec);
    }
    builder.runner(move || {
        Ok(phases.iter().fold(Sample::new(), |s, &(name, ms, units)| {
            s.phase(name, Duration::from_millis(ms), units)
        }))
    })
}

/// Measures `case` with one warm-up and the default repetitions, labelling it bench `bench`.
pub(crate) fn report_of(bench: &str, mut case: Case) -> CaseReport {
    bench.clone_into(&mut case.meta.bench);
    measure_case(&mut case, &MeasureConfig::default(), &mut |_| {})
}

/// A measured `ring` case: 100,000 messages in 2 ms, with a seed figure.
pub(crate) fn ring_report(impl_name: &str, ms: u64) -> CaseReport {
    let spec = PhaseSpec::msgs("ringing").seed(165_796.9);
    report_of(
        "ring",
        fixed_case(
            "one_thread N=1000 M=100",
            impl_name,
            vec![spec],
            vec![("ringing", ms, 100_000)],
        ),
    )
}

/// A unique empty directory under the system temp dir.
pub(crate) fn temp_dir(name: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "agentry-bench-{name}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir can be created");
    dir
}
