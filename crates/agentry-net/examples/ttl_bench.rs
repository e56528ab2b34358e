//! `ttl_bench` — CSO's TTL echo benchmark, variants 4 and 5, on 1–4 io threads (objects on
//! the io dispatcher, woken through eventfd). Run it optimised:
//!
//! ```text
//! cargo run --release -p agentry-net --example ttl_bench [-- [quick] [spin_µs]]
//! ```
//!
//! `quick` runs TTL 4,096 instead of 65,536; a number sets the io threads' spin before they
//! block in `epoll_wait` (default 0).
//!
//! CSO published its figures as a chart only (no numbers in the text), so no seed figure is
//! printed beside ours.

use agentry_net::bench::ttl::{self, TtlSpec, Variant};
use std::time::Duration;

/// Runs one cell and prints it; returns messages per second.
pub fn run(spec: &TtlSpec) -> Result<f64, Box<dyn std::error::Error>> {
    let r = ttl::run(spec, Duration::from_secs(600))?;
    println!(
        "ttl {:?} threads={} objects={} messages={} ttl={} spin={:?}: {:>12.0} msgs/s ({} handled in {:.3} s; {} blocks, {} eventfd wake-ups)",
        spec.variant,
        spec.threads,
        spec.objects,
        spec.messages,
        spec.ttl,
        spec.spin,
        r.per_sec(),
        r.handled,
        r.elapsed.as_secs_f64(),
        r.blocks,
        r.wakeups
    );
    Ok(r.per_sec())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "quick");
    let spin = args
        .iter()
        .find_map(|a| a.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_micros);
    for variant in [Variant::V4, Variant::V5] {
        for threads in 1..=4 {
            let spec = if quick {
                TtlSpec::quick(variant, threads)
            } else {
                TtlSpec::cso(variant, threads)
            };
            run(&TtlSpec { spin, ..spec })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_net::bench::ttl::{TtlSpec, Variant};

    #[test]
    fn every_cell_completes_at_a_small_size() {
        for variant in [Variant::V4, Variant::V5] {
            for threads in 1..=4 {
                let spec = TtlSpec {
                    ttl: 64,
                    ..TtlSpec::quick(variant, threads)
                };
                assert!(run(&spec).expect("ran") > 0.0);
            }
        }
    }
}
