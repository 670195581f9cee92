#!/usr/bin/env python3
"""Scenarios on the routed leaf-spine clos-2-4-4 (scripts/fabric.sh clos-2-4-4 SCENARIO):

    scripts/fabric.sh clos-2-4-4 incast   [--pfc on|off|both] [--duration 60] [--plot OUT.png]
    scripts/fabric.sh clos-2-4-4 latency  [--duration 20]
    scripts/fabric.sh clos-2-4-4 failover [--duration 30]
    scripts/fabric.sh clos-2-4-4 link-pull [--runs 3]   # best with --no-bfd
    scripts/fabric.sh clos-2-4-4 ecmp
    scripts/fabric.sh clos-2-4-4 dcqcn-incast [--duration 20] [--dcqcn-time-scale S] [--dcqcn-config F] [--plot OUT.png]
    scripts/fabric.sh clos-2-4-4 victim       [--duration 20] [--plot OUT.png]
    scripts/fabric.sh clos-2-4-4 all      [--duration 20]   # what tests/fabric.rs runs
    scripts/fabric.sh clos-2-4-4 down     # remove what a killed run left behind
    common: [--dataplane pfcswitch|kernel] [--config-db] [--no-bfd] [--keep]

incast    as published: h11 + h31 -> h41, 3 Mbit/s of UDP each (393 datagrams/s of 954 bytes
          of payload, 1000-byte frames) into h41's 5 Mbit/s link. PFC on: the senders are
          pfcgen on the hosts' veths, obeying the ToRs' PAUSE; PFC off: every switch has
          pfc_enable = [] and the senders are iperf3. Loss per flow, which switch congested
          (figure 8), each switch's PAUSE and drops, each switch's CPU share idle and under
          the incast; --plot draws each switch's PG OFF intervals on one time axis.
latency   the same incast three times on one fabric (PFC on): lossless UDP (pfcgen, DSCP 3),
          plain UDP in a class without PFC (iperf3, DSCP 0), TCP (iperf3, DSCP 0): mean and
          p99 one-way delay of each (figure 9), all measured the same way: a packet's
          capture time at h41 minus its capture time where it entered the fabric (the
          sender's ToR port), both kernel receive timestamps of one clock.
failover  under the lossless incast, the spine link carrying h11's flow is pulled: its
          spine-side veth is set down, so both switches see the link go down (the peer's
          veth loses carrier). BGP withdraws, ECMP moves the flow; outage (the longest gap
          between h11's datagrams at h41), route convergence, and what was lost.
link-pull a probe flow h11 -> h41 (a frame every 2.5 ms, no congestion); the pod-1 leaf ->
          spine link carrying it is pulled --runs times (put back in between, BGP and FIBs
          back to two paths): per pull, when the leaf saw the link down, when the flow
          reached the other spine, its longest gap at h41, when the leaf's kernel route lost
          the path. With --no-bfd this is the dataplane's and the representor's doing.
ecmp      64 UDP flows (h11, h12 -> h41, h42, 16 source ports each) captured on every link
          they may take: per-link packet counts, and that no flow is split.
dcqcn-incast  the incast with RoCEv2 senders (pfcgen, DSCP 3, ECT(0)), every switch marking
          ECN on queue 3 (DCQCN-style RED), the receivers answering CE with CNPs, in three
          modes on one bring-up: PFC only (the senders ignore CNPs), PFC + DCQCN, DCQCN
          without PFC (PFC turned off live). Beside it a victim flow h12 -> h32 (16 source
          ports) that shares its links through the spines with h11's flow but not the
          congested port. Per
          mode: PAUSE frames (all switches), bottleneck utilisation, Jain's fairness,
          lossless drops, one-way delay p99 (pfcgen's TX stamp to the receiver), CNPs, the
          watermark of the bottleneck's queue 3; the victim's share of its offered rate
          (scripts/clos_dcqcn.py, docs/dcqcn.md).
victim    dcqcn-incast's modes PFC only and PFC + DCQCN.
all       on one bring-up, in sequence: ecmp; the incast with PFC (pfcgen) for --duration s
          (its excess past what every buffer on its paths could hold); the incast in a class
          without PFC (pfcgen, DSCP 0) for 4 s; the failover for 12 s. tests/fabric.rs.

Each prints a table and one JSON line, and tears everything down, Ctrl-C included.
"""
import argparse
import contextlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import clos
import clos_topo as topo

ROOT = clos.ROOT
log = clos.log
# As published: 3 Mbit/s of UDP payload per sender. iperf3 -b counts payload bits; 954 bytes
# of payload make a 1000-byte frame (with FCS), which pfcgen sends at the same 393 frames/s.
PAYLOAD = 954
FRAME = 1000
PPS = round(3_000_000 / 8 / PAYLOAD)
SENDERS = ("h11", "h31")
RECEIVER = "h41"
UDP_PORT = 5001


@contextlib.contextmanager
def fabric(args, pfc=True, timeline=False, ecn=False, kernel_nhg=True):
    """A fabric brought up for one part of a scenario and torn down after it."""
    work = tempfile.mkdtemp(prefix="pfcsw-clos-")
    fab = clos.Fabric(work, args.dataplane, pfc, timeline, ecn, config_db=args.config_db,
                      bfd=not getattr(args, "no_bfd", False), kernel_nhg=kernel_nhg)
    try:
        fab.up()
        yield fab
    finally:
        fab.down()
        if args.keep:
            log(f"run directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def wait_json(p, path, timeout):
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)
    with open(path) as f:
        return json.load(f)


def wait_drained(fab, host, quiet=1.5, limit=20.0):
    """Until `host`'s eth0 has received nothing for `quiet` seconds (at most `limit`): once
    the senders stop, the fabric's buffers still hold up to ~2 MB of paused lossless frames,
    3 s and more at 5 Mbit/s on a loaded machine; a receiver stopped before they arrive
    counts them lost (a failover run once reported 76 lost of which ~34 were still queued)."""
    def rx():
        r = clos.run(*clos.nsx(fab.ns(host), "cat", "/sys/class/net/eth0/statistics/rx_packets"), check=False)
        return r.stdout.strip()
    last, since, end = rx(), time.monotonic(), time.monotonic() + limit
    while time.monotonic() < end and time.monotonic() - since < quiet:
        time.sleep(0.25)
        now = rx()
        if now != last:
            last, since = now, time.monotonic()


def stop_receiver(p):
    """pfcgen as a pure receiver: SIGINT ends receiving, it drains (--drain) and exits."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    p.wait(timeout=30)


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))]


# ---- pcap: classic format, µs timestamps (dumpcap -P)
def pcap_packets(path):
    """(time s, frame) of every packet in a classic little-endian pcap."""
    with open(path, "rb") as f:
        b = f.read()
    nano = b[:4] == b"\x4d\x3c\xb2\xa1"
    off, out = 24, []
    while off + 16 <= len(b):
        sec, frac, incl = struct.unpack("<III", b[off:off + 12])
        out.append((sec + frac / (1e9 if nano else 1e6), b[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def ip_key(frame):
    """What identifies an IPv4 packet at every hop (not the MACs, TTL or header checksum):
    addresses, protocol, the L4 header and the first 16 bytes of payload. Also the flow
    (source, destination, source port, destination port) it belongs to. None if not IPv4."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None, None
    ip = frame[14:]
    ihl = (ip[0] & 0xF) * 4
    proto = ip[9]
    l4 = ip[ihl:]
    hdr = 8 if proto == 17 else ((l4[12] >> 4) * 4 if proto == 6 and len(l4) > 12 else 8)
    key = ip[12:20] + bytes([proto]) + l4[:hdr + 16]
    flow = (ip[12:16], ip[16:20]) + (struct.unpack("!HH", l4[:4]) if len(l4) >= 4 else (0, 0))
    return key, flow


def one_way_delays(entries, exits):
    """Per flow source address: the delay of every packet seen at one of the `entries`
    pcaps and at the `exits` pcap (first sighting at each)."""
    first = {}
    for path in entries:
        for t, fr in pcap_packets(path):
            k, _ = ip_key(fr)
            if k is not None and k not in first:
                first[k] = t
    delays, seen = {}, set()
    for t, fr in pcap_packets(exits):
        k, flow = ip_key(fr)
        if k is None or k in seen or k not in first:
            continue
        seen.add(k)
        delays.setdefault(".".join(map(str, flow[0])), []).append(t - first[k])
    return delays


# ---- switches' counters
def switch_rows(stats):
    """Per pfcswitch: PFC frames on TC 3 sent/received, lossless drops, link_down drops,
    routed packets, conservation."""
    rows = {}
    for name, j in stats.items():
        r = {"pause_tx": 0, "pause_rx": 0, "lossless_drops": 0, "drops": 0, "link_down": 0,
             "conserved": bool(j["conservation"]["ok"])}
        for p in j["ports"]:
            r["pause_tx"] += p["pfc"]["tx_pause"][topo.LOSSLESS_TC]
            r["pause_rx"] += p["pfc"]["rx_pause"][topo.LOSSLESS_TC]
            r["lossless_drops"] += p.get("lossless_drops", 0)
            # Every drop of a data port (without PFC the class is lossy: its drops are
            # lossy_threshold, not lossless_drops); punts the limiter refused are not data.
            r["drops"] += p.get("drops_total", 0) - p["drops"].get("punt_rate_limited", 0)
            r["link_down"] += p["drops"].get("link_down", 0)
        rows[name] = r
    return rows


def print_switch_table(rows, cpu=None):
    head = (f"{'switch':<7} {'PAUSE tx':>9} {'PAUSE rx':>9} {'lossless drops':>15} {'all drops':>10} {'link_down':>10}"
            f" {'conserved':>10}")
    if cpu:
        head += f" {'CPU idle %':>11} {'CPU incast %':>13}"
    print(head)
    for n, r in rows.items():
        line = (f"{n:<7} {r['pause_tx']:>9} {r['pause_rx']:>9} {r['lossless_drops']:>15} {r['drops']:>10} {r['link_down']:>10} "
                f"{str(r['conserved']):>10}")
        if cpu:
            line += f" {cpu['idle'].get(n, 0):>11} {cpu['incast'].get(n, 0):>13}"
        print(line)


def pause_roots(rows):
    """Where congestion began: switches that sent PAUSE and received none."""
    return [n for n, r in rows.items() if r["pause_tx"] > 0 and r["pause_rx"] == 0]


# ---- incast
def start_sink(fab, host=RECEIVER, port=UDP_PORT):
    """h41 answers nothing: a UDP socket drains the datagrams (no ICMP unreachable back)."""
    return fab.spawn(clos.nsx(fab.ns(host), "python3", os.path.join(ROOT, "scripts", "host_traffic.py"),
                              "udp-recv", str(port), "36000"))


def pfcgen_incast(fab, duration, dscp=3, cpu_window=None, pfc=True):
    """h11 (stream id 0) and h31 (id 1) -> h41 with pfcgen (obeying PFC on priority 3, or
    not: pfc=False); the receiver is pfcgen on h41. Returns per-flow results and the CPU
    shares (idle before, and mid-incast)."""
    w = fab.work
    sink = start_sink(fab)
    recv = fab.pfcgen(RECEIVER, [], None, f"{w}/rx.json", cpu=0, rx_streams=2)
    wait_started(recv, f"{w}/rx.json.log")
    cpu = {}
    if cpu_window:
        a = fab.cpu_ticks()
        time.sleep(cpu_window)
        cpu["idle"] = clos.cpu_share(a, fab.cpu_ticks(), cpu_window)
    senders = [fab.pfcgen(h, [fab.stream(h, RECEIVER, f"{PPS}pps", FRAME, dscp, sid=i, dst_port=UDP_PORT)],
                          duration, f"{w}/{h}.json", cpu=i % 2, pfc=pfc) for i, h in enumerate(SENDERS)]
    if cpu_window:
        time.sleep(duration / 4)
        a, t0 = fab.cpu_ticks(), time.monotonic()
        time.sleep(duration / 2)
        cpu["incast"] = clos.cpu_share(a, fab.cpu_ticks(), time.monotonic() - t0)
    sent = [wait_json(s, f"{w}/{h}.json", duration + 60) for s, h in zip(senders, SENDERS)]
    wait_drained(fab, RECEIVER)
    stop_receiver(recv)
    sink.kill()
    with open(f"{w}/rx.json") as f:
        got = {r["id"]: r for r in json.load(f)["received"]}
    flows = {}
    for i, (h, s) in enumerate(zip(SENDERS, sent)):
        st = s["streams"][0]
        r = got.get(i, {})
        flows[f"{h}>{RECEIVER}"] = {
            "sent": st["tx_packets"], "received": r.get("unique", 0), "lost": st["tx_packets"] - r.get("unique", 0),
            "pfc_stops": st["pfc_stops"], "pause_frames_rx": s["totals"]["pause_frames_rx"],
            "tx_bps_after_first_stop": round(st.get("tx_wire_bps_after_first_stop", st["tx_wire_bps"])),
            "latency_mean_ms": r.get("latency", {}).get("mean_ns", 0) / 1e6,
        }
    return flows, cpu


def wait_started(p, logpath, needle="generating", timeout=30):
    ok, text = clos.wait_log(p, logpath, needle, timeout)
    if not ok:
        raise SystemExit(f"{' '.join(p.args)} did not start:\n{text[-2000:]}")


def iperf3_incast(fab, duration, dscp=3, udp=True):
    """h11 and h31 -> h41 with iperf3 (UDP at 3 Mbit/s of payload, or TCP), TOS = DSCP << 2.
    Per-flow results from the clients' JSON (UDP: the server's counts)."""
    w = fab.work
    servers = [fab.spawn(clos.nsx(fab.ns(RECEIVER), "iperf3", "-s", "-1", "-p", str(5201 + i), "-J"),
                         f"{w}/srv{i}.json") for i in range(len(SENDERS))]
    time.sleep(1.0)
    clients = []
    for i, h in enumerate(SENDERS):
        cmd = ["iperf3", "-c", fab.t.hosts[RECEIVER].ip, "-p", str(5201 + i), "-t", str(duration), "-S",
               str(dscp << 2), "-J"]
        if udp:
            cmd += ["-u", "-b", "3M", "-l", str(PAYLOAD)]
        clients.append(fab.spawn(clos.nsx(fab.ns(h), *cmd), f"{w}/{h}-iperf3.json"))
    flows = {}
    for i, (h, c) in enumerate(zip(SENDERS, clients)):
        c.wait(timeout=duration + 60)
        servers[i].wait(timeout=30)
        with open(f"{w}/{h}-iperf3.json") as f:
            j = json.load(f)
        if "error" in j:
            raise SystemExit(f"iperf3 {h}: {j['error']}")
        s = j["end"]["sum"] if udp else j["end"]["sum_received"]
        if udp:
            flows[f"{h}>{RECEIVER}"] = {"sent": s["packets"], "received": s["packets"] - s["lost_packets"],
                                        "lost": s["lost_packets"]}
        else:
            flows[f"{h}>{RECEIVER}"] = {"bytes": s["bytes"], "goodput_bps": round(s["bits_per_second"]),
                                        "retransmits": j["end"]["sum_sent"].get("retransmits", 0)}
    return flows


def incast(args):
    modes = {"both": [True, False], "on": [True], "off": [False]}[args.pfc]
    if args.dataplane == "kernel":
        modes = [False]
        log("kernel routers send no PFC: incast runs without PFC only (iperf3 senders)")
    results, switches = {}, {}
    for pfc in modes:
        with fabric(args, pfc, timeline=pfc and bool(args.plot)) as fab:
            if pfc:
                flows, cpu = pfcgen_incast(fab, args.duration, cpu_window=5.0)
            else:
                flows, cpu = iperf3_incast(fab, args.duration), {}
            key = "on" if pfc else "off"
            if args.dataplane == "pfcswitch":
                fab.stop_switches()
                rows = switch_rows(fab.switch_stats())
                where = (pause_roots(rows) if pfc else [n for n, r in rows.items() if r["drops"]])
                switches[key] = {"rows": rows, "cpu": cpu, "congested": where}
                if pfc and args.plot:
                    plot(fab, args.plot, f"{topo.NAME} incast, PFC on: h11 + h31 -> h41 at 3 Mbit/s each, "
                                         f"5 Mbit/s links, {args.duration:g} s")
            else:
                drops = fab.tbf_drops()
                where = {n: {p: d for p, d in ports.items() if d} for n, ports in drops.items()}
                switches[key] = {"tbf_drops": {n: d for n, d in where.items() if d},
                                 "congested": [n for n, d in where.items() if d]}
            results[key] = flows
    out_cdb = args.config_db and args.dataplane == "pfcswitch"
    print(f"incast on {topo.NAME} ({args.dataplane}{', config_db' if out_cdb else ''}): {' + '.join(SENDERS)} -> {RECEIVER}, 3 Mbit/s of UDP each "
          f"({PPS} datagrams/s, {FRAME}-byte frames) for {args.duration:g} s, every link 5 Mbit/s")
    print(f"{'PFC':<4} {'senders':<16} {'flow':<10} {'sent':>8} {'received':>9} {'lost':>7} {'loss %':>7}"
          f" {'rate after 1st PAUSE':>21}  congested at")
    for key, flows in results.items():
        who = "pfcgen (obeys)" if key == "on" else "iperf3"
        for f, r in flows.items():
            after = f"{r['tx_bps_after_first_stop'] / 1e6:.2f} Mbit/s" if r.get("pfc_stops") else "-"
            print(f"{key:<4} {who:<16} {f:<10} {r['sent']:>8} {r['received']:>9} {r['lost']:>7} "
                  f"{100.0 * r['lost'] / max(r['sent'], 1):>7.2f} {after:>21}  {','.join(switches[key]['congested'])}")
    for key, s in switches.items():
        if "rows" in s:
            print(f"switches, PFC {key}:")
            print_switch_table(s["rows"], s["cpu"] or None)
        else:
            print(f"tbf drops, PFC {key}: {s['tbf_drops']}")
    out = {"scenario": "incast", "topology": topo.NAME, "dataplane": args.dataplane,
           "config": "config_db" if out_cdb else "toml",
           "duration_s": args.duration,
           "flows": results, "congested": {k: s["congested"] for k, s in switches.items()}}
    for k, s in switches.items():
        if "rows" in s:
            out.setdefault("switches", {})[k] = s["rows"]
            if s["cpu"]:
                out["cpu_percent"] = s["cpu"]
    return out


def plot(fab, out_png, title):
    t0 = min(fab.started.values())
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "plot_timeline.py"), "--fabric", out_png]
    cmd += [f"{n}={os.path.join(fab.work, n + '.csv')}@{fab.started[n] - t0:.3f}" for n in fab.t.switches]
    cmd += ["--title", title]
    subprocess.run(cmd, check=True)


# ---- latency
def latency(args):
    rows = {}
    with fabric(args, pfc=True) as fab:
        entries = []
        for h in SENDERS:
            p = fab.t.switches[fab.t.hosts[h].tor].port(fab.t.hosts[h].port)
            entries.append((fab.ns(p.switch), fab.iface(p)))
        bpf = f"dst host {fab.t.hosts[RECEIVER].ip} and (udp or tcp)"
        runs = [("lossless UDP, PFC" if args.dataplane == "pfcswitch" else "UDP (pfcgen)", "pfcgen"),
                ("plain UDP, no PFC", "udp"), ("TCP", "tcp")]
        for label, kind in runs:
            w = os.path.join(fab.work, kind)
            os.makedirs(w)
            caps = [fab.capture(ns, dev, f"{w}/in{i}.pcap", bpf) for i, (ns, dev) in enumerate(entries)]
            caps.append(fab.capture(fab.ns(RECEIVER), "eth0", f"{w}/out.pcap", bpf))
            if kind == "pfcgen":
                flows, _ = pfcgen_incast(fab, args.duration)
            else:
                flows = iperf3_incast(fab, args.duration, dscp=0, udp=kind == "udp")
            for c in caps:
                c.send_signal(signal.SIGINT)
                c.wait(timeout=10)
            d = one_way_delays([f"{w}/in{i}.pcap" for i in range(len(entries))], f"{w}/out.pcap")
            every = [x for xs in d.values() for x in xs]
            rows[kind] = {"label": label, "packets": len(every),
                          "mean_ms": round(1e3 * sum(every) / max(len(every), 1), 3),
                          "p50_ms": round(1e3 * (percentile(every, 50) or 0), 3),
                          "p99_ms": round(1e3 * (percentile(every, 99) or 0), 3),
                          "max_ms": round(1e3 * max(every, default=0), 3), "flows": flows}
            if kind == "pfcgen":
                rows[kind]["pfcgen_mean_ms"] = round(sum(f["latency_mean_ms"] for f in flows.values()) / 2, 3)
    print(f"latency on {topo.NAME} ({args.dataplane}): {' + '.join(SENDERS)} -> {RECEIVER}, {args.duration:g} s each; "
          "one-way delay = capture time at h41 - capture time at the sender's ToR port")
    print(f"{'traffic':<20} {'packets':>8} {'mean ms':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  delivered")
    for r in rows.values():
        fl = r["flows"]
        what = ", ".join(f"{k}: {v['received']}/{v['sent']}" if "sent" in v else f"{k}: {v['goodput_bps'] / 1e6:.2f} Mbit/s"
                         for k, v in fl.items())
        print(f"{r['label']:<20} {r['packets']:>8} {r['mean_ms']:>9} {r['p50_ms']:>8} {r['p99_ms']:>8} "
              f"{r['max_ms']:>8}  {what}")
    return {"scenario": "latency", "topology": topo.NAME, "dataplane": args.dataplane, "duration_s": args.duration,
            "rows": rows}


# ---- failover
def busiest_spine_link(fab, seconds=1.0):
    """The pod-1 leaf -> spine link (as "l2>s1") carrying the most packets now."""
    a = fab.link_counters()
    time.sleep(seconds)
    b = fab.link_counters()
    up = {k: b[k] - a[k] for k in b if k.split(">")[1] in topo.SPINES and k.split(">")[0] in topo.PODS[0][0]}
    return max(up, key=up.get), up


def failover(args):
    with fabric(args, pfc=args.dataplane == "pfcswitch") as fab:
        out = pull_spine_link(fab, args.duration)
        if args.dataplane == "pfcswitch":
            fab.stop_switches()
            stats = fab.switch_stats()
            out["tx_errors"] = dead_link_tx_errors(stats, out["pulled"])
            rows = switch_rows(stats)
            print_switch_table(rows)
            out["switches"] = rows
            out["lossless_drops"] = sum(r["lossless_drops"] for r in rows.values())
            out["link_down"] = sum(r["link_down"] for r in rows.values())
    return out


def dead_link_tx_errors(stats, pulled):
    """Frames the PMD took for the pulled link's two ports but could not hand to the kernel
    (net_af_packet: a sendto() refused once the veth is down leaves that call's frames in
    its ring, counted in `oerrors`): lost on the cut cable like the veths' tx_dropped."""
    total = 0
    for sw, port in ((pulled["spine"], pulled["spine_port"]), (pulled["leaf"], pulled["leaf_port"])):
        for p in stats.get(sw, {}).get("ports", []):
            if p["name"] == port:
                total += p["pmd"]["oerrors"]
    return total


def pull_spine_link(fab, duration):
    """The failover on a fabric that is up: the lossless incast for `duration` s, the spine
    link carrying h11's flow pulled at a third of it. Prints the outage and the flows."""
    w = fab.work
    dst = fab.t.hosts[RECEIVER].ip
    cap = fab.capture(fab.ns(RECEIVER), "eth0", f"{w}/h41.pcap", f"udp and dst host {dst}")
    sink = start_sink(fab)
    recv = fab.pfcgen(RECEIVER, [], None, f"{w}/rx.json", cpu=0, rx_streams=2)
    wait_started(recv, f"{w}/rx.json.log")
    senders = [fab.pfcgen(h, [fab.stream(h, RECEIVER, f"{PPS}pps", FRAME, 3, sid=i, dst_port=UDP_PORT)],
                          None, f"{w}/{h}.json", cpu=i % 2) for i, h in enumerate(SENDERS)]
    # Pull a third into the senders' run, counted from when they generate (an EAL start on
    # two loaded CPUs takes seconds), and stop them two thirds after the pull (SIGINT, not
    # --duration: on loaded CPUs the pull once came after h11's --duration had run out).
    for snd, h in zip(senders, SENDERS):
        wait_started(snd, f"{w}/{h}.json.log")
    time.sleep(duration / 3)
    link, seen = busiest_spine_link(fab)
    leaf, spine = link.split(">")
    sp = fab.t.switches[spine].port_to(leaf)
    before = fab.route_paths(leaf, topo.tor_subnet(4))
    ends = (sp, fab.t.switches[leaf].port(sp.peer_port))
    wire0 = [fab.tx_dropped(p) for p in ends]
    t_pull = time.time()
    clos.run("ip", "-n", fab.ns(spine), "link", "set", fab.iface(sp), "down")
    log(f"failover: pulled {spine} {sp.name} <-> {leaf} {sp.peer_port} (h11's flow was on it: {seen})")
    converged = None
    while time.time() - t_pull < 20:
        if fab.route_paths(leaf, topo.tor_subnet(4)) == before - 1:
            converged = time.time() - t_pull
            break
        time.sleep(0.02)
    time.sleep(max(0.0, 2 * duration / 3 - (time.time() - t_pull)))
    t_end = time.time()
    for snd in senders:
        snd.send_signal(signal.SIGINT)
    sent = [wait_json(s, f"{w}/{h}.json", 30) for s, h in zip(senders, SENDERS)]
    wait_drained(fab, RECEIVER)
    wire = sum(fab.tx_dropped(p) - d for p, d in zip(ends, wire0))
    stop_receiver(recv)
    sink.kill()
    cap.send_signal(signal.SIGINT)
    cap.wait(timeout=10)
    with open(f"{w}/rx.json") as f:
        got = {r["id"]: r for r in json.load(f)["received"]}
    arrivals = {}
    for t, fr in pcap_packets(f"{w}/h41.pcap"):
        _, flow = ip_key(fr)
        if flow:
            arrivals.setdefault(".".join(map(str, flow[0])), []).append(t)
    # The gaps in h11's arrivals from its last one before the pull to its sender's end (less
    # the half second its last frames may still be on their way): a flow that never came
    # back is an outage to the end, not none.
    h11 = arrivals.get(fab.t.hosts["h11"].ip, [])
    after = [t for t in h11 if t > t_pull]
    marks = [max([t for t in h11 if t <= t_pull], default=t_pull)] + after + [max(t_end - 0.2, t_pull)]
    outage, at = max((b - a, a) for a, b in zip(marks, marks[1:]))
    flows = {f"{h}>{RECEIVER}": {"sent": s["streams"][0]["tx_packets"], "received": got.get(i, {}).get("unique", 0),
                                 "pfc_stops": s["streams"][0]["pfc_stops"]}
             for i, (h, s) in enumerate(zip(SENDERS, sent))}
    for f in flows.values():
        f["lost"] = f["sent"] - f["received"]
    print(f"failover on {topo.NAME} ({fab.dataplane}): lossless incast {' + '.join(SENDERS)} -> {RECEIVER} for "
          f"{duration:g} s; at {duration / 3:.0f} s the link {spine} {sp.name} <-> {leaf} {sp.peer_port} "
          f"carrying h11's flow is pulled ({spine}'s veth end set down, {leaf}'s loses carrier)")
    print(f"route to {topo.tor_subnet(4)} on {leaf}: {before} paths -> {before - 1} "
          f"{'after %.0f ms' % (converged * 1e3) if converged is not None else 'NOT within 20 s'}; "
          f"h11's flow: longest gap at h41 {outage * 1e3:.0f} ms, starting {1e3 * (at - t_pull):+.0f} ms from the pull; "
          f"{wire} frames sent into the cut link before the switches saw it fall (veth tx_dropped)")
    print(f"{'flow':<10} {'sent':>8} {'received':>9} {'lost':>6} {'PFC stops':>10}")
    for k, f in flows.items():
        print(f"{k:<10} {f['sent']:>8} {f['received']:>9} {f['lost']:>6} {f['pfc_stops']:>10}")
    return {"scenario": "failover", "topology": topo.NAME, "dataplane": fab.dataplane, "duration_s": duration,
            "pulled": {"spine": spine, "spine_port": sp.name, "leaf": leaf, "leaf_port": sp.peer_port},
            "route_convergence_ms": round(converged * 1e3) if converged is not None else None,
            "outage_ms": round(outage * 1e3), "wire_dropped": wire, "h11_arrivals_after_pull": len(after),
            "flows": flows}


# ---- link-pull: how fast the dataplane leaves a dead link, without BFD
# h11's probe flow: a 200-byte frame every 2.5 ms (0.64 Mbit/s, far below the 5 Mbit/s
# links, so no queue and no PAUSE shapes its gaps): a 50 ms outage is 20 frames missing.
PROBE_PPS = 400
PROBE_FRAME = 200
PULLED_S = 2.0          # how long a link stays pulled


def link_pull(args):
    # Links come back here: zebra without kernel nexthop groups (clos_topo.zebra_conf).
    with fabric(args, pfc=True, kernel_nhg=False) as fab:
        out = pull_runs(fab, args.runs)
        fab.stop_switches()
        rows = switch_rows(fab.switch_stats())
    print_switch_table(rows)
    out.update({"switches": rows, "lossless_drops": sum(r["lossless_drops"] for r in rows.values()),
                "link_down": sum(r["link_down"] for r in rows.values())})
    return out


def wait_paths(fab, leaf, n, limit):
    """Until `leaf`'s kernel route and its dataplane FIB both have `n` paths to T4's /24
    (at most `limit` s); the seconds it took, or None (and what was there, logged)."""
    t0 = time.time()
    while True:
        kernel, fib = fab.route_paths(leaf, topo.tor_subnet(4)), fab.fib_paths_of(leaf)["t4"]
        if kernel == n and fib == n:
            return time.time() - t0
        if time.time() - t0 > limit:
            log(f"{leaf}: {kernel} paths to {topo.tor_subnet(4)} in the kernel, {fib} in the FIB, not {n}, "
                f"after {limit} s")
            return None
        time.sleep(0.1)


def pull_runs(fab, runs):
    """`runs` times on a fabric that is up, h11 -> h41 probe flow running: find the pod-1
    leaf -> spine link carrying it, wait until the leaf has both paths (kernel and FIB),
    pull it (the spine's veth end set down) for PULLED_S, put it back and wait until BGP
    and the leaf's FIB have both paths again. Per pull (one clock: the captures' kernel
    stamps and this process's time.time()): from the last probe frame the dead link
    delivered to its spine to the first the other spine got from that leaf (`moved_ms`:
    the leaf's own time to leave the dead member, both ends captured where they are
    received), the longest gap in the flow at h41 around the pull (`outage_ms`), and when
    the leaf's kernel route lost the dead path (`route_ms`: the representor went down, FRR
    withdrew). Times from the pull (`first_on_other_ms`, `route_ms`) hold the start of the
    `ip` command too, tens of milliseconds and more on a loaded machine. (The switches'
    log lines are no clock here: their I/O thread runs at nice 19 and a loaded machine
    writes them seconds late.)"""
    w = fab.work
    src = fab.t.hosts["h11"].ip
    bpf = f"udp and src host {src}"
    caps = [fab.capture(fab.ns(RECEIVER), "eth0", f"{w}/h41.pcap", bpf)]
    # The receiving end of each pod-1 leaf -> spine link (a tap on the sending end would
    # miss frames af_packet sends past the qdisc).
    for leaf in topo.PODS[0][0]:
        for spine in topo.SPINES:
            p = fab.t.switches[spine].port_to(leaf)
            caps.append(fab.capture(fab.ns(spine), fab.iface(p), f"{w}/{leaf}-{spine}.pcap", bpf))
    sink = start_sink(fab)
    sender = fab.pfcgen("h11", [fab.stream("h11", RECEIVER, f"{PROBE_PPS}pps", PROBE_FRAME, 0, dst_port=UDP_PORT)],
                        None, f"{w}/h11.json", cpu=0)
    wait_started(sender, f"{w}/h11.json.log")
    time.sleep(1.0)
    pulls = []
    for i in range(runs):
        link, seen = busiest_spine_link(fab)
        leaf, spine = link.split(">")
        if wait_paths(fab, leaf, 2, 60) is None:
            raise SystemExit(f"link-pull {i + 1}: {leaf} has not two paths to {topo.tor_subnet(4)} to start with")
        sp = fab.t.switches[spine].port_to(leaf)
        leaf_port = sp.peer_port
        other = next(s for s in topo.SPINES if s != spine)
        t_pull = time.time()
        clos.run("ip", "-n", fab.ns(spine), "link", "set", fab.iface(sp), "down")
        route = None
        while time.time() - t_pull < PULLED_S:
            if route is None and fab.route_paths(leaf, topo.tor_subnet(4)) == 1:
                route = time.time() - t_pull
            time.sleep(0.005)
        t_up = time.time()
        clos.run("ip", "-n", fab.ns(spine), "link", "set", fab.iface(sp), "up")
        back = wait_paths(fab, leaf, 2, 60)
        log(f"link-pull {i + 1}/{runs}: {spine} {sp.name} <-> {leaf} {leaf_port} (h11's flow on it: {seen}); "
            f"route down to 1 path after {route} s, both paths back {back} s after the link")
        pulls.append({"leaf": leaf, "leaf_port": leaf_port, "spine": spine, "spine_port": sp.name, "other": other,
                      "t_pull": t_pull, "t_up": t_up, "route_s": route, "back_s": back})
        time.sleep(1.0)
    sender.send_signal(signal.SIGINT)
    sent = wait_json(sender, f"{w}/h11.json", 30)
    time.sleep(1.0)
    sink.kill()
    for c in caps:
        c.send_signal(signal.SIGINT)
        c.wait(timeout=10)
    at_h41 = [t for t, _ in pcap_packets(f"{w}/h41.pcap")]
    rows = []
    for p in pulls:
        t0 = p["t_pull"]
        on_other = [t for t, _ in pcap_packets(f"{w}/{p['leaf']}-{p['other']}.pcap") if t0 < t < p["t_up"]]
        first_other = on_other[0] if on_other else None
        on_dead = [t for t, _ in pcap_packets(f"{w}/{p['leaf']}-{p['spine']}.pcap")
                   if t0 - 1 < t < (first_other or p["t_up"])]
        window = [t for t in at_h41 if t0 < t < p["t_up"]]
        marks = [max([t for t in at_h41 if t <= t0], default=t0)] + window + [p["t_up"]]
        outage = max(b - a for a, b in zip(marks, marks[1:]))
        ms = (lambda x: None if x is None else round(x * 1e3, 1))
        rows.append({"pulled": f"{p['spine']} {p['spine_port']} <-> {p['leaf']} {p['leaf_port']}",
                     "moved_ms": ms(first_other - on_dead[-1] if first_other and on_dead else None),
                     "first_on_other_ms": ms(first_other - t0 if first_other else None),
                     "outage_ms": ms(outage), "route_ms": ms(p["route_s"]),
                     "both_paths_back_s": None if p["back_s"] is None else round(p["back_s"], 1)})
    print(f"link-pull on {topo.NAME} ({fab.dataplane}, BFD {'on' if fab.bfd else 'off'}): h11 -> h41 at "
          f"{PROBE_PPS} frames/s; the pod-1 leaf -> spine link carrying it pulled {runs} times (ms; moved: last frame on "
          f"the dead link to first on the other; outage: longest gap at h41; other, route: from the pull)")
    print(f"{'link pulled':<36} {'moved':>7} {'outage':>7} {'other':>7} {'route':>7} {'back (s)':>9}")
    for r in rows:
        print(f"{r['pulled']:<36} {r['moved_ms']!s:>7} {r['outage_ms']!s:>7} {r['first_on_other_ms']!s:>7} "
              f"{r['route_ms']!s:>7} {r['both_paths_back_s']!s:>9}")
    tx = sent["streams"][0]["tx_packets"]
    print(f"h11 sent {tx}, h41 received {len(at_h41)}")
    return {"scenario": "link-pull", "topology": topo.NAME, "dataplane": fab.dataplane, "bfd": fab.bfd,
            "probe_pps": PROBE_PPS, "pulls": rows, "sent": tx, "received": len(at_h41)}


# ---- ecmp
def ecmp(args):
    with fabric(args, pfc=args.dataplane == "pfcswitch") as fab:
        return spread(fab)


def spread(fab):
    """64 flows on a fabric that is up: h11 and h12 each send 16 source ports to h41 and
    to h42 (20 frames each)."""
    per_flow, ports = 20, 16
    w = fab.work
    fib_ok, fib = fab.fib_converged() if fab.dataplane == "pfcswitch" else (None, {})
    points = []   # (link "a>b", namespace, interface): the receiving end of each hop
    for leaf in topo.PODS[0][0]:
        points.append((f"t1>{leaf}", fab.t.switches[leaf].port_to("t1")))
        for spine in topo.SPINES:
            points.append((f"{leaf}>{spine}", fab.t.switches[spine].port_to(leaf)))
    for leaf in topo.PODS[1][0]:
        for spine in topo.SPINES:
            points.append((f"{spine}>{leaf}", fab.t.switches[leaf].port_to(spine)))
        points.append((f"{leaf}>t4", fab.t.switches["t4"].port_to(leaf)))
    caps = [fab.capture(fab.ns(p.switch), fab.iface(p), f"{w}/{name}.pcap", "udp and dst portrange 7000-7001")
            for name, p in points]
    senders = []
    for i, h in enumerate(("h11", "h12")):
        streams = [fab.stream(h, d, "320pps", 128, 3, sid=2 * i + j, dst_port=7000 + j,
                              src_port=f"49152-{49152 + ports - 1}", name=f"{h}-{d}", count=per_flow * ports)
                   for j, d in enumerate(("h41", "h42"))]
        senders.append(fab.pfcgen(h, streams, None, f"{w}/{h}.json", cpu=i % 2))
    for s, h in zip(senders, ("h11", "h12")):
        wait_json(s, f"{w}/{h}.json", 60)
    time.sleep(1.0)
    for c in caps:
        c.send_signal(signal.SIGINT)
        c.wait(timeout=10)
    per_link, flow_links = {}, {}
    for name, _ in points:
        n = 0
        for _, fr in pcap_packets(f"{w}/{name}.pcap"):
            _, flow = ip_key(fr)
            if flow:
                n += 1
                flow_links.setdefault(flow, {}).setdefault(name, 0)
                flow_links[flow][name] += 1
        per_link[name] = n
    hops = {"tor>leaf": [n for n, _ in points if n.startswith("t1>")],
            "leaf>spine": [n for n, _ in points if n.split(">")[1] in topo.SPINES],
            "spine>leaf": [n for n, _ in points if n.split(">")[0] in topo.SPINES],
            "leaf>tor": [n for n, _ in points if n.endswith(">t4")]}
    split = 0
    for flow, links in flow_links.items():
        for names in hops.values():
            used = [n for n in names if links.get(n)]
            if len(used) != 1 or links[used[0]] != per_flow:
                split += 1
                break
    print(f"ecmp on {topo.NAME} ({fab.dataplane}): {len(flow_links)} UDP flows h11, h12 -> h41, h42 "
          f"({ports} source ports per pair, {per_flow} frames each), packets seen per link:")
    for hop, names in hops.items():
        print(f"  {hop:<11} " + "  ".join(f"{n} {per_link[n]}" for n in names))
    print(f"flows on exactly one link per hop with all their {per_flow} frames: {len(flow_links) - split} of "
          f"{len(flow_links)}")
    if fib:
        print("next hops in each switch's FIB (from BGP via the kernel) to the ToRs' /24s: "
              + "  ".join(f"{sw} " + ",".join(f"{t}:{n}" for t, n in ts.items()) for sw, ts in fib.items()))
    return {"scenario": "ecmp", "topology": topo.NAME, "dataplane": fab.dataplane, "fib_converged": fib_ok,
            "host_pairs_reachable": fab.reachable_pairs,
            "fib_paths": fib, "flows": len(flow_links),
            "frames_per_flow": per_flow, "links": per_link, "flows_not_on_one_path": split,
            "spines_used": sorted({n.split(">")[1] for n in hops["leaf>spine"] if per_link[n]}),
            "pod2_leaves_used": sorted({n.split(">")[0] for n in hops["leaf>tor"] if per_link[n]})}


# ---- all: what tests/fabric.rs runs
LOSSY_SECONDS = 4
FAILOVER_SECONDS = 12


def all_in_one(args):
    """ecmp, the incast with PFC (pfcgen, DSCP 3, --duration s) and without (pfcgen ignoring
    PAUSE, in a class without PFC, DSCP 0), then the failover, in
    sequence on one bring-up: the scenarios' own functions, for seconds instead of minutes.
    The incast is still longer than the buffers can hide: its excess is compared with
    clos_topo.incast_buffer_bound()."""
    t0 = time.monotonic()
    with fabric(args, pfc=True) as fab:
        up_s = time.monotonic() - t0
        spread_out = spread(fab)
        lossless, _ = pfcgen_incast(fab, args.duration)
        # pfcgen, not iperf3: iperf3's UDP client sometimes fails at the end ("unable to
        # read from stream socket") when its control connection shares the dropping queue.
        lossy, _ = pfcgen_incast(fab, LOSSY_SECONDS, dscp=0, pfc=False)
        incast_out = print_short_incast(args.duration, lossless, lossy)
        fail = pull_spine_link(fab, FAILOVER_SECONDS)
        fab.stop_switches()
        stats = fab.switch_stats()
        fail["tx_errors"] = dead_link_tx_errors(stats, fail["pulled"])
        rows = switch_rows(stats)
    print("switches, over all of it:")
    print_switch_table(rows)
    return {"scenario": "all", "topology": topo.NAME, "up_s": round(up_s, 1), "ecmp": spread_out,
            "incast": incast_out, "failover": fail, "switches": rows,
            "lossless_drops": sum(r["lossless_drops"] for r in rows.values()),
            "link_down": sum(r["link_down"] for r in rows.values()),
            "elapsed_s": round(time.monotonic() - t0, 1)}


def print_short_incast(duration, lossless, lossy):
    """all's incast table, and how far past the buffers the lossless run went: the excess
    offered beyond the bottleneck's rate against incast_buffer_bound(), and what the
    senders held back (offered - sent)."""
    offered = 2 * PPS * duration
    sent = sum(f["sent"] for f in lossless.values())
    drained = topo.LINK_BPS / 8 * duration / FRAME
    excess = (offered - drained) * FRAME
    bound = topo.incast_buffer_bound()
    print(f"incast on {topo.NAME}: {' + '.join(SENDERS)} -> {RECEIVER}, {PPS} datagrams/s of {FRAME}-byte frames "
          f"each; with PFC (pfcgen, DSCP 3) for {duration:g} s, without (pfcgen, DSCP 0) for {LOSSY_SECONDS} s")
    print(f"{'PFC':<4} {'flow':<10} {'sent':>8} {'received':>9} {'lost':>7} {'PAUSE rx':>9}")
    for key, flows in (("on", lossless), ("off", lossy)):
        for f, r in flows.items():
            print(f"{key:<4} {f:<10} {r['sent']:>8} {r['received']:>9} {r['lost']:>7} {r.get('pause_frames_rx', '-'):>9}")
    print(f"with PFC: {offered:.0f} frames offered, {sent} sent: the senders held back {offered - sent:.0f} "
          f"({(offered - sent) * FRAME / 1e6:.2f} MB); the excess over the bottleneck, {excess / 1e6:.2f} MB, "
          f"is more than all the buffers on the paths could hold ({bound / 1e6:.2f} MB)")
    return {"duration_s": duration, "lossless": lossless, "lossy_duration_s": LOSSY_SECONDS, "lossy": lossy,
            "offered_frames": offered, "sent_frames": sent, "excess_bytes": round(excess), "buffer_bound_bytes": bound}


SCENARIOS = {"incast": incast, "latency": latency, "failover": failover, "link-pull": link_pull, "ecmp": ecmp,
             "all": all_in_one}


def main(argv):
    import clos_dcqcn  # it uses this module's pieces: imported once this module is whole
    scenarios = {"dcqcn-incast": clos_dcqcn.dcqcn_incast, "victim": clos_dcqcn.victim_only, **SCENARIOS}
    ap = argparse.ArgumentParser(prog=f"fabric.sh {topo.NAME}", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=[*scenarios, "down"])
    ap.add_argument("--dataplane", choices=["pfcswitch", "kernel"], default="pfcswitch")
    ap.add_argument("--pfc", choices=["on", "off", "both"], default="both", help="incast: PFC on, off or both")
    ap.add_argument("--duration", type=float,
                    help="seconds of traffic (incast 60, latency 20, failover 30, dcqcn-incast 20 per mode, all: its "
                         "lossless incast 20)")
    ap.add_argument("--plot", metavar="OUT.png", help="incast: each switch's PG OFF intervals, aligned; dcqcn-incast, "
                    "victim: per mode the senders' rates, the bottleneck queue and each switch's PAUSE frames")
    ap.add_argument("--dcqcn-time-scale", type=float,
                    help=f"dcqcn-incast: DCQCN's time scale (default {clos_dcqcn.TIME_SCALE:g}, docs/dcqcn.md)")
    ap.add_argument("--dcqcn-config", metavar="FILE",
                    help="dcqcn-incast: a pfcgen TOML with [dcqcn] / [cnp] tables, given to every pfcgen")
    ap.add_argument("--config-db", action="store_true",
                    help="start every switch from a generated SONiC config_db.json (run --config-db, FRR from "
                         "import sonic --frr) instead of its TOML and hand-written FRR files")
    ap.add_argument("--keep", action="store_true", help="keep the run directories (configs, logs, captures)")
    ap.add_argument("--no-bfd", action="store_true",
                    help="no BFD on the BGP sessions: a dead link is left by the dataplane and by the representor "
                         "going down (or the 3 s hold time)")
    ap.add_argument("--runs", type=int, default=3, help="link-pull: how many pulls (default 3)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("fabric.sh needs root (namespaces, veths, FRR, DPDK EAL)")
    if a.scenario == "down":
        clos.cleanup()
        return
    a.duration = a.duration or {"incast": 60, "latency": 20, "failover": 30, "all": 20}.get(a.scenario, 0)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    result = None
    try:
        result = scenarios[a.scenario](a)
    except KeyboardInterrupt:
        log("interrupted: torn down")
    if result is None:
        sys.exit(130)
    print(json.dumps(result, separators=(",", ":")))


if __name__ == "__main__":
    main(sys.argv[1:])
