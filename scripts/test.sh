#!/usr/bin/env bash
# Set up (idempotent) and run every test: unit and property tests of the pure engine
# (also built without DPDK, to prove it needs none), and the integration tests that start
# real EAL instances on virtual devices.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"

echo "== pure engine without DPDK =="
cargo test --no-default-features --lib
echo "== everything (real EAL on vdevs) =="
# Integration tests start EAL processes; run their binaries one at a time.
cargo test --all-targets -- --test-threads=1
