//! `agentry-bench <id>... [--quick] [--json FILE] [--csv FILE] [--plot DIR] [--reps N] [--list]`
//!
//! See the library crate (`agentry_bench`) for the harness and how to add a benchmark.

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    agentry_bench::harness::allocator::keep_freed_memory();
    let code = agentry_bench::harness::run_cli(
        std::env::args_os(),
        &agentry_bench::benches::REGISTRY,
        // Not locked: a benchmark thread that prints must not block behind the harness.
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    ExitCode::from(code)
}
