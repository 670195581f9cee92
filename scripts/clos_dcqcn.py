"""dcqcn-incast and victim on the clos-2-4-4 (scripts/fabric.sh clos-2-4-4 dcqcn-incast|victim,
docs/fabric.md "dcqcn-incast and victim", docs/dcqcn.md): RoCEv2 senders (pfcgen), every
switch marking ECN on queue 3, the receivers answering CE with CNPs, in three modes on ONE
bring-up: PFC only (the senders ignore CNPs), PFC + DCQCN, DCQCN without PFC (PFC turned
off live on every switch port). Per mode the switches' counters are read live over DPDK
telemetry (before and after) and every queue watermark is reset before it; with --plot
each switch also writes its timeline (PG OFF states, queue depths, every 5 ms) and
scripts/plot_dcqcn.py --fabric draws the modes from it and the senders' rates.
"""
import json
import os
import subprocess
import sys
import time

import clos
import clos_scenarios as sc
import clos_topo as topo

ROCE_PORT = 4791
# DCQCN's time constants slowed by this much (docs/dcqcn.md, "Scaling to this machine's
# slow links"): the paper's 55 us timers become 44 ms, about the feedback delay of this
# fabric (five 5 Mbit/s hops of 1000-byte frames and a marking queue of 2-10 frames).
TIME_SCALE = 800
# The incast senders' rate, as published: 3 Mbit/s of payload (393 frames/s of 1000 B).
INCAST_PPS = sc.PPS
# The victim h12 -> h32: from the incast's pod 1 through the spines into pod 2, sharing
# T1's uplinks, the leaf-spine links and the spine-leaf links with h11's incast flow, but
# not the congested port (it leaves at T3, not T4). With PFC the incast's leaf (congested
# toward T4) pauses its spine links; the victim's frames wait there behind h11's, fill
# the PGs upstream, and PAUSE reaches h12 itself. Its fair rate is its offered rate: it
# fits beside h11's 2.5 Mbit/s share on every link it shares.
VICTIM = ("h12", "h32")
VICTIM_PPS = round(3_000_000 / 8 / sc.PAYLOAD)
WIRE_BITS = (sc.FRAME + 20) * 8
# mode: (PFC on the switches and obeyed by the senders, senders react with DCQCN)
MODES = {"pfc": (True, False), "pfc+dcqcn": (True, True), "dcqcn": (False, True)}
# What a data port can drop (not punts, LLDP or link-local frames).
DATA_DROPS = ("egress_queue_full", "lossless_headroom_full", "lossy_threshold", "mmu_other", "wred")


def jain(xs):
    return (sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))) if any(xs) else 0.0


def incast_queues(clos_t):
    """The egress ports where the incast can congest, (switch, port): h41's ToR's port to
    h41, and the pod-2 leaves' ports to that ToR (ECMP may bring both flows through one
    leaf, whose 5 Mbit/s link to the ToR is then the bottleneck)."""
    h = clos_t.hosts[sc.RECEIVER]
    out = [(h.tor, h.port)]
    for leaf in topo.PODS[1][0]:
        out.append((leaf, clos_t.switches[leaf].port_to(h.tor).name))
    return out


def counters(fab):
    """Per switch, live: PAUSE frames on TC 3 sent and received, lossless drops, data
    drops; per port the watermark of queue 3 (bytes)."""
    tc = topo.LOSSLESS_TC
    out = {}
    for name, sw in fab.t.switches.items():
        r = {"pause_tx": 0, "pause_rx": 0, "lossless_drops": 0, "drops": 0, "q3_watermark": {}}
        for p in sw.ports:
            pfc = fab.telemetry(name, f"/pfcswitch/pfc_counters,{p.name}")[p.name]
            pc = fab.telemetry(name, f"/pfcswitch/port_counters,{p.name}")[p.name]
            q = fab.telemetry(name, f"/pfcswitch/queue_counters,{p.name}")[p.name]
            r["pause_tx"] += pfc[f"tx_pause{tc}"]
            r["pause_rx"] += pfc[f"rx_pause{tc}"]
            r["lossless_drops"] += pc["lossless_drops"]
            r["drops"] += sum(pc.get(f"drop_{k}", 0) for k in DATA_DROPS)
            r["q3_watermark"][p.name] = q[f"UC{tc}_watermark"]
        out[name] = r
    return out


def clear_watermarks(fab):
    for name in fab.t.switches:
        clos.run(clos.BIN, "clear", "--prefix", fab.ns(name), "watermarks")


def roce_incast(fab, duration, pfc, dcqcn, time_scale, tag, conf=None):
    """h11 (id 0) + h31 (id 1) -> h41 and the victim h12 (id 2) -> h32, RoCEv2 (DSCP 3,
    ECT(0)), with DCQCN or not; the receivers (pfcgen on h41 and h32) answer CE with CNPs.
    `conf`: a pfcgen TOML with [dcqcn]/[cnp] tables for every pfcgen. Returns per-flow
    figures from the receivers and senders; the senders' rates every 200 ms in
    TAG-rates-HOST.csv."""
    w = fab.work
    common = ["--dcqcn-time-scale", f"{time_scale:g}"] + (["--config", conf] if conf else [])
    sinks = [sc.start_sink(fab, sc.RECEIVER, ROCE_PORT), sc.start_sink(fab, VICTIM[1], ROCE_PORT)]
    recv = fab.pfcgen(sc.RECEIVER, [], None, f"{w}/{tag}-rx.json", cpu=0, rx_streams=3, extra=["--cnp", *common])
    vrecv = fab.pfcgen(VICTIM[1], [], None, f"{w}/{tag}-vrx.json", cpu=1, rx_streams=3, extra=["--cnp", *common])
    sc.wait_started(recv, f"{w}/{tag}-rx.json.log")
    sc.wait_started(vrecv, f"{w}/{tag}-vrx.json.log")
    roce = ",ecn=ect0,roce=true" + (",dcqcn=true" if dcqcn else "")
    flows = [(h, sc.RECEIVER, i, f"{INCAST_PPS}pps", "49152") for i, h in enumerate(sc.SENDERS)]
    flows.append((VICTIM[0], VICTIM[1], 2, f"{VICTIM_PPS}pps", "49152-49167"))
    senders = [fab.pfcgen(h, [fab.stream(h, d, rate, sc.FRAME, 3, sid=i, dst_port=ROCE_PORT, src_port=sp) + roce],
                          duration, f"{w}/{tag}-{h}.json", cpu=i % 2, pfc=pfc,
                          extra=[*common, "--stats-interval", "200ms", "--rates-csv", f"{w}/{tag}-rates-{h}.csv"])
               for h, d, i, rate, sp in flows]
    sent = {h: sc.wait_json(p, f"{w}/{tag}-{h}.json", duration + 60) for p, (h, *_) in zip(senders, flows)}
    sc.wait_drained(fab, sc.RECEIVER)
    sc.wait_drained(fab, VICTIM[1])
    for r in (recv, vrecv):
        sc.stop_receiver(r)
    for k in sinks:
        k.kill()
    got = {}
    for path in (f"{tag}-rx.json", f"{tag}-vrx.json"):
        with open(f"{w}/{path}") as f:
            got.update({r["id"]: r for r in json.load(f)["received"]})
    out = {}
    for h, d, i, rate, _ in flows:
        st, r = sent[h]["streams"][0], got.get(i, {})
        out[f"{h}>{d}"] = {
            "sent": st["tx_packets"], "received": r.get("unique", 0), "lost": st["tx_packets"] - r.get("unique", 0),
            "rx_bps": round(r.get("rx_wire_bps", 0.0)), "ce": r.get("ecn_ce", 0), "cnp_sent": r.get("cnp_sent", 0),
            "cnp_rx": st.get("cnp_rx", 0), "pause_frames_rx": sent[h]["totals"]["pause_frames_rx"],
            "delay_p99_ms": r.get("latency", {}).get("p99_ns", 0) / 1e6,
            "dcqcn_min_rate_bps": round(st["dcqcn"]["min_rate_bps"]) if "dcqcn" in st else None,
        }
    return out


def one_mode(fab, mode, duration, scale, conf, where=None):
    """One mode on the running fabric: its figures (the issue's M), and the victim's share.
    `where`: the bottleneck (switch, port) found by an earlier mode (one bring-up: the
    same ECMP paths), else the incast queue that filled most in this one."""
    pfc, dcqcn = MODES[mode]
    if fab.pfc != pfc:
        fab.set_pfc(pfc)
    clear_watermarks(fab)
    before = counters(fab)
    t0 = time.time()
    flows = roce_incast(fab, duration, pfc, dcqcn, scale, mode, conf)
    fab.mode_windows[mode] = (t0, time.time())
    after = counters(fab)
    rows = {n: {k: after[n][k] - before[n][k] for k in ("pause_tx", "pause_rx", "lossless_drops", "drops")}
            for n in after}
    # The bottleneck: the incast queue that filled most; and the fullest queue 3 anywhere.
    tor, port = where or max(incast_queues(fab.t), key=lambda q: after[q[0]]["q3_watermark"][q[1]])
    peak = max(((n, p, b) for n, r in after.items() for p, b in r["q3_watermark"].items()), key=lambda x: x[2])
    incast = [flows[f"{h}>{sc.RECEIVER}"] for h in sc.SENDERS]
    rates = [f["rx_bps"] for f in incast]
    v = flows[f"{VICTIM[0]}>{VICTIM[1]}"]
    m = {
        "pause_frames": sum(r["pause_tx"] for r in rows.values()),
        "utilization": round(sum(rates) / topo.LINK_BPS, 3),
        "jain": round(jain(rates), 3),
        "lossless_drops": sum(r["lossless_drops"] for r in rows.values()),
        "drops": sum(r["drops"] for r in rows.values()),
        "delay_p99_ms": round(max(f["delay_p99_ms"] for f in incast), 1),
        "cnp_sent": sum(f["cnp_sent"] for f in flows.values()),
        "lost": sum(f["lost"] for f in flows.values()),
        "queue_watermark_bytes": after[tor]["q3_watermark"][port],
        "bottleneck": f"{tor} {port}",
        "queue_watermark_peak": {"switch": peak[0], "port": peak[1], "bytes": peak[2]},
        "pause_by_switch": {n: r["pause_tx"] for n, r in rows.items() if r["pause_tx"]},
        "flows": flows,
    }
    return m, {"share": round(v["rx_bps"] / (VICTIM_PPS * WIRE_BITS), 3)}


def dcqcn_incast(args, modes=tuple(MODES)):
    if args.dataplane != "pfcswitch":
        raise SystemExit("dcqcn-incast needs pfcswitch (ECN marking, PFC)")
    duration = args.duration or 20
    scale = args.dcqcn_time_scale or TIME_SCALE
    conf = os.path.abspath(args.dcqcn_config) if args.dcqcn_config else None
    results, victim = {}, {}
    with sc.fabric(args, True, timeline=bool(args.plot), ecn=True) as fab:
        fab.mode_windows = {}
        for mode in modes:
            clos.log(f"{mode}: {duration:g} s")
            where = tuple(results[modes[0]]["bottleneck"].split()) if results else None
            results[mode], victim[mode] = one_mode(fab, mode, duration, scale, conf, where)
        if args.plot:
            fab.stop_switches()  # a switch writes the end of its timeline CSV as it stops
            with open(f"{fab.work}/timeline.json", "w") as f:
                json.dump({"modes": fab.mode_windows, "started": fab.started,
                           "queues": [f"{n} {p}" for n, p in incast_queues(fab.t)]}, f)
            plot(fab.work, modes, args.plot, duration, scale)
    print(f"dcqcn-incast on {topo.NAME}: RoCEv2 {' + '.join(sc.SENDERS)} -> {sc.RECEIVER} ({INCAST_PPS} frames/s of "
          f"{sc.FRAME} B each) and the victim {VICTIM[0]} -> {VICTIM[1]} ({VICTIM_PPS} frames/s), {duration:g} s per "
          f"mode on one bring-up, links 5 Mbit/s, ECN Kmin/Kmax/Pmax {topo.ECN_KMIN}/{topo.ECN_KMAX} B/{topo.ECN_PMAX} %,"
          f" DCQCN time scale {scale:g}{', ' + args.dcqcn_config if conf else ''}")
    print(f"{'mode':<10} {'PAUSE':>6} {'util':>6} {'Jain':>6} {'lossless drops':>15} {'drops':>6} {'lost':>6}"
          f" {'p99 ms':>8} {'CNPs':>6} {'wm B':>7} {'victim':>7}  flows (received Mbit/s)")
    for mode, m in results.items():
        fl = ", ".join(f"{k} {f['rx_bps'] / 1e6:.2f}" for k, f in m["flows"].items())
        print(f"{mode:<10} {m['pause_frames']:>6} {m['utilization']:>6.3f} {m['jain']:>6.3f} {m['lossless_drops']:>15}"
              f" {m['drops']:>6} {m['lost']:>6} {m['delay_p99_ms']:>8.1f} {m['cnp_sent']:>6}"
              f" {m['queue_watermark_bytes']:>7} {victim[mode]['share']:>7.3f}  {fl}")
    print("wm B: the watermark of queue 3 where the incast met (" + ", ".join(f"{mode} {m['bottleneck']}" for mode, m in
          results.items()) + "), reset before each mode; the highest of any queue 3: " + ", ".join(
              f"{mode} {m['queue_watermark_peak']['bytes']} B at {m['queue_watermark_peak']['switch']} "
              f"{m['queue_watermark_peak']['port']}" for mode, m in results.items()))
    return {"scenario": "dcqcn-incast", "topology": topo.NAME, "duration_s": duration, "time_scale": scale,
            "dcqcn_config": args.dcqcn_config, "modes": results, "victim": victim}


def victim_only(args):
    out = dcqcn_incast(args, modes=("pfc", "pfc+dcqcn"))
    out["scenario"] = "victim"
    return out


def plot(work, modes, out_png, duration, scale):
    cmd = [sys.executable, os.path.join(clos.ROOT, "scripts", "plot_dcqcn.py"), "--fabric", work, out_png,
           "--modes", ",".join(modes), "--title",
           f"{topo.NAME} RoCEv2 incast h11 + h31 -> h41 and victim {VICTIM[0]} -> {VICTIM[1]}, 5 Mbit/s links, {duration:g} s per mode,"
           f" DCQCN time scale {scale:g}"]
    subprocess.run(cmd, check=True)
