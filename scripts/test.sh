#!/usr/bin/env bash
# Set up (idempotent) and run every test: unit and property tests of the pure engine
# (also built without DPDK, to prove it needs none), and the integration tests that start
# real EAL instances on virtual devices.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
# One clean build: incremental state would only double target/ (5 GB here).
export CARGO_INCREMENTAL=0

echo "== lint: rustfmt, clippy and rustdoc (warnings are errors), module circles, pyflakes, shellcheck =="
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo clippy --no-default-features --lib -- -D warnings
# Private items too: most modules are private, and their intra-doc links rot as well.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --document-private-items
python3 scripts/module_cycles.py
pyflakes3 scripts/*.py scripts/lib/*.py
shellcheck scripts/*.sh .ci/run
echo "== pure engine without DPDK =="
cargo test --no-default-features --lib
echo "== unit and property tests (with DPDK bindings) =="
cargo test --lib --bins
echo "== fuzzing: every cargo-fuzz target for ${PFCSW_FUZZ_SECONDS:-60} s (frame decoders, config loading, SONiC import) =="
bash scripts/fuzz.sh "${PFCSW_FUZZ_SECONDS:-60}"
echo "== integration tests (real EAL instances on vdevs) =="
# Each test starts busy-polling switch processes: one test at a time on a 2-core machine.
cargo test --no-fail-fast --test '*' -- --test-threads=1
echo "== benchmarks, once each as a smoke test =="
cargo test --benches
