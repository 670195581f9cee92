#!/usr/bin/env python3
"""scripts/incast.sh, last step: the per-switch table, per-class loss and one JSON line
from the two switches' stats JSON and the bottleneck capture."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pfcsw import load_stats, port, read_pcap  # noqa: E402

work, pfc, n, b_pcp, t0, t1, rate, bneck = sys.argv[1:]
n, b_pcp = int(n), int(b_pcp)
up, down = (load_stats(f"{work}/{x}.json") for x in ("up", "down"))
d_in, d_out, u_link = port(down, "Ethernet0"), port(down, "Ethernet4"), port(up, "Ethernet8")
tc = lambda p, t, k: p["tc"][t][k]
# The capture: frames per PCP that left the bottleneck.
cap = {}
for f in read_pcap(f"{work}/out.pcap"):
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
