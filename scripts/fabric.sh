#!/usr/bin/env bash
# A leaf-spine fabric of pfcswitch instances with kernel hosts on one machine:
#
#   scripts/fabric.sh incast [--pfc on|off] [--duration 10] [--keep]
#   scripts/fabric.sh tcp    [--duration 10] [--keep]
#
# Builds the release binary if needed, then runs scripts/fabric.py (topology, scenarios,
# output: a table and one JSON line; see its --help). Tears everything down on exit,
# Ctrl-C included. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
case "${1:-}" in -h|--help|"") exec python3 scripts/fabric.py --help ;; esac
echo "== cargo build --release ==" >&2
cargo build --release >&2
exec python3 scripts/fabric.py "$@"
