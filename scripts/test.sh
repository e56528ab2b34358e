#!/usr/bin/env bash
# Runs every check and test of the project, from a fresh Debian machine with Rust installed.
#
#   scripts/test.sh
#
# 1. formatting and lints (rustfmt, clippy with warnings as errors);
# 2. every unit, integration and doc test of the workspace, the examples (each runs as a
#    test), and every benchmark once at smoke scale to check that it computes the right result;
# 3. the loom model checks of the lock-free code (a separate build with `--cfg loom`);
# 4. miri over the unit tests of the modules with `unsafe` code (the nightly toolchain with its
#    `miri` and `rust-src` components; added with rustup when missing, a clear failure if that
#    is not possible).
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

step "miri: undefined behaviour and leaks in the unit tests of the unsafe code (nightly)"
# The unit tests of every module with `unsafe` (docs/ARCHITECTURE.md lists them), sized down
# under `cfg(miri)`: about 2 minutes on 2 cores from a clean target/miri. Not skipped when
# miri is missing: the step fails and says why.
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "error: the miri step needs a nightly toolchain and none is installed" >&2
    echo "       (install one with: rustup toolchain install nightly --component miri,rust-src)" >&2
    exit 1
fi
if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -qx 'rust-src' \
    || ! cargo +nightly miri --version >/dev/null 2>&1; then
    step "installing miri and rust-src into the nightly toolchain (rustup)"
    if ! rustup component add --toolchain nightly miri rust-src; then
        echo "error: the miri step needs the nightly's miri and rust-src components, and rustup" >&2
        echo "       could not add them (run: rustup component add --toolchain nightly miri rust-src)" >&2
        exit 1
    fi
fi
cargo +nightly miri setup
# The modules with `unsafe`: payload, slab, demand, sync (mpsc, parker), the handler table,
# and the dispatchers (their queues, and real agents through cell.rs and worker.rs).
miri_units=(message::payload slab:: demand:: sync:: agent::handlers disp::)
CARGO_TARGET_DIR=target/miri cargo +nightly miri test -p agentry --lib -- "${miri_units[@]}" \
    --skip disp::tests::thread_pool
# The thread pool's work-stealing deques use crossbeam-epoch, which breaks Stacked Borrows and
# keeps its global garbage until exit (crossbeam-rs/crossbeam#545 and #579; crossbeam checks it
# the same way): Tree Borrows, no leak check (the test counts its own drops).
MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-tree-borrows -Zmiri-ignore-leaks" CARGO_TARGET_DIR=target/miri \
    cargo +nightly miri test -p agentry --lib -- disp::tests::thread_pool

step "all checks passed"
