//! `tcp_echo_bench` — the `tcp_echo` workload (SObjectizer 4.4 b5): 256-byte packets,
//! sequential request/response; agentry's echo server beside a plain blocking `std::net`
//! echo pair in the same run (rounds interleaved, so both see the same machine load), with
//! the seed's figures. Run it optimised:
//!
//! ```text
//! cargo run --release -p agentry-net --example tcp_echo_bench [-- requests [rounds]]
//! ```

use agentry_net::bench::tcp_echo::{
    self, EchoResult, EchoSpec, SEED_PLAIN, SEED_SOBJECTIZER, Server,
};
use std::time::Duration;

/// The best and the median round of one server.
#[derive(Debug)]
pub struct Summary {
    /// The round with the highest rate.
    pub best: EchoResult,
    /// The median rate over the rounds.
    pub median_per_sec: f64,
}

fn summarise(mut runs: Vec<EchoResult>) -> Summary {
    runs.sort_by(|a, b| a.per_sec().total_cmp(&b.per_sec()));
    let median_per_sec = runs[runs.len() / 2].per_sec();
    let best = runs.pop().expect("at least one round");
    Summary {
        best,
        median_per_sec,
    }
}

/// Runs agentry and the plain pair on `spec`, `rounds` times each (interleaved); prints a
/// row per server and the ratios. Returns (agentry, plain).
pub fn run(
    label: &str,
    spec: &EchoSpec,
    rounds: usize,
) -> Result<(Summary, Summary), Box<dyn std::error::Error>> {
    let limit = Duration::from_secs(300);
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for round in 0..rounds.max(1) {
        // Alternate which goes first.
        if round % 2 == 0 {
            ours.push(tcp_echo::run(Server::Agentry, spec, limit)?);
            plain.push(tcp_echo::run(Server::Plain, spec, limit)?);
        } else {
            plain.push(tcp_echo::run(Server::Plain, spec, limit)?);
            ours.push(tcp_echo::run(Server::Agentry, spec, limit)?);
        }
    }
    let (ours, plain) = (summarise(ours), summarise(plain));
    for (name, s) in [("agentry", &ours), ("plain std::net", &plain)] {
        println!(
            "{label:<22} {name:<15} best {:>8.0} req/s (p50 {:>7.1} µs, p99 {:>7.1} µs)   median {:>8.0} req/s",
            s.best.per_sec(),
            s.best.p50.as_secs_f64() * 1e6,
            s.best.p99.as_secs_f64() * 1e6,
            s.median_per_sec,
        );
    }
    println!(
        "{label:<22} agentry / plain: best {:.2}, median {:.2}",
        ours.best.per_sec() / plain.best.per_sec(),
        ours.median_per_sec / plain.median_per_sec
    );
    Ok((ours, plain))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let requests: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(20_000);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);
    println!(
        "seed (SObjectizer 4.4 b5, Core2 Duo 2 GHz, Windows XP): RAW channels {SEED_SOBJECTIZER:.0} packets/s, primitive blocking echo {SEED_PLAIN:.0} packets/s"
    );
    let one = EchoSpec {
        requests,
        ..EchoSpec::seed()
    };
    run("1 connection", &one, rounds)?;
    let hundred = EchoSpec {
        requests: (requests / 100).max(100),
        ..EchoSpec::hundred_connections()
    };
    run("100 connections x 1", &hundred, rounds)?;
    let hundred_two_threads = EchoSpec {
        server_threads: 2,
        ..hundred
    };
    run("100 conns, 2 io threads", &hundred_two_threads, rounds)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_net::bench::tcp_echo::EchoSpec;

    #[test]
    fn both_servers_echo_every_packet() {
        let (ours, plain) = run(
            "smoke",
            &EchoSpec {
                requests: 200,
                ..EchoSpec::seed()
            },
            1,
        )
        .expect("ran");
        assert_eq!((ours.best.requests, plain.best.requests), (200, 200));
        let (ours, _) = run(
            "smoke 10 conns",
            &EchoSpec {
                connections: 10,
                requests: 20,
                ..EchoSpec::seed()
            },
            1,
        )
        .expect("ran");
        assert_eq!(ours.best.requests, 200);
    }
}
