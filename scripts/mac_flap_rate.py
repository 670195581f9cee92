#!/usr/bin/env python3
"""Other traffic's forwarding rate while one MAC flaps between two workers' ports, vs without
(bench JSON `scale_mac_flap_rate_ratio`).

    scripts/mac_flap_rate.py WORK_DIR [SECONDS]

Two net_pcap ports replayed without end (`infinite_rx=1`, transmit dropped), each polled by
its own worker (lcores 1 and 2; as tests/fdb_moves.rs, worker 2 shares CPU 0 with the
control lcore on a 2-CPU machine): Ethernet0 replays A -> B, Ethernet4 B -> A (the other
traffic: A and B are learned, every such frame is known unicast to the other port), each
interleaved 1:1 with frames from a third MAC to the host on its own port (X -> A on
Ethernet0, X -> B on Ethernet4: dropped `same_port`, never forwarded). In the `flap` run
that MAC is the same X on both ports, so it moves between the two workers' ports; in the
`steady` run it is X0 on Ethernet0 and X1 on Ethernet4. Same frames, sizes and config
otherwise.

Rate = (Ethernet0 + Ethernet4 `tx_packets`) / `elapsed_s` from the stats JSON: only the
other traffic is ever transmitted. `scale_mac_flap_rate_ratio` = flap / steady (goal ≥ 0.9);
`fdb.mac_moves` of both runs says whether X moved (counted, damped). Prints ONE JSON line;
null with the reason in "missing" when not measured.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from route_ir import frame, write_pcap  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SW = os.environ.get("BENCH_SW") or os.path.join(ROOT, "target/release/pfcswitch")
A, B = "02:00:00:00:0a:01", "02:00:00:00:0b:01"
X, X0, X1 = "02:00:00:00:0c:01", "02:00:00:00:0c:02", "02:00:00:00:0c:03"


def config(work, tag, prefix):
    ports = "".join(f'''[[port]]
name = "Ethernet{4 * i}"
devargs = "net_pcap{i},rx_pcap={work}/{tag}-in{i}.pcap,infinite_rx=1"
speed = "10G"
mtu = 1500
''' for i in range(2))
    text = f"""[eal]
args = ["--no-huge", "-m", "1024", "--no-pci", "--lcores=0@0,1@1,2@0", "--file-prefix={prefix}"]
[switch]
fdb_aging_time = 300
{ports}[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0"]
tx = ["Ethernet0"]
[[lcores.worker]]
lcore = 2
rx = ["Ethernet4:0"]
tx = ["Ethernet4"]
"""
    path = os.path.join(work, f"mac-flap-{tag}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def one_run(work, tag, seconds):
    x0, x1 = (X, X) if tag == "flap" else (X0, X1)
    ips = ("198.18.0.2", "198.18.0.3")
    for i, (src, dst, x, local) in enumerate(((A, B, x0, A), (B, A, x1, B))):
        frames = []
        for s in range(64):
            frames.append(frame(dst, src, *ips, 49152 + s))
            frames.append(frame(local, x, *ips, 49152 + s))
        write_pcap(f"{work}/{tag}-in{i}.pcap", frames)
    prefix = f"mac-flap-{tag}-{os.getpid()}"
    js = os.path.join(work, f"mac-flap-{tag}.json")
    try:
        r = subprocess.run([SW, "run", "--config", config(work, tag, prefix), "--duration", str(seconds),
                            "--stats-json", js], capture_output=True, text=True, timeout=seconds + 120)
    except subprocess.TimeoutExpired:
        return {"missing": f"{tag}: the switch did not stop"}
    finally:
        shutil.rmtree(os.path.join("/var/run/dpdk", prefix), ignore_errors=True)
    if r.returncode != 0 or not os.path.exists(js):
        return {"missing": f"{tag}: exit {r.returncode}: {r.stderr.strip()[-300:]}"}
    with open(js) as f:
        j = json.load(f)
    tx = sum(p["tx_packets"] for p in j["ports"])
    return {"mpps": round(tx / j["elapsed_s"] / 1e6, 3), "tx_packets": tx, "elapsed_s": j["elapsed_s"],
            "mac_moves": j.get("fdb", {}).get("mac_moves"), "fdb": j.get("fdb")}


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    runs = {tag: one_run(work, tag, seconds) for tag in ("steady", "flap")}
    missing = {t: r["missing"] for t, r in runs.items() if "missing" in r}
    ratio = None
    if not missing and runs["steady"]["mpps"]:
        ratio = round(runs["flap"]["mpps"] / runs["steady"]["mpps"], 3)
    else:
        missing = {"scale_mac_flap_rate_ratio": "; ".join(missing.values()) or "no traffic in the steady run"}
    print(json.dumps({"scale_mac_flap_rate_ratio": ratio, "runs": runs, "missing": missing}))


if __name__ == "__main__":
    main()
