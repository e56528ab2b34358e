//! The machine-readable rows of a report: one per measured case-phase (and one per failed or
//! skipped case), as ordered fields shared by the JSON and CSV writers.

use std::time::Duration;

use crate::harness::{CaseMeta, CaseReport, CaseStatus, Measured, PhaseResult};

/// A field value of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Absent (a rate that cannot be computed).
    Null,
    /// An integer (counts, parameters, bytes).
    Int(u64),
    /// A real number (seconds, rates, ratios); non-finite values are written as null.
    Float(f64),
    /// Text.
    Text(String),
    /// Nested ordered fields (`params`, `ratios`, `metrics`); CSV flattens them as `key.sub`.
    Map(Vec<(String, Value)>),
}

impl Value {
    /// The number, for `Int` and `Float`.
    #[must_use]
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(v) => Some(*v as f64),
            Self::Float(v) => Some(*v),
            Self::Null | Self::Text(_) | Self::Map(_) => None,
        }
    }

    /// The text, for `Text`.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Null | Self::Int(_) | Self::Float(_) | Self::Map(_) => None,
        }
    }
}

/// One row: ordered `(name, value)` fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// The fields, in output order.
    pub fields: Vec<(String, Value)>,
}

impl Record {
    /// The value of field `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn push(&mut self, name: impl Into<String>, value: Value) {
        self.fields.push((name.into(), value));
    }

    fn push_opt(&mut self, name: impl Into<String>, value: Option<f64>) {
        if let Some(value) = value {
            self.push(name, Value::Float(value));
        }
    }
}

/// The rows of one case: one per phase when measured, one with `status` and `error` or
/// `reason` otherwise.
#[must_use]
pub fn case_records(report: &CaseReport) -> Vec<Record> {
    match &report.status {
        CaseStatus::Measured(measured) => measured
            .phases
            .iter()
            .map(|phase| phase_record(&report.meta, measured, phase))
            .collect(),
        CaseStatus::Failed(error) => {
            let mut record = header(&report.meta);
            record.push("status", Value::Text("failed".to_owned()));
            record.push("error", Value::Text(error.to_string()));
            vec![record]
        }
        CaseStatus::Skipped(reason) => {
            let mut record = header(&report.meta);
            record.push("status", Value::Text("skipped".to_owned()));
            record.push("reason", Value::Text(reason.clone()));
            vec![record]
        }
    }
}

fn header(meta: &CaseMeta) -> Record {
    let mut record = Record::default();
    record.push("bench", Value::Text(meta.bench.clone()));
    record.push("case", Value::Text(meta.label.clone()));
    record.push("impl", Value::Text(meta.impl_name.clone()));
    record.push(
        "dispatcher",
        meta.dispatcher.clone().map_or(Value::Null, Value::Text),
    );
    record.push("threads", Value::Int(meta.threads as u64));
    let params = meta
        .params
        .iter()
        .map(|(name, value)| (name.clone(), Value::Int(*value)))
        .collect();
    record.push("params", Value::Map(params));
    if !meta.notes.is_empty() {
        record.push("note", Value::Text(meta.notes.join("; ")));
    }
    record
}

fn seconds(duration: Duration) -> Value {
    Value::Float(duration.as_secs_f64())
}

fn phase_record(meta: &CaseMeta, measured: &Measured, phase: &PhaseResult) -> Record {
    let unit = phase.spec.unit;
    let mut record = header(meta);
    record.push("phase", Value::Text(phase.spec.name.clone()));
    record.push("status", Value::Text("ok".to_owned()));
    record.push("unit", Value::Text(unit.noun().to_owned()));
    record.push(unit.count_field(), Value::Int(phase.units));
    record.push("reps", Value::Int(u64::from(measured.reps)));
    record.push("median_s", seconds(phase.stats.median));
    record.push("min_s", seconds(phase.stats.min));
    record.push("max_s", seconds(phase.stats.max));
    record.push(
        format!("{}_per_sec", unit.plural()),
        phase.per_sec().map_or(Value::Null, Value::Float),
    );
    record.push(
        format!("ns_per_{}", unit.noun()),
        phase.ns_per_unit().map_or(Value::Null, Value::Float),
    );
    record.push_opt(
        format!("seed_{}_per_sec", unit.plural()),
        phase.spec.seed_per_sec,
    );
    record.push_opt("seed_ratio", phase.seed_ratio());
    if let Some((name, ratio)) = phase.worst_ratio() {
        record.push("ratio", Value::Float(ratio));
        record.push("ratio_vs", Value::Text(name.to_owned()));
        if phase.ratios.len() > 1 {
            let all = phase
                .ratios
                .iter()
                .map(|(n, r)| (n.clone(), Value::Float(*r)))
                .collect();
            record.push("ratios", Value::Map(all));
        }
    }
    if let Some(peak) = measured.peak_rss_bytes {
        record.push("peak_rss_bytes", Value::Int(peak));
    }
    if let Some(note) = &measured.rss_note {
        record.push("rss_note", Value::Text(note.clone()));
    }
    if !measured.metrics.is_empty() {
        let metrics = measured
            .metrics
            .iter()
            .map(|(n, v)| (n.clone(), Value::Float(*v)))
            .collect();
        record.push("metrics", Value::Map(metrics));
    }
    record
}
