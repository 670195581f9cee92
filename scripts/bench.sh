#!/usr/bin/env bash
# pfcswitch benchmarks (docs/benchmarks.md): the switch against DPDK's own forwarding on the same
# vdevs and cores, in one invocation. Prints a table and ends with ONE JSON line.
#
#   scripts/bench.sh            full mode (5 runs per figure, callgrind + perf profile, ~8 minutes)
#   scripts/bench.sh --quick    3 null / 2 memif runs, shorter runs, no callgrind
#                               (< 2 minutes when the release build is up to date)
#   scripts/bench.sh --workers N  worker scaling only: 1, 2, 4 ... N workers, each on its own
#                               pair of net_null ports and CPU, vs testpmd with as many cores
#                               (needs N+1 CPUs to mean anything; scripts/bench_scale.py)
#   scripts/bench.sh --scale    tables at ToR sizes through the kernel (scripts/bench_tables.py)
#                               then scale_ir.py, scale_failover.py, mac_flap_rate.py: Ir, failover, MAC flaps at scale
#
# Figures (see docs/benchmarks.md):
#   null      pfcswitch (full lossless pipeline, dpdk-config/bench-null.toml) vs
#             dpdk-testpmd --forward-mode=macswap on two net_null ports, one forwarding
#             core (CPU 1). Mpps = forwarded packets/s, BOTH ports together.
#   memif     generator (testpmd flowgen, 64 B, both directions, CPU 0) -> pfcswitch
#             (dpdk-config/bench-memif.toml, worker on CPU 1) vs testpmd io in its place.
#   cycles    worker busy TSC cycles / forwarded packets (null runs);
#             instructions: callgrind Ir of the worker thread / forwarded packets.
#   routed    callgrind Ir/packet of the routed path beside the bridged one, same frames
#             replayed by net_pcap (net_null's frames carry no IP): scripts/route_ir.py.
#   l3fwd     DPDK's l3fwd (FIB mode, built from dpdk-doc's sources) on that same replay and
#             CPU vs pfcswitch routing: l3fwd_mpps, routed_vs_l3fwd (scripts/l3fwd_ref.py).
#             A figure that could not be measured is null and named in "missing" with why.
#   latency   at 50% of memif_mpps offered by scripts/pktgen/pacer.c (rate-paced), from the
#             switch's own histograms (stats JSON "latency") when present, else n/a; the
#             pacer's own end-to-end latency is reported under "extra".
#   pfc       PFC reaction p50/p99 from a single-process loop that makes a lossless PG
#             oscillate thousands of times per second (see docs/benchmarks.md).
#   ovs       OVS-DPDK (Debian openvswitch-switch-dpdk, installed here if missing; a netdev
#             bridge with the NORMAL action, PMD thread on CPU 1) in pfcswitch's place on
#             the same memif setup: ovs_memif_mpps and vs_ovs = memif_mpps / ovs_memif_mpps.
#
# Environment: BENCH_RUNS=N overrides the number of runs; BENCH_KEEP=1 keeps the work dir.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
QUICK=0
WORKERS=""
SCALE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --scale) SCALE=1 ;;
        --workers) WORKERS="${2:-}"; shift ;;
        --workers=*) WORKERS="${1#--workers=}" ;;
        -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
        *) echo "usage: $0 [--quick] [--workers N] [--scale]" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$WORKERS" ] && ! [[ "$WORKERS" =~ ^[1-9][0-9]*$ ]]; then
    echo "bench: --workers: '$WORKERS' is not a number of workers (1, 2, ...)" >&2
    exit 2
fi

T0=$(date +%s)
# --- set up if needed -------------------------------------------------------------------
need_setup=0
for c in dpdk-testpmd pkg-config python3 cargo; do
    command -v "$c" >/dev/null 2>&1 || need_setup=1
done
pkg-config --exists libdpdk 2>/dev/null || need_setup=1
if [ "$need_setup" = 1 ]; then
    echo "bench: running scripts/setup.sh" >&2
    bash scripts/setup.sh >&2
fi
# The reference a user would pick instead: OVS-DPDK from Debian (not needed by the tests).
if [ ! -x /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk ]; then
    echo "bench: apt-get install openvswitch-switch-dpdk" >&2
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openvswitch-switch-dpdk >&2 \
            || echo "bench: openvswitch-switch-dpdk not installed: OVS figures will be n/a" >&2
    else
        echo "bench: not root: OVS figures will be n/a" >&2
    fi
fi

# --- build --------------------------------------------------------------------------------
echo "bench: cargo build --release" >&2
cargo build --release >&2
BUILD_S=$(( $(date +%s) - T0 ))

WORK=$(mktemp -d /tmp/pfcswitch-bench.XXXXXX)
if [ "${BENCH_KEEP:-0}" != 1 ]; then
    trap 'rm -rf "$WORK"' EXIT
fi

if [ "$SCALE" = 1 ]; then
    BENCH_ROOT="$ROOT" BENCH_WORK="$WORK" python3 "$ROOT/scripts/bench_tables.py"
    exit 0
fi

# The rate-paced generator for the latency figure (optional: skipped without a C compiler).
PACER=""
if command -v cc >/dev/null 2>&1; then
    # pkg-config prints several flags: word splitting is intended.
    # shellcheck disable=SC2046
    if cc -O2 $(pkg-config --cflags libdpdk) scripts/pktgen/pacer.c -o "$WORK/pacer" \
        $(pkg-config --libs libdpdk) 2>"$WORK/pacer-build.log"; then
        PACER="$WORK/pacer"
    else
        echo "bench: pacer did not build (see $WORK/pacer-build.log): latency skipped" >&2
    fi
fi

# The routed reference (full mode): DPDK's l3fwd, built from Debian's dpdk-doc sources with its
# own Makefile against the installed libdpdk. If it cannot be had, the JSON says why
# (BENCH_L3FWD_WHY -> "missing"); the bench goes on.
L3FWD=""
L3FWD_WHY=""
EX=/usr/share/dpdk/examples
if [ "$QUICK" = 0 ] && [ -z "$WORKERS" ]; then
    if [ ! -f "$EX/l3fwd/Makefile" ]; then
        echo "bench: scripts/setup.sh --bench (dpdk-doc: l3fwd's source)" >&2
        bash scripts/setup.sh --bench >&2 || true
    fi
    if [ ! -f "$EX/l3fwd/Makefile" ]; then
        L3FWD_WHY="no $EX/l3fwd (package dpdk-doc: scripts/setup.sh --bench)"
    else
        mkdir -p "$WORK/examples"
        cp -r "$EX/l3fwd" "$EX/common" "$WORK/examples/"
        # l3fwd 22.11 asks for RX checksum offload on every port; net_pcap has none.
        sed -i 's|\.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,|.offloads = 0,|' "$WORK/examples/l3fwd/main.c"
        # Its Makefile leaves out examples/common (meson adds it): CFLAGS from the environment.
        if CFLAGS="-I../common" make -C "$WORK/examples/l3fwd" >"$WORK/l3fwd-build.log" 2>&1; then
            L3FWD="$WORK/examples/l3fwd/build/l3fwd"
        else
            L3FWD_WHY="l3fwd did not build: $(grep -m1 -i error "$WORK/l3fwd-build.log" || tail -1 "$WORK/l3fwd-build.log")"
            echo "bench: $L3FWD_WHY" >&2
        fi
    fi
fi

if [ -n "$WORKERS" ]; then
    BENCH_ROOT="$ROOT" BENCH_WORK="$WORK" BENCH_WORKERS="$WORKERS" python3 "$ROOT/scripts/bench_scale.py"
    exit 0
fi

export BENCH_ROOT="$ROOT" BENCH_WORK="$WORK" BENCH_QUICK="$QUICK" BENCH_PACER="$PACER" \
    BENCH_BUILD_S="$BUILD_S" BENCH_T0="$T0" BENCH_L3FWD="$L3FWD" BENCH_L3FWD_WHY="$L3FWD_WHY"
python3 "$ROOT/scripts/bench.py"
