//! What the soak prints: a header with the seed, each phase's counts and equations as it
//! ends, then the totals, the RSS check and the verdict.

use super::PhaseOutcome;
use super::check::Checks;
use super::tally::Tally;
use std::time::Duration;

/// The run's parameters.
pub struct Header {
    pub seed: u64,
    /// The parts run, as `--parts` takes them.
    pub parts: String,
    pub minutes: f64,
    pub phases: u32,
    pub phase_len: Duration,
}

impl Header {
    pub fn print(&self) {
        println!(
            "agentry soak: seed {}, parts {}, {} minute(s) in {} phases of {:.1} s \
             (each then drains and is audited)",
            self.seed,
            self.parts,
            self.minutes,
            self.phases,
            self.phase_len.as_secs_f64()
        );
        println!(
            "reproduce: cargo run --release -p agentry-bench -- soak --minutes {} --seed {} \
             --parts {}",
            self.minutes, self.seed, self.parts
        );
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn rss_text(rss: Option<u64>) -> String {
    rss.map_or_else(|| "unknown".to_owned(), |b| format!("{:.1} MiB", mib(b)))
}

/// Prints one phase as it ends.
pub fn print_phase(index: u32, p: &PhaseOutcome) {
    println!(
        "\n== phase {} ({:.1} s), RSS {}",
        index + 1,
        p.elapsed.as_secs_f64(),
        rss_text(p.rss)
    );
    for (name, tally, _) in &p.parts {
        println!("  {name}: {tally}");
    }
    for (_, _, checks) in &p.parts {
        for e in checks.items() {
            println!("  {e}");
        }
    }
}

/// Growth allowed from the RSS after the warm-up phase to the RSS at the end:
/// `end <= warm_up + max(warm_up / 2, 64 MiB)`.
///
/// Every phase ends the same way — no coop, agent, timer, connection or request left, the
/// allocator's free memory given back — so the memory in use after the last phase should be
/// what it was after the first, up to fragmentation and caches that reach their size in the
/// warm-up (the agent slab, thread stacks of pools, the NATS client's buffers). Half the
/// warm-up (at least 64 MiB) absorbs those; a leak of one 100-byte allocation per message
/// or of a kilobyte per coop exceeds it within the ten phases of the default run.
pub const RSS_SLACK_MIN: u64 = 64 * 1024 * 1024;

/// The RSS check and its figures.
pub struct RssCheck {
    pub warm_up: Option<u64>,
    pub end: Option<u64>,
    pub bound: Option<u64>,
    pub checks: Checks,
}

/// Checks the RSS at the end against the one after the first phase.
pub fn rss_check(outcomes: &[PhaseOutcome]) -> RssCheck {
    let warm_up = outcomes.first().and_then(|p| p.rss);
    let end = outcomes.last().and_then(|p| p.rss);
    let mut checks = Checks::default();
    let bound = warm_up.map(|w| w + (w / 2).max(RSS_SLACK_MIN));
    match (end, bound) {
        (Some(e), Some(b)) => checks.le(
            "rss",
            "VmRSS at the end <= after warm-up + max(50 %, 64 MiB) (bytes)",
            e,
            b,
        ),
        _ => checks.eq("rss", "VmRSS readable (/proc/self/status)", 0, 1),
    }
    RssCheck {
        warm_up,
        end,
        bound,
        checks,
    }
}

/// Prints the totals and the verdict; returns true if anything failed.
pub fn print_summary(
    outcomes: &[PhaseOutcome],
    last: &Checks,
    rss: &RssCheck,
    elapsed: Duration,
    seed: u64,
) -> bool {
    println!("\n== summary (seed {seed})");
    let secs = elapsed.as_secs();
    println!(
        "duration: {}m {:02}s, {} phases",
        secs / 60,
        secs % 60,
        outcomes.len()
    );
    let mut totals: Vec<(&'static str, Tally)> = Vec::new();
    for p in outcomes {
        for (name, tally, _) in &p.parts {
            match totals.iter_mut().find(|(n, _)| n == name) {
                Some((_, t)) => t.merge(tally),
                None => totals.push((name, tally.clone())),
            }
        }
    }
    for (name, t) in &totals {
        println!("total {name}: {t}");
    }
    println!(
        "RSS: after warm-up (phase 1) {}, at the end {}, bound {}; per phase: {}",
        rss_text(rss.warm_up),
        rss_text(rss.end),
        rss_text(rss.bound),
        outcomes
            .iter()
            .map(|p| p
                .rss
                .map_or_else(|| "?".to_owned(), |b| format!("{:.0}", mib(b))))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("final checks:");
    for e in last.items() {
        println!("  {e}");
    }
    let mut checked = last.items().len();
    let mut failures: Vec<String> = Vec::new();
    for (i, p) in outcomes.iter().enumerate() {
        for (_, _, checks) in &p.parts {
            checked += checks.items().len();
            failures.extend(checks.failures().map(|e| format!("phase {}: {e}", i + 1)));
        }
    }
    failures.extend(last.failures().map(|e| format!("final: {e}")));
    println!("equations checked: {checked}, failed: {}", failures.len());
    if failures.is_empty() {
        println!("PASS");
        false
    } else {
        for f in &failures {
            println!("{f}");
        }
        println!("FAIL (reproduce with the command printed first, its seed {seed})");
        true
    }
}
