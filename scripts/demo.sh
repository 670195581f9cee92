#!/usr/bin/env bash
# Set up if needed, build, and run the switch on its built-in default: two net_null
# virtual ports (no NIC, no hugepages), one worker lcore, for DURATION seconds (default
# 10), printing live counters every second and the summary + conservation check at stop.
#
#   scripts/demo.sh [DURATION] [CONFIG]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONFIG="${2:-dpdk-config/null.toml}"
bash scripts/setup.sh
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release
mkdir -p out
echo "== pfcswitch run --config $CONFIG --duration $DURATION =="
./target/release/pfcswitch run --config "$CONFIG" --duration "$DURATION" --stats-interval 1 --stats-json out/demo-stats.json
echo "== counters written to out/demo-stats.json =="
