#!/usr/bin/env bash
# The three headroom modes (static, shared_pool, dsh) on one buffer, N:1 incast for
# N = 2, 4, 8 and two dynamic_th values: the burst absorbed before the first PAUSE,
# PAUSE frames, time paused, lossless and lossy drops (scripts/headroom_compare.py says
# how). Each mode's first figure is also checked on a running switch, and at N = 2,
# α = 1/4 each mode runs once more with real PFC-obeying senders (pfcgen over memif).
#
#   scripts/headroom-compare.sh [OUT_DIR]    (default target/headroom-compare)
#
# Writes OUT_DIR/headroom-compare.json, OUT_DIR/headroom-modes-table.md (the table) and
# OUT_DIR/headroom-modes.png (the plot); docs/headroom-modes.md quotes a run, docs/headroom-modes.png is its plot.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
out=${1:-target/headroom-compare}
cargo build --release --bin pfcswitch --bin pfcgen --example headroom_compare
mkdir -p "$out"
python3 scripts/headroom_compare.py --bin target/release/pfcswitch \
    --model target/release/examples/headroom_compare --out "$out" --pfcgen target/release/pfcgen \
    --markdown "$out/headroom-modes-table.md" --plot "$out/headroom-modes.png"
cat "$out/headroom-modes-table.md"
