#!/usr/bin/env bash
# Runs every check and test of the project, from a fresh Debian machine with Rust installed.
#
#   scripts/test.sh
#
# 1. formatting and lints (rustfmt, clippy with warnings as errors);
# 2. every unit, integration and doc test of the workspace, the examples (each runs as a
#    test), and every benchmark once at smoke scale to check that it computes the right result;
# 3. the loom model checks of the lock-free code (a separate build with `--cfg loom`).
#
# The remote tests need `nats-server` (they start their own servers on loopback ports); it is
# installed from Debian's archive when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# A one-shot build gains nothing from incremental caches, and they would almost double the
# disk the ~100 test binaries need (see also `[profile.dev]` in Cargo.toml).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
    step "installing nats-server (apt-get)"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nats-server
fi

step "rustfmt"
cargo fmt --all -- --check

step "clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "tests: unit, integration, doc, examples, benchmark self-checks"
cargo test --workspace

step "loom model checks (sync primitives)"
# Bound 2 keeps this step under a minute; run with LOOM_MAX_PREEMPTIONS=3 (about 20 minutes)
# after changing the lock-free code.
LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p agentry --lib --release sync

step "all checks passed"
