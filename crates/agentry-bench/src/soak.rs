//! `agentry-bench soak [--minutes N] [--seed S]`: a long, random, reproducible churn that
//! proves the runtime's accounting guarantees hold — not a benchmark (nothing is timed) and
//! not part of CI or of `all`.
//!
//! Three parts run side by side, each in its own environment, in phases of equal length:
//! - `core`: coops on every dispatcher kind come and go (from threads and from handlers,
//!   some failing to start), messages of every kind race the deregistrations, agents panic,
//!   timers are scheduled and cancelled;
//! - `net`: TCP clients of every kind against two listeners of an io dispatcher (normal
//!   echo clients, slow tricklers, floods that never read);
//! - `remote`: two NATS gateways exchange messages and requests while the nats-server is
//!   killed and restarted on the same port.
//!
//! At the end of each phase every part stops its drivers, waits until nothing is in
//! flight, and checks its equations (`check`); the report prints each with both sides.
//! RSS is read after the first phase (the warm-up) and after the last: a leak detector.
//! The exit status is 0 when every equation held, 1 otherwise, 2 on a usage error.
//!
//! `--parts core,tcp,nats` (the default) chooses the parts: a finding in one part can be
//! replayed alone with its seed.
//!
//! Random but reproducible: every driver thread draws from its own xorshift stream seeded
//! from the seed, the phase and the thread (the interleaving of threads is not, so a
//! violation may need a few runs with its seed to show again).

mod check;
mod core;
mod net;
mod provoked;
mod remote;
mod report;
mod tally;

use crate::harness::{allocator, rss};
use crate::xorshift::XorShift;
use check::Checks;
use clap::Parser;
use std::time::{Duration, Instant};
use tally::Tally;

/// The first argument that selects the soak.
pub const COMMAND: &str = "soak";

/// A long random churn that checks the runtime's accounting guarantees (not part of CI).
#[derive(Debug, Parser)]
#[command(
    name = "agentry-bench soak",
    about,
    after_help = "Exit status: 0 when every equation held, 1 when one did not, 2 on a usage \
                  error (or when a part cannot start, e.g. nats-server is not installed)."
)]
struct Cli {
    /// How long to run, in minutes (fractions allowed).
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// The seed of every random choice (default: from the clock; printed either way).
    #[arg(long)]
    seed: Option<u64>,
    /// The parts to run (comma-separated): `core`, `tcp`, `nats`. The NATS part needs
    /// nats-server (apt-get install nats-server).
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = [PartName::Core, PartName::Tcp, PartName::Nats]
    )]
    parts: Vec<PartName>,
}

/// A part of the soak, as `--parts` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PartName {
    Core,
    Tcp,
    Nats,
}

impl std::fmt::Display for PartName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PartName::Core => "core",
            PartName::Tcp => "tcp",
            PartName::Nats => "nats",
        })
    }
}

/// One part of the soak: started at each phase, stopped and checked at its end.
trait Part {
    fn name(&self) -> &'static str;
    /// Starts the part's driver threads for phase `phase`.
    fn start_phase(&mut self, seed: u64, phase: u32);
    /// Stops the drivers, waits until nothing is in flight, returns what happened and the
    /// phase's equations.
    fn end_phase(&mut self) -> (Tally, Checks);
    /// Shuts the part down after the last phase; returns the final equations.
    fn finish(&mut self) -> Checks;
}

/// The generator of one driver thread: its own stream of `seed`, per phase and thread.
fn stream_rng(seed: u64, phase: u32, stream: u64) -> XorShift {
    XorShift::for_index(
        seed ^ (u64::from(phase) << 32)
            .wrapping_add(stream)
            .wrapping_mul(0xD1B5_4A32_D192_ED03),
    )
}

/// Polls `cond` every few milliseconds until it holds (true) or `limit` passes (false).
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The shortest phase: time enough for slow TCP clients to be closed and a NATS restart.
const MIN_PHASE: Duration = Duration::from_secs(15);
/// Phases of a long run.
const PHASES: u32 = 10;

/// How a run of `total` is cut into phases: up to [`PHASES`], none shorter than
/// [`MIN_PHASE`], at least 2 (the first is the warm-up of the RSS check).
fn phases(total: Duration) -> (u32, Duration) {
    let n = (total.as_secs_f64() / MIN_PHASE.as_secs_f64()).floor() as u32;
    let n = n.clamp(2, PHASES);
    (n, total / n)
}

/// One phase's outcome, per part.
struct PhaseOutcome {
    elapsed: Duration,
    parts: Vec<(&'static str, Tally, Checks)>,
    rss: Option<u64>,
}

/// The whole program: `args` are what follows [`COMMAND`]. Returns the exit status.
#[must_use]
pub fn main(args: &[std::ffi::OsString]) -> u8 {
    let cli = match Cli::try_parse_from(
        std::iter::once(std::ffi::OsString::from("agentry-bench soak")).chain(args.iter().cloned()),
    ) {
        Ok(cli) => cli,
        Err(e) => {
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            let _ = e.print();
            return code;
        }
    };
    if !(cli.minutes > 0.0 && cli.minutes.is_finite()) {
        eprintln!("error: --minutes must be a positive number");
        return 2;
    }
    provoked::quiet_provoked_panics();
    let seed = cli.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let total = Duration::from_secs_f64(cli.minutes * 60.0);
    let (n, phase_len) = phases(total);
    let header = report::Header {
        seed,
        parts: cli
            .parts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(","),
        minutes: cli.minutes,
        phases: n,
        phase_len,
    };
    header.print();

    let mut parts: Vec<Box<dyn Part>> = Vec::new();
    let made = (|| -> Result<(), String> {
        for name in &cli.parts {
            if parts.iter().any(|p| p.name() == name.to_string()) {
                continue;
            }
            parts.push(match name {
                PartName::Core => Box::new(core::CoreSoak::new()?),
                PartName::Tcp => Box::new(net::NetSoak::new()?),
                PartName::Nats => Box::new(remote::RemoteSoak::new(phase_len)?),
            });
        }
        Ok(())
    })();
    if let Err(e) = made {
        eprintln!("soak: cannot start: {e}");
        return 2;
    }

    let started = Instant::now();
    let mut outcomes = Vec::new();
    for phase in 0..n {
        let t0 = Instant::now();
        for p in &mut parts {
            p.start_phase(seed, phase);
        }
        std::thread::sleep(phase_len);
        let mut results = Vec::new();
        for p in &mut parts {
            let (tally, checks) = p.end_phase();
            results.push((p.name(), tally, checks));
        }
        allocator::release_free_memory();
        let outcome = PhaseOutcome {
            elapsed: t0.elapsed(),
            parts: results,
            rss: rss::current_rss_bytes().ok(),
        };
        report::print_phase(phase, &outcome);
        outcomes.push(outcome);
    }
    let mut last = Checks::default();
    for p in &mut parts {
        last.extend(p.finish());
    }
    let rss_check = report::rss_check(&outcomes);
    last.extend(rss_check.checks.clone());
    let failed = report::print_summary(&outcomes, &last, &rss_check, started.elapsed(), seed);
    u8::from(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_cut_into_at_least_two_phases_of_at_least_15_s_up_to_ten() {
        assert_eq!(
            phases(Duration::from_secs(600)),
            (10, Duration::from_secs(60))
        );
        assert_eq!(
            phases(Duration::from_secs(60)),
            (4, Duration::from_secs(15))
        );
        assert_eq!(
            phases(Duration::from_secs(20)),
            (2, Duration::from_secs(10))
        );
        assert_eq!(phases(Duration::from_secs(3600)).0, 10);
    }

    #[test]
    fn streams_differ_by_phase_and_thread_and_repeat_for_a_seed() {
        let draw = |p, s| stream_rng(42, p, s).next_u64();
        assert_eq!(draw(0, 0), draw(0, 0));
        assert_ne!(draw(0, 0), draw(0, 1));
        assert_ne!(draw(0, 0), draw(1, 0));
    }

    #[test]
    fn usage_errors_exit_with_2() {
        assert_eq!(main(&["--minutes".into(), "-1".into()]), 2);
        assert_eq!(main(&["--bogus".into()]), 2);
    }
}
