#!/usr/bin/env bash
# Incast through two chained pfcswitch instances over net_memif, with and without PFC.
#
# Replays the setting of a published experiment that implemented PFC on a P4/bmv2
# software switch: two UDP senders at 3 Mb/s each into a 5 Mb/s bottleneck lose packets
# without PFC and none with it. Defaults are that setting.
#
#   scripts/incast.sh [--pfc on|off] [--rate 3M] [--bottleneck 5M] [--duration 10]
#                     [--b-pcp 3] [--frame-len 1000] [--keep]
#
#   --pfc on|off      PFC on the downstream (pfc_enable = [3]) or not (pfc_enable = [])
#   --rate R          rate of each sender (default 3M); the upstream's link to the
#                     downstream is shaped to 2 x R, shared by the two senders (equal DWRR)
#   --bottleneck B    the downstream egress shaper (default 5M)
#   --duration S      each sender's backlog is what it sends in S seconds at R (default 10)
#   --b-pcp N         802.1p priority of sender B (default 3: both senders lossless, as in
#                     the experiment; 1 makes B a lossy class sharing the link)
#   --frame-len L     frame size in bytes, 802.1Q-tagged (default 1000)
#   --keep            keep the run directory (configs, logs, JSON, capture)
#
#   --timeline OUT.png  record the downstream's buffer timeline and plot it
#                       (scripts/plot_timeline.py): occupancy, T, pause intervals shaded
#
# Topology (each switch is its own `pfcswitch run` process, one EAL each, no hugepages):
#
#   upstream                                                downstream
#   Ethernet0 net_pcap rx a.pcap  sender A, PCP 3 ─┐
#                                                  ├─► Ethernet8 ══memif══ Ethernet0 ─► Ethernet4 net_pcap tx out.pcap
#   Ethernet4 net_pcap rx b.pcap  sender B, PCP b ─┘   shaper 2R            (server)    shaper B (the bottleneck)
#                                                                ◄── PFC ──
#
# The senders are finite backlogs that the upstream reads at start into its large lossless
# buffer and sends at its link shaper's rate, honouring the downstream's PFC frames (the
# NIC + socket buffer of a sending host). The downstream has a small buffer (512 KiB,
# 64 KiB headroom per lossless PG) and trusts 802.1p; PCP 3 is the lossless class.
#
# Counting (all from the switches' counters JSON; PCP 3 = TC 3, PCP 1 = TC 1):
#   lossless_sent       frames of the lossless class (TC 3) that entered the downstream
#                       (per-TC rx of its link port) = the senders' PCP-3 backlog when the
#                       upstream sent it all (the script says so if it did not)
#   lossless_delivered  TC-3 frames that left the bottleneck (per-TC tx; equal to the
#                       PCP-3 frames in the capture out.pcap)
#   lossless_drops      TC-3 frames lost anywhere: downstream per-TC drops + upstream per-TC
#                       drops (with PFC off the downstream drops them as an ordinary class)
#                       + NIC loss (imissed + rx_nombuf) on ports that carry a lossless class
#   lossy_sent/drops    the same for TC 1 (0 unless --b-pcp 1)
#   pause_frames_tx     PFC PAUSE frames (incl. refreshes) the downstream sent to the upstream
#   resume_frames_tx    PFC RESUME frames (quanta 0) it sent
#
# Output: a readable table, then exactly one JSON line:
#   {"pfc":"on","lossless_sent":n,"lossless_delivered":n,"lossless_drops":n,"lossy_sent":n,
#    "lossy_drops":n,"pause_frames_tx":n,"resume_frames_tx":n}
# Needs root (DPDK EAL), python3, a Rust toolchain; builds the release binary if needed.
set -euo pipefail
cd "$(dirname "$0")/.."

PFC=on RATE=3M BOTTLENECK=5M DURATION=10 B_PCP=3 FRAME_LEN=1000 KEEP=0
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --pfc) PFC="${2:?}"; shift 2 ;;
        --rate) RATE="${2:?}"; shift 2 ;;
        --bottleneck) BOTTLENECK="${2:?}"; shift 2 ;;
        --duration) DURATION="${2:?}"; shift 2 ;;
        --b-pcp) B_PCP="${2:?}"; shift 2 ;;
        --frame-len) FRAME_LEN="${2:?}"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --timeline) TIMELINE="${2:?}"; shift 2 ;;
        -h|--help) usage 0 ;;
        *) echo "incast.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
case "$PFC" in on|off) ;; *) echo "incast.sh: --pfc on|off" >&2; exit 2 ;; esac

[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
echo "== cargo build --release ==" >&2
cargo build --release >&2
BIN="$PWD/target/release/pfcswitch"

WORK="$(mktemp -d /tmp/pfcsw-incast-XXXXXX)"
TAG="$(basename "$WORK")"
DOWN_PID="" UP_PID=""
cleanup() {
    for p in $UP_PID $DOWN_PID; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "/var/run/dpdk/$TAG-up" "/var/run/dpdk/$TAG-down"   # EAL runtime dirs of this run
    if [ "$KEEP" = 1 ]; then echo "run directory kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# ---- plan: backlogs, buffer and memory sizes, run times (python: exact arithmetic) ----
python3 scripts/incast_plan.py "$WORK" "$RATE" "$BOTTLENECK" "$DURATION" "$B_PCP" "$FRAME_LEN" "$PFC" > "$WORK/plan.env"
# shellcheck disable=SC1091
. "$WORK/plan.env"

LINK="$WORK/link.sock"   # memif's abstract socket namespace: a unique name, no file
if [ "$PFC" = on ]; then
    DOWN_PFC="[3]"
    DOWN_PG='"Ethernet0|3" = "pg_lossless_profile"
"Ethernet0|0" = "ingress_lossy_profile"
"Ethernet0|4" = "ingress_lossy_profile"
"Ethernet4|3" = "pg_lossless_profile"
"Ethernet4|0" = "ingress_lossy_profile"
"Ethernet4|4" = "ingress_lossy_profile"'
    DOWN_Q='"Ethernet0|0-2" = "queue_lossy_profile"
"Ethernet0|4-7" = "queue_lossy_profile"
"Ethernet4|0-2" = "queue_lossy_profile"
"Ethernet4|4-7" = "queue_lossy_profile"'
else
    DOWN_PFC="[]"
    DOWN_PG='"Ethernet0|0" = "ingress_lossy_profile"
"Ethernet0|3-4" = "ingress_lossy_profile"
"Ethernet4|0" = "ingress_lossy_profile"
"Ethernet4|3-4" = "ingress_lossy_profile"'
    DOWN_Q='"Ethernet0|0-7" = "queue_lossy_profile"
"Ethernet4|0-7" = "queue_lossy_profile"'
fi

# mtu 9100 on the shaped ports: the shaper's bucket is two maximum frames; at a few Mb/s
# two 1500-byte frames are ~4 ms of tokens, less than the time slices of four
# busy-polling threads on two cores, and the shaper would under-deliver.
cat > "$WORK/down.toml" <<EOF
[eal]
args = ["--no-huge", "-m", "256", "--no-pci", "--lcores=0@0,1@0"]
file_prefix = "$TAG-down"
[switch]
rx_ring_size = 256
tx_ring_size = 256
mbuf_count = 4096
[[port]]
name = "Ethernet0"
devargs = "net_memif0,role=server,id=0,socket=$LINK"
speed = "$SPEED"
mtu = 9100
trust = "pcp"
pfc_enable = $DOWN_PFC
[[port]]
name = "Ethernet4"
devargs = "net_pcap0,tx_pcap=$WORK/out.pcap"
speed = "$SPEED"
mtu = 9100
trust = "pcp"
pfc_enable = $DOWN_PFC
shaper_rate = "$BNECK_RATE"
[qos.scheduler]
"1" = { type = "DWRR", weight = 15 }
"3" = { type = "DWRR", weight = 15 }
[buffer]
total_size = "512KiB"
[buffer.pool.ingress_lossless_pool]
size = "384KiB"
type = "ingress"
[buffer.pool.egress_lossy_pool]
size = "128KiB"
type = "egress"
[buffer.profile.pg_lossless_profile]
pool = "ingress_lossless_pool"
size = 4096
xoff = "64KiB"
xon = 4096
xon_offset = 12288
dynamic_th = -3
[buffer.profile.ingress_lossy_profile]
pool = "ingress_lossless_pool"
dynamic_th = 3
[buffer.profile.queue_lossy_profile]
pool = "egress_lossy_pool"
dynamic_th = -2
[buffer.pg]
$DOWN_PG
[buffer.queue]
$DOWN_Q
[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0", "Ethernet4:0"]
tx = ["Ethernet0", "Ethernet4"]
EOF

cat > "$WORK/up.toml" <<EOF
[eal]
args = ["--no-huge", "-m", "$UP_MEM", "--no-pci", "--lcores=0@1,1@1"]
file_prefix = "$TAG-up"
[switch]
rx_ring_size = 256
tx_ring_size = 256
mbuf_count = $UP_MBUFS
[[port]]
name = "Ethernet0"
devargs = "net_pcap0,rx_pcap=$WORK/a.pcap"
speed = "$SPEED"
mtu = 1500
trust = "pcp"
pfc_enable = [3]
[[port]]
name = "Ethernet4"
devargs = "net_pcap1,rx_pcap=$WORK/b.pcap"
speed = "$SPEED"
mtu = 1500
trust = "pcp"
pfc_enable = [3]
[[port]]
name = "Ethernet8"
devargs = "net_memif0,role=client,id=0,socket=$LINK"
speed = "$SPEED"
mtu = 9100
trust = "pcp"
pfc_enable = [3]
shaper_rate = "$LINK_RATE"
[qos.scheduler]
"1" = { type = "DWRR", weight = 15 }
"3" = { type = "DWRR", weight = 15 }
[buffer]
total_size = $UP_TOTAL
[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0", "Ethernet4:0", "Ethernet8:0"]
tx = ["Ethernet0", "Ethernet4", "Ethernet8"]
EOF

"$BIN" check-config "$WORK/down.toml" >/dev/null 2>"$WORK/check.err" || { cat "$WORK/check.err" >&2; exit 1; }
"$BIN" check-config "$WORK/up.toml" >/dev/null 2>"$WORK/check.err" || { cat "$WORK/check.err" >&2; exit 1; }

echo "== incast: PFC $PFC, 2 senders x $RATE ($N frames of $FRAME_LEN B each, sender B PCP $B_PCP) -> bottleneck $BOTTLENECK; upstream runs ${UP_SECS}s ==" >&2
export RUST_LOG=info
T0=$(date +%s.%N)
TL_ARGS=()
[ -n "${TIMELINE:-}" ] && TL_ARGS=(--timeline "$WORK/timeline.csv" --timeline-interval-us 2000)
"$BIN" run --config "$WORK/down.toml" --duration 600 --stats-json "$WORK/down.json" "${TL_ARGS[@]}" >"$WORK/down.out" 2>"$WORK/down.err" &
DOWN_PID=$!
for _ in $(seq 300); do
    grep -q "forwarding:" "$WORK/down.err" 2>/dev/null && break
    kill -0 "$DOWN_PID" 2>/dev/null || { cat "$WORK/down.out" "$WORK/down.err" >&2; echo "incast.sh: downstream exited early" >&2; exit 1; }
    sleep 0.05
done
grep -q "forwarding:" "$WORK/down.err" || { cat "$WORK/down.err" >&2; echo "incast.sh: downstream not up" >&2; exit 1; }
"$BIN" run --config "$WORK/up.toml" --duration "$UP_SECS" --stats-json "$WORK/up.json" >"$WORK/up.out" 2>"$WORK/up.err" &
UP_PID=$!
UP_RC=0; wait "$UP_PID" || UP_RC=$?
UP_PID=""
sleep "$DRAIN"
kill -INT "$DOWN_PID"
DOWN_RC=0; wait "$DOWN_PID" || DOWN_RC=$?
DOWN_PID=""
T1=$(date +%s.%N)
if [ "$UP_RC" != 0 ] || [ "$DOWN_RC" != 0 ]; then
    echo "--- upstream (exit $UP_RC) ---" >&2; cat "$WORK/up.out" "$WORK/up.err" >&2
    echo "--- downstream (exit $DOWN_RC) ---" >&2; cat "$WORK/down.out" "$WORK/down.err" >&2
    exit 1
fi

if [ -n "${TIMELINE:-}" ]; then
    python3 scripts/plot_timeline.py "$WORK/timeline.csv" "$TIMELINE" --title "incast: 2 x $RATE into $BOTTLENECK, PFC $PFC (downstream ingress)" >&2 \
        && echo "timeline plot: $TIMELINE" >&2
fi
python3 scripts/incast_report.py "$WORK" "$PFC" "$N" "$B_PCP" "$T0" "$T1" "$RATE" "$BOTTLENECK"
