//! `agentry-bench <id>... [--quick] [--json FILE] [--csv FILE] [--md FILE] [--plot DIR] [--reps N]
//! [--list]` (`compare` for the peer comparison; `--md` writes the run's tables as Markdown, the
//! shape of `bench-results/`), and the hidden `agentry-bench __run-child …` that runs
//! one repetition of it in a child process; `agentry-bench __remote-rr-serve …` is the
//! server process of the `remote_rr` benchmark. `agentry-bench soak [--minutes N] [--seed S]`
//! runs the soak (`agentry_bench::soak`), which is not a benchmark and not part of `all`.
//!
//! See the library crate (`agentry_bench`) for the harness and how to add a benchmark.

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == agentry_bench::soak::COMMAND)
    {
        // The soak (not a benchmark): glibc's default allocator settings, so its RSS check
        // sees memory as a long-running server would.
        return ExitCode::from(agentry_bench::soak::main(&args[2..]));
    }
    agentry_bench::harness::allocator::keep_freed_memory();
    if args
        .get(1)
        .is_some_and(|a| a == agentry_bench::compare::CHILD_COMMAND)
    {
        // One repetition of the peer comparison, run by a parent `compare`.
        let code = agentry_bench::compare::child_main(&args[2..], &mut std::io::stdout());
        return ExitCode::from(code);
    }
    if args
        .get(1)
        .is_some_and(|a| a == agentry_bench::benches::REMOTE_RR_SERVER_COMMAND)
    {
        // The server process of `remote_rr`, started by a parent running the benchmark.
        let words: Option<Vec<String>> = args[2..]
            .iter()
            .map(|a| a.clone().into_string().ok())
            .collect();
        return ExitCode::from(match words {
            Some(words) => agentry_bench::benches::remote_rr_server_main(&words),
            None => agentry_bench::harness::EXIT_USAGE,
        });
    }
    if args
        .get(1)
        .is_some_and(|a| a == agentry_bench::benches::CLUSTER_NODE_COMMAND)
    {
        // A node process of the `cluster` benchmark's failure detection, killed by its parent.
        let words: Option<Vec<String>> = args[2..]
            .iter()
            .map(|a| a.clone().into_string().ok())
            .collect();
        return ExitCode::from(match words {
            Some(words) => agentry_bench::benches::cluster_node_main(&words),
            None => agentry_bench::harness::EXIT_USAGE,
        });
    }
    let code = agentry_bench::harness::run_cli(
        args,
        &agentry_bench::benches::REGISTRY,
        // Not locked: a benchmark thread that prints must not block behind the harness.
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    ExitCode::from(code)
}
