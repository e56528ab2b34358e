#!/usr/bin/env bash
# Runs every check and test of the project, from a fresh Debian machine with Rust installed.
#
#   scripts/test.sh
#
# 1. formatting, the core's layer check (no module imports a higher layer), lints (rustfmt,
#    clippy with warnings as errors) and the API docs (rustdoc, warnings as errors: no broken
#    or private links);
# 2. every unit, integration and doc test of the workspace, the examples (each runs as a
#    test), and every benchmark once at smoke scale to check that it computes the right result;
# 3. the loom model checks of the lock-free code (a separate build with `--cfg loom`);
# 4. miri over the unit tests of the modules with `unsafe` code (the nightly toolchain with its
#    `miri` and `rust-src` components, added with rustup when missing; skipped with a warning
#    on a machine that has no nightly or cannot add them).
#
# The remote tests need `nats-server` (they start their own servers on loopback ports), the
# inspector's browser test `chromium` and `chromium-driver` (it starts its own headless
# chromedriver on a loopback port) — installed from Debian's archive when missing — and the
# foreign-client test python3 with nats-py, installed into target/py.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# A one-shot build gains nothing from incremental caches, and they would almost double the
# disk the ~100 test binaries need (see also `[profile.dev]` in Cargo.toml).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# What the tests need from Debian's archive is installed with apt-get (as root, or via sudo).
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi

if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
    step "installing nats-server (apt-get)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nats-server
fi

# The foreign-client test (agentry-remote) runs a Python client on nats-py; it gets its own
# virtual environment under target/ (Debian's system Python refuses pip installs).
py_env=target/py
if ! "$py_env/bin/python3" -c "import nats" >/dev/null 2>&1; then
    step "installing python3 and nats-py into $py_env (apt-get, pip)"
    if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 python3-venv
    fi
    rm -rf "$py_env"
    python3 -m venv "$py_env"
    "$py_env/bin/pip" install -q nats-py
fi
export AGENTRY_PYTHON="$PWD/$py_env/bin/python3"

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    step "installing chromium and chromium-driver (apt-get)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
fi

step "rustfmt"
cargo fmt --all -- --check

step "layers of the core: every import points down (docs/ARCHITECTURE.md, Layers)"
cargo test -p agentry --test arch_layers_point_down

step "one path per public name, in every library crate (docs/ARCHITECTURE.md)"
cargo test -p agentry --test api_one_path_per_name

step "clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p agentry-metrics --all-targets --features inspector -- -D warnings

step "API docs (rustdoc, warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "tests: unit, integration, doc, examples, benchmark self-checks"
cargo test --workspace

step "tests: the inspector (feature inspector of agentry-metrics), in headless chromium"
cargo test -p agentry-metrics --features inspector

step "loom model checks (sync primitives)"
# Bound 2 keeps this step under a minute; run with LOOM_MAX_PREEMPTIONS=3 (about 20 minutes)
# after changing the lock-free code.
LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p agentry --lib --release sync

step "miri: undefined behaviour and leaks in the unit tests of the unsafe code (nightly)"
# The unit tests of every module with `unsafe` (docs/ARCHITECTURE.md lists them), sized down
# under `cfg(miri)`: about 2 minutes on 2 cores from a clean target/miri. When the nightly's
# miri and rust-src components are missing they are added with rustup; a machine that has no
# nightly, or cannot add them, skips this step with a warning (the rest of the suite stands).
run_miri=1
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    run_miri=0
elif ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -qx 'rust-src' \
    || ! cargo +nightly miri --version >/dev/null 2>&1; then
    step "installing miri and rust-src into the nightly toolchain (rustup)"
    rustup component add --toolchain nightly miri rust-src || run_miri=0
fi
if [ "$run_miri" -eq 0 ]; then
    echo "WARNING: miri step SKIPPED: no nightly toolchain with miri and rust-src, and rustup" >&2
    echo "         could not add them (rustup toolchain install nightly --component miri,rust-src)" >&2
else
    cargo +nightly miri setup
    # The modules with `unsafe`: payload, slab, demand, sync (mpsc, parker, set_once), the handler table, the room,
    # and the dispatchers (their queues, and real agents through cell.rs and worker.rs).
    miri_units=(message::payload slab:: demand:: sync:: agent::handlers agent::room disp::)
    CARGO_TARGET_DIR=target/miri cargo +nightly miri test -p agentry --lib -- "${miri_units[@]}" \
        --skip disp::tests::thread_pool --skip disp::batch_end::tests::a_pool_worker
    # The thread pool's work-stealing deques use crossbeam-epoch, which breaks Stacked Borrows and
    # keeps its global garbage until exit (crossbeam-rs/crossbeam#545 and #579; crossbeam checks it
    # the same way): Tree Borrows, no leak check (the test counts its own drops).
    MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-tree-borrows -Zmiri-ignore-leaks" CARGO_TARGET_DIR=target/miri \
        cargo +nightly miri test -p agentry --lib -- disp::tests::thread_pool \
        disp::batch_end::tests::a_pool_worker
fi

step "all checks passed"
