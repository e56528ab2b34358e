//! The header of every report: which machine, when, how loaded, built from what, at which
//! scale. Every field that cannot be found is omitted rather than guessed.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::harness::{MIN_REPS, MeasureConfig, Scale, Value};

/// What the run was measured on and how.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineInfo {
    /// Start of the run, UTC, ISO 8601 (`2026-05-03T12:34:56Z`).
    pub date_utc: String,
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// `model name` of `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// Logical cores this process may use.
    pub cores: usize,
    /// The 1, 5 and 15 minute load averages at the start (`/proc/loadavg`).
    pub loadavg: Option<[f64; 3]>,
    /// `rustc --version` of the compiler that built the binary.
    pub rustc: Option<&'static str>,
    /// The git revision the binary was built from.
    pub git_rev: Option<&'static str>,
    /// The allocator and its settings (see `allocator.rs`).
    pub allocator: Option<&'static str>,
    /// Quick or full.
    pub scale: Scale,
    /// The repetition settings.
    pub config: MeasureConfig,
}

impl MachineInfo {
    /// Reads the machine's description now.
    #[must_use]
    pub fn collect(scale: Scale, config: MeasureConfig) -> Self {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            date_utc: utc_date(secs),
            hostname: read_trimmed("/proc/sys/kernel/hostname"),
            cpu_model: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|text| cpu_model(&text)),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            loadavg: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|text| loadavg(&text)),
            rustc: option_env!("AGENTRY_BENCH_RUSTC"),
            git_rev: option_env!("AGENTRY_BENCH_GIT_REV"),
            allocator: crate::harness::allocator::note(),
            scale,
            config,
        }
    }

    /// The fields stored in the JSON `{"machine": …}` line.
    #[must_use]
    pub fn fields(&self) -> Vec<(String, Value)> {
        let mut fields = vec![("date_utc".to_owned(), Value::Text(self.date_utc.clone()))];
        let mut text = |name: &str, value: Option<&str>| {
            if let Some(value) = value {
                fields.push((name.to_owned(), Value::Text(value.to_owned())));
            }
        };
        text("hostname", self.hostname.as_deref());
        text("cpu_model", self.cpu_model.as_deref());
        fields.push(("cores".to_owned(), Value::Int(self.cores as u64)));
        if let Some([one, five, fifteen]) = self.loadavg {
            let load = vec![
                ("1m".to_owned(), Value::Float(one)),
                ("5m".to_owned(), Value::Float(five)),
                ("15m".to_owned(), Value::Float(fifteen)),
            ];
            fields.push(("loadavg".to_owned(), Value::Map(load)));
        }
        let mut text = |name: &str, value: Option<&str>| {
            if let Some(value) = value {
                fields.push((name.to_owned(), Value::Text(value.to_owned())));
            }
        };
        text("rustc", self.rustc);
        text("git_rev", self.git_rev);
        text("allocator", self.allocator);
        text("scale", Some(self.scale.name()));
        fields.push((
            "warmup".to_owned(),
            Value::Int(u64::from(self.config.warmup)),
        ));
        let (min_reps, reps) = self.config.plan(MIN_REPS);
        fields.push(("min_reps".to_owned(), Value::Int(u64::from(min_reps))));
        if self.config.reps.is_some() {
            fields.push(("reps".to_owned(), Value::Int(u64::from(reps))));
        }
        fields
    }

    /// The header block printed before the tables.
    #[must_use]
    pub fn header_text(&self) -> String {
        let mut lines = vec![format!(
            "agentry-bench  {}  scale {}",
            self.date_utc,
            self.scale.name()
        )];
        let mut machine = Vec::new();
        if let Some(host) = &self.hostname {
            machine.push(format!("host {host}"));
        }
        machine.push(match &self.cpu_model {
            Some(model) => format!("cpu {model} ({} cores)", self.cores),
            None => format!("{} cores", self.cores),
        });
        if let Some([one, five, fifteen]) = self.loadavg {
            machine.push(format!("load {one:.2} {five:.2} {fifteen:.2}"));
        }
        lines.push(machine.join("  "));
        let mut build = Vec::new();
        if let Some(rustc) = self.rustc {
            build.push(rustc.to_owned());
        }
        if let Some(rev) = self.git_rev {
            build.push(format!("git {rev}"));
        }
        if !build.is_empty() {
            lines.push(build.join("  "));
        }
        if let Some(allocator) = self.allocator {
            lines.push(format!("allocator: {allocator}"));
        }
        let (min_reps, reps) = self.config.plan(MIN_REPS);
        let mut reps_line = format!(
            "warm-up {}, measured repetitions ≥ {min_reps}",
            self.config.warmup
        );
        if self.config.reps.is_some() {
            reps_line = format!(
                "warm-up {}, measured repetitions {reps}",
                self.config.warmup
            );
        }
        if self.config.below_minimum() {
            reps_line.push_str(&format!(
                " (below the minimum of {MIN_REPS}: for debugging only)"
            ));
        }
        lines.push(reps_line);
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub(crate) fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

/// The three load averages of a `/proc/loadavg` text.
pub(crate) fn loadavg(text: &str) -> Option<[f64; 3]> {
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some([
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ])
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
///
/// ```
/// assert_eq!(agentry_bench::harness::utc_date(0), "1970-01-01T00:00:00Z");
/// assert_eq!(agentry_bench::harness::utc_date(951_782_400), "2000-02-29T00:00:00Z");
/// ```
#[must_use]
pub fn utc_date(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's `civil_from_days`, for days since 1970-01-01 (non-negative).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests;
