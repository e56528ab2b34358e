//! `--md FILE`: the run's full tables as Markdown, in the shape of the dated files under
//! `bench-results/` so that a run can be pasted there as it is: a `##` heading with the date
//! and the command, the tally of cases, the machine header (date, cores, CPU model, load
//! average, compiler and git revision when known) in a text block, then per benchmark a
//! `####` heading with its id, its description and its table — the terminal's table, in a text
//! block (monospaced columns read better there than a Markdown table with a dozen columns).

use std::path::Path;

use crate::harness::report::case_table;
use crate::harness::{CaseReport, MachineInfo, OutputError};

/// The section of one benchmark: `#### `id``, its description, its table.
#[must_use]
pub fn bench_section(id: &str, description: &str, reports: &[CaseReport]) -> String {
    format!(
        "#### `{id}`\n\n{description}\n\n```text\n{}```\n",
        case_table(reports)
    )
}

/// The whole document: heading, `tally`, machine header, then `sections` (from
/// [`bench_section`]) in run order.
#[must_use]
pub fn document(command: &str, machine: &MachineInfo, tally: &str, sections: &[String]) -> String {
    let mut text = format!(
        "## {}: `{command}`\n\n`{command}`: {tally}.\n\n```text\n{}```\n",
        machine.date_utc,
        machine.header_text()
    );
    for section in sections {
        text.push('\n');
        text.push_str(section);
    }
    text
}

/// Writes `text` to `path`.
///
/// # Errors
/// When the file cannot be written.
pub fn write_markdown(path: &Path, text: &str) -> Result<(), OutputError> {
    std::fs::write(path, text).map_err(|e| OutputError::io(path, e))
}

#[cfg(test)]
mod tests;
