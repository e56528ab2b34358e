//! `--json FILE`: one JSON object per line, a `{"machine": …}` line first, then one per
//! measured case-phase (and per failed or skipped case), written as each benchmark finishes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::harness::{OutputError, Record, Value};

/// The record as one line of JSON (no trailing newline), fields in record order.
///
/// ```
/// use agentry_bench::harness::{Record, Value, json::record_line};
/// let record = Record { fields: vec![("bench".into(), Value::Text("ring".into())), ("threads".into(), Value::Int(1))] };
/// assert_eq!(record_line(&record), r#"{"bench":"ring","threads":1}"#);
/// ```
#[must_use]
pub fn record_line(record: &Record) -> String {
    let mut line = String::new();
    write_map(&mut line, &record.fields);
    line
}

/// The first line of the file: `{"machine": {…}}`.
#[must_use]
pub fn machine_line(machine: &[(String, Value)]) -> String {
    let mut line = String::from("{\"machine\":");
    write_map(&mut line, machine);
    line.push('}');
    line
}

fn write_map(out: &mut String, fields: &[(String, Value)]) {
    out.push('{');
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, name);
        out.push(':');
        write_value(out, value);
    }
    out.push('}');
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Int(v) => out.push_str(&v.to_string()),
        // serde_json writes the shortest round-tripping form, and null for NaN and infinities.
        Value::Float(v) => out.push_str(&serde_json::Value::from(*v).to_string()),
        Value::Text(text) => write_string(out, text),
        Value::Map(fields) => write_map(out, fields),
    }
}

fn write_string(out: &mut String, text: &str) {
    out.push_str(&serde_json::Value::from(text).to_string());
}

/// An open `--json` file, written line by line and flushed after each benchmark so a run that
/// dies half-way keeps what it measured.
#[derive(Debug)]
pub struct JsonWriter {
    path: PathBuf,
    file: BufWriter<File>,
}

impl JsonWriter {
    /// Creates (truncates) `path`.
    ///
    /// # Errors
    /// When the file cannot be created.
    pub fn create(path: &Path) -> Result<Self, OutputError> {
        let file = File::create(path).map_err(|e| OutputError::io(path, e))?;
        Ok(Self {
            path: path.to_owned(),
            file: BufWriter::new(file),
        })
    }

    /// Writes one line and flushes it.
    ///
    /// # Errors
    /// On a write error.
    pub fn line(&mut self, line: &str) -> Result<(), OutputError> {
        writeln!(self.file, "{line}")
            .and_then(|()| self.file.flush())
            .map_err(|e| OutputError::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests;
