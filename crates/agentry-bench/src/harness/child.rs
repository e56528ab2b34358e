//! Repetitions run in a child process of the benchmark binary (the peer comparison): each
//! starts from a fresh process, so what one implementation left behind (threads, allocator
//! state, a runtime) cannot slow the next one down, and the peak RSS is its own.
//!
//! # Ground rules
//! 1. The child prints its result as the last line of its standard output: [`sample_line`]
//!    of its [`Sample`] or of its [`BenchError`], one JSON object. Anything else it has to say
//!    goes to standard error.
//! 2. The child times its phases and measures its peak RSS itself ([`Sample::peak_rss`]);
//!    the parent times nothing, so process start-up is never counted.
//! 3. A child that ends without such a line (a crash, a signal, an abort) or that is still
//!    running at its deadline (then killed) fails the case with [`BenchError::Harness`], its
//!    exit status and the end of its standard error; a child that reports an error fails (or
//!    skips) the case with that error.

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::harness::{BenchError, Sample};

/// The JSON line a child prints.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Sample {
        phases: Vec<PhaseLine>,
        metrics: Vec<(String, f64)>,
        peak_rss_bytes: Option<u64>,
    },
    Error {
        kind: ErrorKind,
        message: String,
    },
}

#[derive(Debug, Serialize, Deserialize)]
struct PhaseLine {
    name: String,
    elapsed_ns: u64,
    units: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ErrorKind {
    Verify,
    Skip,
    Harness,
    Panic,
}

/// The line a child prints for its result (rule 1).
///
/// ```
/// use agentry_bench::harness::{Sample, child::{parse_sample_line, sample_line}};
/// use std::time::Duration;
/// let sample = Sample::new().phase("ring", Duration::from_micros(5), 100).peak_rss(4096);
/// assert_eq!(parse_sample_line(&sample_line(&Ok(sample.clone()))), Ok(sample));
/// ```
#[must_use]
pub fn sample_line(result: &Result<Sample, BenchError>) -> String {
    let line = match result {
        Ok(sample) => Line::Sample {
            phases: sample
                .phases()
                .iter()
                .map(|p| PhaseLine {
                    name: p.name.clone(),
                    elapsed_ns: u64::try_from(p.elapsed.as_nanos()).unwrap_or(u64::MAX),
                    units: p.units,
                })
                .collect(),
            metrics: sample.metrics().to_vec(),
            peak_rss_bytes: sample.peak_rss_bytes(),
        },
        Err(error) => {
            let (kind, message) = match error {
                BenchError::Verify(m) => (ErrorKind::Verify, m),
                BenchError::Skip(m) => (ErrorKind::Skip, m),
                BenchError::Harness(m) => (ErrorKind::Harness, m),
                BenchError::Panic(m) => (ErrorKind::Panic, m),
            };
            Line::Error {
                kind,
                message: message.clone(),
            }
        }
    };
    serde_json::to_string(&line).expect("invariant: the line is plain data")
}

impl Line {
    fn into_result(self) -> Result<Sample, BenchError> {
        match self {
            Line::Sample {
                phases,
                metrics,
                peak_rss_bytes,
            } => {
                let mut sample = phases.into_iter().fold(Sample::new(), |s, p| {
                    s.phase(p.name, Duration::from_nanos(p.elapsed_ns), p.units)
                });
                sample = metrics
                    .into_iter()
                    .fold(sample, |s, (name, value)| s.metric(name, value));
                Ok(match peak_rss_bytes {
                    Some(peak) => sample.peak_rss(peak),
                    None => sample,
                })
            }
            Line::Error { kind, message } => Err(match kind {
                ErrorKind::Verify => BenchError::Verify(message),
                ErrorKind::Skip => BenchError::Skip(message),
                ErrorKind::Harness => BenchError::Harness(message),
                ErrorKind::Panic => BenchError::Panic(message),
            }),
        }
    }
}

/// The result a child reported in `line` (the inverse of [`sample_line`]).
///
/// # Errors
/// The child's own error, or [`BenchError::Harness`] when `line` is not a result line.
pub fn parse_sample_line(line: &str) -> Result<Sample, BenchError> {
    serde_json::from_str::<Line>(line)
        .map_err(|e| BenchError::Harness(format!("not a result line ({e}): {line}")))?
        .into_result()
}

/// Runs `command` (the benchmark binary with the arguments of one repetition) to its end and
/// returns the result it reported (rules 1 and 3). A child still running after `deadline` is
/// killed (a deadlocked workload must not hang the whole run).
///
/// # Errors
/// The child's own error, or [`BenchError::Harness`] when it cannot be started, is killed,
/// or ends without a result line.
pub fn run_in_child(command: &mut Command, deadline: Duration) -> Result<Sample, BenchError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| BenchError::Harness(format!("cannot start {command:?}: {e}")))?;
    // Both pipes are drained while the child runs, so a chatty child never blocks on them.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > deadline => {
                // Killing a child that has just exited fails harmlessly; wait reaps it either way.
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("was killed after {deadline:?}"));
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => break Err(format!("could not be waited for: {e}")),
        }
    };
    let stdout = String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
    let last = stdout.lines().rev().find(|line| !line.trim().is_empty());
    let reported = last
        .and_then(|line| serde_json::from_str::<Line>(line).ok())
        .map(Line::into_result);
    let status = match (reported, status) {
        (Some(Ok(sample)), Ok(status)) if status.success() => return Ok(sample),
        (Some(Err(error)), Ok(_)) => return Err(error),
        (_, Ok(status)) => status.to_string(),
        (_, Err(why)) => why,
    };
    let mut tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    tail.reverse();
    let printed = match last {
        Some(line) => format!("ended with `{line}`"),
        None => "printed no result".to_owned(),
    };
    Err(BenchError::Harness(format!(
        "the child {printed} ({status}): {}",
        tail.join(" | ")
    )))
}

/// How often a running child is looked at.
const POLL: Duration = Duration::from_millis(5);

/// Reads `pipe` to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // A read error leaves what was read so far: the result line is checked anyway.
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

#[cfg(test)]
mod tests;
