//! `--csv FILE`: the JSON records flattened (nested fields become `params.N`, `ratios.actix`),
//! one header line with the union of the columns, in first-seen order.

use std::path::Path;

use crate::harness::{OutputError, Record, Value};

/// The CSV text of `records` (header first, `\n` line ends, RFC 4180 quoting).
///
/// ```
/// use agentry_bench::harness::{Record, Value, csv::to_csv};
/// let record = Record { fields: vec![
///     ("bench".into(), Value::Text("ring".into())),
///     ("params".into(), Value::Map(vec![("N".into(), Value::Int(1000))])),
/// ]};
/// assert_eq!(to_csv(&[record]), "bench,params.N\nring,1000\n");
/// ```
#[must_use]
pub fn to_csv(records: &[Record]) -> String {
    let rows: Vec<Vec<(String, String)>> = records.iter().map(flatten).collect();
    let mut columns: Vec<&str> = Vec::new();
    for row in &rows {
        for (name, _) in row {
            if !columns.contains(&name.as_str()) {
                columns.push(name);
            }
        }
    }
    let mut text = String::new();
    let header: Vec<String> = columns.iter().map(|c| quote(c)).collect();
    text.push_str(&header.join(","));
    text.push('\n');
    for row in &rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|column| {
                row.iter()
                    .find(|(n, _)| n == column)
                    .map_or_else(String::new, |(_, v)| quote(v))
            })
            .collect();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    text
}

/// Writes [`to_csv`] of `records` to `path`.
///
/// # Errors
/// When the file cannot be written.
pub fn write_csv(path: &Path, records: &[Record]) -> Result<(), OutputError> {
    std::fs::write(path, to_csv(records)).map_err(|e| OutputError::io(path, e))
}

fn flatten(record: &Record) -> Vec<(String, String)> {
    let mut cells = Vec::new();
    flatten_into(&mut cells, "", &record.fields);
    cells
}

fn flatten_into(cells: &mut Vec<(String, String)>, prefix: &str, fields: &[(String, Value)]) {
    for (name, value) in fields {
        let name = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let cell = match value {
            Value::Map(inner) => {
                flatten_into(cells, &name, inner);
                continue;
            }
            Value::Null => String::new(),
            Value::Int(v) => v.to_string(),
            Value::Float(v) if v.is_finite() => serde_json::Value::from(*v).to_string(),
            Value::Float(_) => String::new(),
            Value::Text(text) => text.clone(),
        };
        cells.push((name, cell));
    }
}

fn quote(cell: &str) -> String {
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_owned()
    }
}

#[cfg(test)]
mod tests;
