//! The progress bar shown on stderr while cases run.
//!
//! The bar is redrawn only between repetitions (no ticker thread competing with the measured
//! code for the 2 cores), and text goes through [`Progress::print`], which hides the bar while
//! writing so the tables are never garbled. When stderr is not a terminal, indicatif draws
//! nothing.

use std::io::Write;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::harness::{CaseMeta, RepProgress};

/// The progress bar of a run (or nothing, when disabled).
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    case: String,
}

impl Progress {
    /// A bar counting cases, drawn on stderr when `enabled` and stderr is a terminal.
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        let bar = enabled.then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} cases  {msg}",
            )
            .expect("invariant: the progress template is valid")
            .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Self {
            bar,
            case: String::new(),
        }
    }

    /// Adds `cases` to the number of cases expected.
    pub fn add_cases(&self, cases: usize) {
        if let Some(bar) = &self.bar {
            bar.inc_length(cases as u64);
        }
    }

    /// A case starts.
    pub fn start_case(&mut self, meta: &CaseMeta) {
        self.case = format!("{} / {} [{}]", meta.bench, meta.label, meta.impl_name);
        if let Some(bar) = &self.bar {
            bar.set_message(self.case.clone());
        }
    }

    /// A repetition of the current case starts.
    pub fn rep(&self, rep: RepProgress) {
        if let Some(bar) = &self.bar {
            let kind = if rep.warmup { "warm-up" } else { "rep" };
            bar.set_message(format!(
                "{}  {kind} {}/{}",
                self.case, rep.index, rep.planned
            ));
        }
    }

    /// The current case is done.
    pub fn finish_case(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Writes `text` to `out` with the bar hidden meanwhile. The terminal is best effort: a
    /// write error (a closed pipe) is ignored; the report files are not.
    pub fn print(&self, out: &mut dyn Write, text: &str) {
        let mut write = || {
            // Best effort: see above.
            let _ignored = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        };
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
