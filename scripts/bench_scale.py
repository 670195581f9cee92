#!/usr/bin/env python3
"""Worker scaling: `scripts/bench.sh --workers N` (docs/benchmarks.md, "Scaling past two
cores"). For W = 1, 2, 4, ... N workers: pfcswitch with W workers, each receiving and
transmitting its own pair of net_null ports in its own VLAN (the full lossless pipeline, as
dpdk-config/bench-null.toml, one busy lcore per CPU), against dpdk-testpmd macswap with W
forwarding cores on the same 2W ports, in the same run. Reports aggregate Mpps, the ratio
to testpmd, and the scaling efficiency (aggregate at W / (W x aggregate at 1)). What the
workers share per packet (FDB, FIB, MMU pool line, inbound rings) is what bends the
efficiency below 1: the model beside it in docs/benchmarks.md says by how much.

Environment (from scripts/bench.sh): BENCH_ROOT, BENCH_WORK, BENCH_WORKERS, BENCH_RUNS,
BENCH_SECONDS. Ends with ONE JSON line.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import atexit  # noqa: E402
from benchlib import Proc, med, remove_runtime_dirs, steady, testpmd_blocks  # noqa: E402

# Whatever the exit, this run's EAL runtime directories go (their prefixes carry our pid).
atexit.register(remove_runtime_dirs, os.getpid())

ROOT = os.environ["BENCH_ROOT"]
WORK = os.environ["BENCH_WORK"]
N = int(os.environ["BENCH_WORKERS"])
RUNS = int(os.environ.get("BENCH_RUNS") or "3")
SECONDS = int(os.environ.get("BENCH_SECONDS") or "5")
SW = os.path.join(ROOT, "target/release/pfcswitch")
CPUS = os.cpu_count() or 1
notes = []


def log(msg):
    print(f"bench-scale: {msg}", file=sys.stderr, flush=True)


def lcores(w):
    """lcore i on CPU i (0 = the control lcore), wrapped when the machine has fewer CPUs."""
    return ",".join(f"{i}@{i % CPUS}" for i in range(w + 1))


def config(w):
    """bench-null.toml's pipeline with 2w ports, worker i owning Ethernet{8i} and Ethernet{8i+4}
    (both untagged members of Vlan{100+i})."""
    out = ["[eal]", f'args = ["--no-huge", "-m", "{512 + 256 * w}", "--no-pci", "--lcores={lcores(w)}"]',
           f'file_prefix = "bench-scale-{os.getpid()}-{w}"',
           "[switch]", "fdb_aging_time = 300", "fdb_size = 65536", "burst_size = 32",
           "rx_ring_size = 1024", "tx_ring_size = 1024", f"mbuf_count = {16383 + 8192 * w}"]
    for p in range(2 * w):
        out += ["[[port]]", f'name = "Ethernet{4 * p}"', f'devargs = "net_null{p},size=64"', 'speed = "400G"',
                'cable_length = "5m"', "mtu = 1500", 'trust = "dscp"', "default_tc = 3", "pfc_enable = [3, 4]"]
    # net_null's frames are all alike (one source MAC): one VLAN per pair keeps each
    # worker's MAC its own (FDB keyed by VLAN and MAC), as separate hosts' would be.
    out += ["[vlan_member]"]
    for i in range(w):
        out += [f'"Vlan{100 + i}|Ethernet{8 * i + 4 * k}" = {{ tagging_mode = "untagged" }}' for k in (0, 1)]
    for i in range(w):
        out += [f"[vlan.Vlan{100 + i}]"]
    out += ["[lcores]", "control = 0"]
    for i in range(w):
        a, b = f"Ethernet{8 * i}", f"Ethernet{8 * i + 4}"
        out += ["[[lcores.worker]]", f"lcore = {i + 1}", f'rx = ["{a}:0", "{b}:0"]', f'tx = ["{a}", "{b}"]']
    path = os.path.join(WORK, f"scale-{w}.toml")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def switch_mpps(w, r):
    js = os.path.join(WORK, f"scale-{w}-{r}.json")
    p = subprocess.run([SW, "run", "--config", config(w), "--duration", str(SECONDS), "--stats-json", js],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=SECONDS + 90)
    if p.returncode != 0:
        notes.append(f"pfcswitch with {w} workers exited {p.returncode}")
        return None, None
    with open(js) as f:
        j = json.load(f)
    tx = sum(p["tx_packets"] for p in j["ports"])
    per_worker = [round(x["busy_cycles"] / max(1, tx) * w, 1) for x in j["workers"]]
    return tx / j["elapsed_s"], per_worker


def testpmd_mpps(w, r):
    vdevs = [f"--vdev=net_null{p}" for p in range(2 * w)]
    cmd = ["dpdk-testpmd", "--no-huge", "-m", str(1024 + 256 * w), "--no-pci", f"--lcores={lcores(w)}",
           f"--file-prefix=bench-scale-tp-{os.getpid()}-{w}-{r}"] + vdevs + \
          ["--", "--auto-start", f"--nb-cores={w}", "--total-num-mbufs=32768", "--stats-period=1",
           "--forward-mode=macswap"]
    p = Proc(cmd, stdin=True)
    p.wait_for(r"Tx-pps:\s+[1-9]", SECONDS + 40, count=2 * w * (SECONDS + 2))
    text = p.stop()
    with open(os.path.join(WORK, f"tp-scale-{w}-{r}.log"), "w") as f:
        f.write(text)
    return steady([sum(v[1] for v in b.values()) for b in testpmd_blocks(text)])


def main():
    if N + 1 > CPUS:
        notes.append(f"{N} workers + the control lcore on {CPUS} CPUs: lcores share CPUs, so these figures "
                     "measure time slicing, not scaling (run it on a machine with at least N+1 CPUs)")
    ws, w = [], 1
    while w < N:
        ws.append(w)
        w *= 2
    ws.append(N)
    rows = []
    for w in ws:
        sw, tp, cpp = [], [], []
        for r in range(RUNS):
            log(f"{w} worker(s), run {r + 1}/{RUNS}: pfcswitch")
            mpps, cycles = switch_mpps(w, r)
            sw.append(mpps)
            if cycles:
                cpp.append(med(cycles))
            log(f"{w} worker(s), run {r + 1}/{RUNS}: testpmd macswap, {w} forwarding core(s)")
            tp.append(testpmd_mpps(w, r))
        rows.append({"workers": w, "mpps": med(sw), "testpmd_mpps": med(tp), "cycles_per_packet": med(cpp)})
    one = rows[0]["mpps"]
    one_tp = rows[0]["testpmd_mpps"]
    print(f"{'workers':>7} {'pfcswitch Mpps':>15} {'testpmd Mpps':>13} {'ratio':>6} {'efficiency':>10} "
          f"{'testpmd eff.':>12}")
    for row in rows:
        m, t, w = row["mpps"], row["testpmd_mpps"], row["workers"]
        row["ratio"] = round(m / t, 3) if m and t else None
        row["efficiency"] = round(m / (w * one), 3) if m and one else None
        row["testpmd_efficiency"] = round(t / (w * one_tp), 3) if t and one_tp else None
        row["mpps"] = round(m / 1e6, 3) if m else None
        row["testpmd_mpps"] = round(t / 1e6, 3) if t else None
        print(f"{w:>7} {row['mpps'] or 'n/a':>15} {row['testpmd_mpps'] or 'n/a':>13} {row['ratio'] or 'n/a':>6} "
              f"{row['efficiency'] or 'n/a':>10} {row['testpmd_efficiency'] or 'n/a':>12}")
    for n in notes:
        print(f"note: {n}")
    print(json.dumps({"cpus": CPUS, "seconds": SECONDS, "runs": RUNS, "rows": rows, "notes": notes}))


main()
