#!/usr/bin/env python3
"""Instructions and cache misses per packet at ToR table sizes vs one destination.

    scripts/scale_ir.py WORK_DIR [SECONDS]       (root: the routed runs own a namespace)

Four callgrind runs of the worker, each with `--cache-sim=yes`, same method as
scripts/route_ir.py (net_pcap `infinite_rx=1` replay of 64-byte UDP frames, transmit dropped,
the window counted by callgrind's dumps and `Rx::process_burst` calls, never by telemetry):

* l2_one:    64 VLANs (Vlan100..Vlan163), both ports tagged members of all; one host pair
             in Vlan100, 64 flows (UDP source ports) between them.
* l2_scale:  same config; 16 384 host pairs, one per frame, spread over the 64 VLANs:
             Ethernet0 replays A_i -> B_i, Ethernet4 B_i -> A_i, so after the first pass
             32 768 MACs are learned and every frame is known unicast to a different MAC;
             the window starts after two passes (the learning is not in it).
* routed_one:   route_ir.py's routed run (two /24s, two neighbours).
* routed_scale: 131 072 IPv4 /24s, 4-way ECMP (half over four next hops behind Ethernet4,
             half behind Ethernet0) and 16 320 permanent neighbours (8160 per port, the
             next hops among them), installed with `ip -batch` in the namespace as FRR
             would; each port replays 16 384 frames whose destinations are drawn uniformly
             (seeded) from the routes and neighbours behind the other port.

Under callgrind all threads share one CPU: the routed_scale run starts with instrumentation
off (`--instr-atstart=no`, valgrind then runs ~10x faster), so the routing thread can mirror
131k routes in minutes, not hours; instrumentation goes on once the representors' kernel RX
counters (punts: no route or neighbour yet, CoPP-limited) stood still over two 3-second
dumps and the switch's routing health (telemetry, answered while instrumentation is off)
counts at least as many LPM writes as the batch has lines. Then, as in route_ir.py, dumps until the worker forwards and punts nothing, and one
SECONDS window. The one-destination runs use the same valgrind options.

Ratios: `scale_l2_ir_ratio` = l2_scale / l2_one Ir per packet of packet work (the worker's
Ir less its time-driven latency-histogram publish, which a run slowed by load spreads over
fewer packets: 135–1177 Ir per packet seen), `scale_routed_ir_ratio` likewise routed
(`_whole_worker` twins: the worker's whole Ir); the cache figures are D1 misses (reads + writes) and last-level data misses
per packet (callgrind's simulated cache: compare runs, not machines). Prints ONE JSON line;
a figure not measured is null with the reason in "missing".
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import route_ir  # noqa: E402
from route_ir import BURST, IP, MAC, Dumps, frame, write_pcap  # noqa: E402

SW = route_ir.SW
NS = "pfcsir%d" % (os.getpid() % 100000)
VLANS = range(100, 164)
PAIRS = 16384
# 16 320 neighbours, not 16 384: the kernel adds a few of its own and the switch mirrors 16 384
# at most (max_neighbours); one refused neighbour among the destinations punts for ever.
ROUTES4, NEIGH = 131072, 16320
PORTS = ["Ethernet0", "Ethernet4"]
# Per port: the route_ir subnet (its hosts) and a /18 for 8192 neighbours.
RIF = {"Ethernet0": ["198.18.0.1/24", "10.10.0.1/18"], "Ethernet4": ["198.18.1.1/24", "10.11.0.1/18"]}


def vlan_frame(dst, src, vid, src_ip, dst_ip, sport):
    f = frame(dst, src, src_ip, dst_ip, sport)
    tagged = f[:12] + bytes([0x81, 0x00, (3 << 5) | (vid >> 8), vid & 255]) + f[12:]
    return tagged.ljust(64, b"\0")


def host_mac(side, i):
    return "02:%02x:00:00:%02x:%02x" % (0xa0 + side, i >> 8, i & 255)


def neigh_ip(side, n):
    """Neighbour n (0..8191) behind port `side`: 10.10/18 on Ethernet0, 10.11/18 on Ethernet4."""
    return "10.%d.%d.%d" % (10 + side, (n + 2) >> 8, (n + 2) & 255)


def route_dst(n):
    return "%d.%d.%d.0" % (100 + (n >> 16), (n >> 8) & 255, n & 255)


def config(work, tag, routed, mbufs, prefix):
    ports = []
    for i, name in enumerate(PORTS):
        mac = f'mac = "{MAC["r%d" % i]}"\n' if routed else ""
        ports.append(f"""[[port]]
name = "{name}"
devargs = "net_pcap{i},rx_pcap={work}/{tag}-in{i}.pcap,infinite_rx=1"
speed = "400G"
cable_length = "5m"
mtu = 1500
trust = "dscp"
pfc_enable = [3, 4]
{mac}""")
    extra = ""
    if routed:
        # A ToR's FIB: 128k routes beside 16k neighbours' host routes (the default holds 128k).
        extra = f'[control_plane]\nnetns = "{NS}"\nmax_ipv4_routes = 262144\n[interface]\n' + "".join(
            f"{p} = {json.dumps(a)}\n" for p, a in RIF.items())
    else:
        extra = "".join(f"[vlan.Vlan{v}]\n" for v in VLANS) + "[vlan_member]\n" + "".join(
            f'"Vlan{v}|{p}" = {{ tagging_mode = "tagged" }}\n' for v in VLANS for p in PORTS)
    # Under callgrind a MAC of l2_scale comes back seconds apart (at line rate: milliseconds),
    # so at 300 s aging its stamp would be due (every 1/16 of the aging time) at most visits:
    # 3600 s keeps the window's learns what they are at line rate, reads without a write.
    aging = 300 if routed else 3600
    text = f"""[eal]
args = ["--no-huge", "-m", "2048", "--no-pci", "--lcores=0@0,1@1", "--file-prefix={prefix}"]
[switch]
fdb_aging_time = {aging}
burst_size = {BURST}
mbuf_count = {mbufs}
{''.join(ports)}{extra}
[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0", "Ethernet4:0"]
tx = ["Ethernet0", "Ethernet4"]
"""
    path = os.path.join(work, f"scale-ir-{tag}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def pcaps(work):
    h0, h1, r0, r1 = MAC["h0"], MAC["h1"], MAC["r0"], MAC["r1"]
    sports = range(49152, 49152 + 64)
    write_pcap(f"{work}/l2_one-in0.pcap", [vlan_frame(h1, h0, 100, IP["h0"], IP["h1"], s) for s in sports])
    write_pcap(f"{work}/l2_one-in1.pcap", [vlan_frame(h0, h1, 100, IP["h1"], IP["h0"], s) for s in sports])
    for side in (0, 1):
        write_pcap(f"{work}/l2_scale-in{side}.pcap", [
            vlan_frame(host_mac(1 - side, i), host_mac(side, i), VLANS[i % len(VLANS)],
                       IP["h%d" % side], IP["h%d" % (1 - side)], 49152 + (i & 63)) for i in range(PAIRS)])
    write_pcap(f"{work}/routed_one-in0.pcap", [frame(r0, h0, IP["h0"], IP["h1"], s) for s in sports])
    write_pcap(f"{work}/routed_one-in1.pcap", [frame(r1, h1, IP["h1"], IP["h0"], s) for s in sports])
    rnd = random.Random(44)
    half = ROUTES4 // 2
    for side, (rmac, hmac) in enumerate(((r0, h0), (r1, h1))):
        # Side 0's frames go out of Ethernet4: the first half of the routes and its neighbours.
        other = 1 - side
        dsts = []
        for _ in range(PAIRS):
            k = rnd.randrange(half + NEIGH // 2)
            if k < half:
                dsts.append(route_dst(k + other * half)[:-1] + "1")
            else:
                dsts.append(neigh_ip(other, k - half))
        write_pcap(f"{work}/routed_scale-in{side}.pcap", [
            frame(rmac, hmac, IP["h%d" % side], d, 49152 + (i & 63)) for i, d in enumerate(dsts)])


def batch_lines():
    lines = []
    for side, p in enumerate(PORTS):
        for n in range(NEIGH // 2):
            lines.append(f"neigh replace {neigh_ip(side, n)} lladdr 02:4e:{side:02x}:00:{n >> 8:02x}:{n & 255:02x} "
                         f"dev {p} nud permanent")
    half = ROUTES4 // 2
    for n in range(ROUTES4):
        side = n // half
        via = " ".join(f"nexthop via {neigh_ip(side, k)} dev {PORTS[side]}" for k in range(4))
        lines.append(f"route add {route_dst(n)}/24 {via}")
    return lines


def lpm_writes(prefix):
    r = subprocess.run([SW, "show", "--prefix", prefix, "--json", "routing"], capture_output=True, text=True,
                       timeout=120)
    return json.loads(r.stdout).get("rib", {}).get("lpm_writes", 0) if r.returncode == 0 else 0


def kernel_rx():
    out = subprocess.run(["ip", "-n", NS, "-s", "-j", "link", "show"], capture_output=True, text=True).stdout
    return sum(link.get("stats64", {}).get("rx", {}).get("packets", 0)
               for link in json.loads(out or "[]") if link.get("ifname") in RIF)


def totals(f):
    """The file's event names and `totals:` (what was counted since the last zeroing)."""
    events, tot = [], {}
    for line in open(f):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:") or (line.startswith("summary:") and not tot):
            tot = dict(zip(events, (int(x) for x in line.split()[1:])))
    return tot


def per_time_ir(f):
    """Ir in the file that depends on time, not packets: the latency histograms' publish
    (and the memset of their reset), a fixed cost per publish interval that a slower run
    spreads over fewer packets."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", "--show-percs=no", f],
                         capture_output=True, text=True).stdout
    n = 0
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0][:1].isdigit() and ("LatencyRecorder::publish" in line or "__memset" in line):
            n += int(parts[0].replace(",", ""))
    return n


def one_run(work, tag, seconds):
    routed = tag.startswith("routed")
    scale = tag.endswith("scale")
    prefix = f"scale-ir-{tag}-{os.getpid()}"
    cfg = config(work, tag, routed, 131072 if scale else 65536, prefix)
    cg = os.path.join(work, f"cg-{tag}.out")
    log = open(os.path.join(work, f"scale-ir-{tag}.log"), "w")
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--fair-sched=yes", "--cache-sim=yes",
           f"--instr-atstart={'no' if routed and scale else 'yes'}",
           f"--callgrind-out-file={cg}", SW, "run", "--config", cfg, "--duration", "7200"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    dumps = Dumps(p.pid, cg)
    punts = 0
    try:
        if routed:
            route_ir.wait("representors", 600, lambda: all(
                a.split("/")[0] in subprocess.run(["ip", "-n", NS, "addr", "show", "dev", d],
                                                  capture_output=True, text=True).stdout
                for d, addrs in RIF.items() for a in addrs))
            time.sleep(1)
            if scale:
                path = os.path.join(work, "scale-ir.batch")
                with open(path, "w") as f:
                    f.write("\n".join(batch_lines()) + "\n")
                subprocess.run(["ip", "-n", NS, "-force", "-batch", path], check=True)
                # Instrumentation off: wait until the punts stand still twice in a row.
                still, punts, end = 0, kernel_rx(), time.monotonic() + 3000
                while still < 2:
                    if p.poll() is not None or time.monotonic() > end:
                        return {"missing": f"routes not mirrored within 3000 s (exit {p.poll()}): see {log.name}"}
                    time.sleep(3)
                    now = kernel_rx()
                    still = still + 1 if now == punts else 0
                    punts = now
                # Punts alone can stand still early (CoPP-policed, a netlink re-dump): also
                # wait for the FIB to have had every route and neighbour written, asked
                # over telemetry while instrumentation is off (valgrind is fast enough then).
                want = len(batch_lines())
                route_ir.wait("the FIB to have the batch", 1800,
                              lambda: p.poll() is None and lpm_writes(prefix) >= want)
                subprocess.run(["callgrind_control", "-i", "on", str(p.pid)], capture_output=True, check=True,
                               timeout=300)
            else:
                for h, dev in (("h0", "Ethernet0"), ("h1", "Ethernet4")):
                    subprocess.run(["ip", "-n", NS, "neigh", "replace", IP[h], "lladdr", MAC[h], "dev", dev,
                                    "nud", "permanent"], check=True)
        punts, end = kernel_rx() if routed else 0, time.monotonic() + 900
        # l2_scale: the window starts once every frame of both pcaps passed twice, so all
        # 32 768 MACs are learned before it (the first pass learns, then every frame is a
        # refresh and a known unicast: the steady state the ratio is about).
        passed, need = 0, (4 * PAIRS if scale and not routed else 0)
        while True:
            if p.poll() is not None:
                return {"missing": f"the switch exited ({p.returncode}) before forwarding: see {log.name}"}
            if time.monotonic() > end:
                return {"missing": "not forwarding or still punting within 900 s"}
            time.sleep(3)
            _, calls = dumps.dump()
            passed += BURST * calls
            now = kernel_rx() if routed else 0
            settled = calls > 0 and now == punts and passed >= need
            punts = now
            if settled:
                break
        time.sleep(seconds)
        worker, calls = dumps.dump()
        punted = (kernel_rx() if routed else 0) - punts
        subprocess.run(["callgrind_control", "-i", "off", str(p.pid)], capture_output=True, check=True, timeout=300)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=600)
    except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
        return {"missing": f"{type(e).__name__}: {e}"}
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(os.path.join("/var/run/dpdk", prefix), ignore_errors=True)
    if not worker:
        return {"missing": "no process_burst call in the window"}
    packets = BURST * calls
    t = totals(worker)
    out = {"packets": packets, "punted_in_window": punted, "file": worker, "run_s": round(time.monotonic() - t0)}
    out["ir_per_packet"] = round(t.get("Ir", 0) / packets, 1)
    out["ir_per_packet_per_time"] = round(per_time_ir(worker) / packets, 1)
    out["ir_per_packet_packet_work"] = round(out["ir_per_packet"] - out["ir_per_packet_per_time"], 1)
    d1 = t.get("D1mr", 0) + t.get("D1mw", 0)
    dl = t.get("DLmr", 0) + t.get("DLmw", 0)
    out["d1_misses_per_packet"] = round(d1 / packets, 3) if "D1mr" in t else None
    out["ll_data_misses_per_packet"] = round(dl / packets, 3) if "DLmr" in t else None
    if punted > packets // 100:
        out["missing"] = f"{punted} packets punted in the window of {packets}: not settled"
    return out


def ratio(a, b, key):
    if a.get("missing") or b.get("missing") or not a.get(key) or not b.get(key):
        return None
    return round(a[key] / b[key], 3)


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    only = sys.argv[3].split(",") if len(sys.argv) > 3 else ["l2_one", "l2_scale", "routed_one", "routed_scale"]
    pcaps(work)
    runs = {}
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        for tag in only:
            runs[tag] = one_run(work, tag, seconds)
            print(f"scale-ir: {tag}: {json.dumps(runs[tag])}", file=sys.stderr, flush=True)
    finally:
        subprocess.run(["ip", "netns", "del", NS])
    missing = {t: r["missing"] for t, r in runs.items() if r.get("missing")}
    out = {}
    for fam in ("l2", "routed"):
        one, big = runs.get(f"{fam}_one", {"missing": "not run"}), runs.get(f"{fam}_scale", {"missing": "not run"})
        # The per-packet work: the time-driven publish spread over a window's packets
        # depends on how fast valgrind ran, not on the tables.
        out[f"scale_{fam}_ir_ratio"] = ratio(big, one, "ir_per_packet_packet_work")
        out[f"scale_{fam}_ir_ratio_whole_worker"] = ratio(big, one, "ir_per_packet")
        out[f"scale_{fam}_d1_miss_ratio"] = ratio(big, one, "d1_misses_per_packet")
        if out[f"scale_{fam}_ir_ratio"] is None:
            missing[f"scale_{fam}_ir_ratio"] = "; ".join(
                f"{t}: {r['missing']}" for t, r in ((f"{fam}_one", one), (f"{fam}_scale", big)) if r.get("missing")
            ) or "no figure"
    out["runs"] = runs
    out["missing"] = missing
    print(json.dumps(out))


if __name__ == "__main__":
    main()
