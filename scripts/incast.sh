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
python3 - "$WORK" "$RATE" "$BOTTLENECK" "$DURATION" "$B_PCP" "$FRAME_LEN" "$PFC" <<'EOF' > "$WORK/plan.env"
import math, re, struct, sys
work, rate, bneck, dur, b_pcp, flen, pfc = sys.argv[1:]
def bps(s):
    m = re.fullmatch(r'\s*([0-9.]+)\s*([kKmMgG]?)(?:bps|bit/s)?\s*', s)
    if not m: sys.exit(f"incast.sh: bad rate '{s}' (e.g. 3M, 500k, 1G)")
    return float(m.group(1)) * {'': 1e6, 'k': 1e3, 'm': 1e6, 'g': 1e9}[m.group(2).lower()]
R, B, S, L, bp = bps(rate), bps(bneck), float(dur), int(flen), int(b_pcp)
if not 64 <= L <= 1500: sys.exit("incast.sh: --frame-len must be 64..1500")
if not 0 <= bp <= 7: sys.exit("incast.sh: --b-pcp must be 0..7")
wire = (L + 24) * 8                      # the shapers count FCS + preamble + IFG
n = max(1, round(R * S / wire))          # frames per sender
if n > 30000: sys.exit(f"incast.sh: {n} frames per sender is too many; lower --rate/--duration or raise --frame-len")
# Upstream buffer: both backlogs plus their flood copies, under DT alpha = 1, twice over.
total = max(16 << 20, 1 << math.ceil(math.log2(12 * n * L + 1)))
mbufs = 1 << math.ceil(math.log2(4 * n + 4096))
mem_up = 128 + mbufs * 9500 // (1 << 20)
speed = "100M" if max(2 * R, B) <= 100e6 else "10G"
# Worst case (PFC on): everything through the bottleneck at >= B/2 per class.
up_secs = math.ceil(2 * n * wire / min(B, 2 * R) * 1.15) + 2
drain = max(1.5, 600e3 * 8 / B + 0.5)
def frame(src, pcp, seq):
    h = bytes([2, 0, 0, 0, 0, 0xdd, 2, 0, 0, 0, 0, src]) + struct.pack('>HHHI', 0x8100, (pcp << 13) | 100, 0x88b5, seq)
    return h + bytes([pcp]) * (L - len(h))
def pcap(path, frames):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack('<IIII', 1, i, len(fr), len(fr))); f.write(fr)
pcap(f"{work}/a.pcap", [frame(0x0a, 3, i) for i in range(n)])
pcap(f"{work}/b.pcap", [frame(0x0b, bp, i) for i in range(n)])
k = lambda x: f"{round(x / 1e3)}k"
print(f"N={n}\nLINK_RATE={k(2 * R)}\nBNECK_RATE={k(B)}\nSPEED={speed}\nUP_TOTAL={total}\nUP_MBUFS={mbufs}\nUP_MEM={mem_up}\nUP_SECS={up_secs}\nDRAIN={drain:.1f}")
print(f"RATE_BPS={int(R)}\nBNECK_BPS={int(B)}\nWIRE_BITS={wire}")
EOF
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
python3 - "$WORK" "$PFC" "$N" "$B_PCP" "$T0" "$T1" "$RATE" "$BOTTLENECK" <<'EOF'
import json, struct, sys
work, pfc, n, b_pcp, t0, t1, rate, bneck = sys.argv[1:]
n, b_pcp = int(n), int(b_pcp)
up, down = (json.load(open(f"{work}/{x}.json")) for x in ("up", "down"))
P = lambda j, name: next(p for p in j["ports"] if p["name"] == name)
d_in, d_out, u_link = P(down, "Ethernet0"), P(down, "Ethernet4"), P(up, "Ethernet8")
tc = lambda p, t, k: p["tc"][t][k]
# The capture: frames per PCP that left the bottleneck.
b = open(f"{work}/out.pcap", "rb").read(); off = 24; cap = {}
while off + 16 <= len(b):
    incl = struct.unpack("<I", b[off + 8:off + 12])[0]; f = b[off + 16:off + 16 + incl]; off += 16 + incl
    pcp = f[14] >> 5 if f[12:14] == b"\x81\x00" else None
    cap[pcp] = cap.get(pcp, 0) + 1
LL, LY = 3, 1
up_drops = lambda t: sum(tc(p, t, "dropped") for p in up["ports"])
# Frames the NICs lost before either switch classified them, on ports with PFC enabled.
nic_loss = sum(p["lossless_nic_loss"] for j in (up, down) for p in j["ports"])
res = {
    "pfc": pfc,
    "lossless_sent": tc(d_in, LL, "rx"),
    "lossless_delivered": tc(d_in, LL, "tx"),
    "lossless_drops": tc(d_in, LL, "dropped") + up_drops(LL) + nic_loss,
    "lossy_sent": tc(d_in, LY, "rx"),
    "lossy_drops": tc(d_in, LY, "dropped") + up_drops(LY),
    "pause_frames_tx": sum(d_in["pfc"]["tx_pause"]),
    "resume_frames_tx": sum(d_in["pfc"]["tx_resume"]),
}
backlog = {3: n + (n if b_pcp == 3 else 0), 1: n if b_pcp == 1 else 0}
warn = []
if u_link["tx_packets"] < 2 * n:
    warn.append(f"upstream sent {u_link['tx_packets']} of its {2 * n} backlog frames before it stopped (rest flushed: counted as drops)")
flushed = d_in["drops"]["flushed_at_stop"] + d_out["drops"]["flushed_at_stop"]
if flushed:
    warn.append(f"downstream still held {flushed} frames at stop (counted as drops)")
if cap.get(LL, 0) != res["lossless_delivered"]:
    warn.append(f"capture has {cap.get(LL, 0)} PCP-3 frames, counters say {res['lossless_delivered']}")
for name, j in (("upstream", up), ("downstream", down)):
    if not j["conservation"]["ok"] or j["mbufs"]["in_use_after_stop"]:
        warn.append(f"{name}: conservation/leak check failed: {j['conservation']} {j['mbufs']}")

row = "{:<12} {:<10} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}"
print(f"\nincast: PFC {pfc}; senders 2 x {rate} (sender A PCP 3, sender B PCP {b_pcp}), bottleneck {bneck}; wall time {float(t1) - float(t0):.1f} s")
print(row.format("switch", "port", "rx", "tx", "drops", "lossless", "PAUSE tx", "RESUME tx", "PAUSE rx", "RESUME rx"))
for name, j in (("upstream", up), ("downstream", down)):
    for p in j["ports"]:
        f = p["pfc"]
        print(row.format(name, p["name"], p["rx_packets"], p["tx_packets"], p["drops_total"], p["lossless_drops"],
                         sum(f["tx_pause"]), sum(f["tx_resume"]), sum(f["rx_pause"]), sum(f["rx_resume"])))
print()
crow = "{:<26} {:>8} {:>10} {:>8} {:>8}"
print(crow.format("class at the downstream", "sent", "delivered", "dropped", "loss %"))
for label, t in (("lossless (PCP 3, TC 3)", LL), ("lossy (PCP 1, TC 1)", LY)):
    s, d, x = tc(d_in, t, "rx"), tc(d_in, t, "tx"), tc(d_in, t, "dropped") + up_drops(t)
    print(crow.format(label, s, d, x, f"{100 * x / s:.2f}" if s else "-"))
el = down["elapsed_s"]
print(f"\nbottleneck delivered {d_out['tx_bytes'] * 8 / 1e6:.2f} Mbit; upstream paused on PFC 3 for "
      f"{u_link['pfc']['rx_pause_duration_us'][3] / 1e3:.0f} ms in total; PFC reaction (Xoff crossing -> PAUSE handed to tx_burst) "
      + (f"p50 {down['pfc_reaction']['p50_ns'] / 1e6:.2f} ms, max {down['pfc_reaction']['max_ns'] / 1e6:.2f} ms" if down["pfc_reaction"]["count"] else "n/a"))
for w in warn:
    print(f"WARNING: {w}")
print(json.dumps(res, separators=(",", ":")))
EOF
