#!/usr/bin/env python3
"""The routed reference: pfcswitch routing vs DPDK's l3fwd (FIB mode), same replay, same CPU.

    scripts/l3fwd_ref.py WORK_DIR L3FWD [SECONDS]      (root: the routed run owns a namespace)

Both forward the IPv4/UDP frames scripts/route_ir.py writes (64 B, 64 flows, to
198.18.1.2 from port 0 and 198.18.0.2 from port 1: l3fwd's own table routes
198.18.N.0/24 to port N), replayed by net_pcap (infinite_rx=1, transmit dropped), the
forwarding lcore on CPU 1:

* pfcswitch: route_ir.py's routed configuration (router interfaces 198.18.0.1/24 and
  198.18.1.1/24, neighbours added in its namespace), worker on CPU 1, control on CPU 0;
* l3fwd: `--lookup=fib` (rte_fib, as pfcswitch), one lcore on CPU 1, `--parse-ptype`
  (net_pcap reports no packet types). L3FWD is the binary scripts/bench.sh built from
  Debian's dpdk-doc sources.

Mpps = packets transmitted by the two net_pcap ports (DPDK's /ethdev/stats, the same
meter for both: no callgrind here, telemetry answers) over SECONDS once forwarding runs.
Prints ONE JSON line: {"routed_mpps", "l3fwd_mpps", "routed_vs_l3fwd", "missing"}; a
figure that could not be measured is null and "missing" says why (exit 0 all the same).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from route_ir import IP, MAC, NS, RIF, SW, config, frame, wait, write_pcap  # noqa: E402


def telemetry(prefix, cmd):
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(10)
        s.connect(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2")
        s.recv(65536)
        s.send(cmd.encode())
        v = json.loads(s.recv(1 << 20))
    return v.get(cmd.split(",")[0], v)


def pcap_tx(prefix):
    """Packets sent by the net_pcap ports of the instance (its other ports: representors)."""
    total = 0
    for i in telemetry(prefix, "/ethdev/list"):
        if telemetry(prefix, f"/ethdev/info,{i}")["name"].startswith("net_pcap"):
            total += telemetry(prefix, f"/ethdev/stats,{i}")["opackets"]
    return total


def rate(prefix, seconds):
    """Mpps over `seconds`, once the ports transmit."""
    wait("transmitting", 60, lambda: pcap_tx(prefix) > 0)
    time.sleep(1)
    a, t0 = pcap_tx(prefix), time.monotonic()
    time.sleep(seconds)
    b, t1 = pcap_tx(prefix), time.monotonic()
    return (b - a) / (t1 - t0) / 1e6


def stop(p, prefix):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    shutil.rmtree(os.path.join("/var/run/dpdk", prefix), ignore_errors=True)


def routed(work, seconds):
    prefix = f"l3ref-sw-{os.getpid()}"
    cfg = config(work, True, prefix)
    log = open(os.path.join(work, "l3ref-pfcswitch.log"), "w")
    p = subprocess.Popen([SW, "run", "--config", cfg, "--duration", "3600"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait("representors", 120, lambda: all(
            a in subprocess.run(["ip", "-n", NS, "addr", "show", "dev", d], capture_output=True, text=True).stdout
            for d, a in RIF.items()))
        time.sleep(1)
        for h, dev in (("h0", "Ethernet0"), ("h1", "Ethernet4")):
            subprocess.run(["ip", "-n", NS, "neigh", "replace", IP[h], "lladdr", MAC[h], "dev", dev,
                            "nud", "permanent"], check=True)
        # Routed on both ports: the neighbours reached the switch.
        wait("routing", 120, lambda: all(
            telemetry(prefix, f"/pfcswitch/port_counters,{n}")[n]["routed_packets"] > 0 for n in RIF))
        return rate(prefix, seconds), None
    except (RuntimeError, OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError) as e:
        return None, f"pfcswitch routed: {e} (see {log.name})"
    finally:
        stop(p, prefix)
        log.close()


def l3fwd(work, binary, seconds):
    prefix = f"l3ref-l3fwd-{os.getpid()}"
    log = open(os.path.join(work, "l3ref-l3fwd.log"), "w")
    cmd = [binary, "--no-huge", "-m", "1024", "--no-pci", "--lcores=1@1", f"--file-prefix={prefix}"]
    for i in (0, 1):
        cmd += ["--vdev", f"net_pcap{i},rx_pcap={work}/in{i}-r.pcap,infinite_rx=1"]
    cmd += ["--", "-p", "0x3", "--config=(0,0,1),(1,0,1)", "--lookup=fib", "--parse-ptype", "-P"]
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        return rate(prefix, seconds), None
    except (RuntimeError, OSError, ValueError, KeyError, TypeError) as e:
        return None, f"l3fwd: {e} (see {log.name})"
    finally:
        stop(p, prefix)
        log.close()


def main():
    work, binary = sys.argv[1], sys.argv[2]
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    sports = range(49152, 49152 + 64)
    write_pcap(f"{work}/in0-r.pcap", [frame(MAC["r0"], MAC["h0"], IP["h0"], IP["h1"], s) for s in sports])
    write_pcap(f"{work}/in1-r.pcap", [frame(MAC["r1"], MAC["h1"], IP["h1"], IP["h0"], s) for s in sports])
    missing = {}
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        sw, why = routed(work, seconds)
    finally:
        subprocess.run(["ip", "netns", "del", NS])
    if why:
        missing["routed_mpps"] = why
    ref, why = l3fwd(work, binary, seconds)
    if why:
        missing["l3fwd_mpps"] = why
    ratio = round(sw / ref, 3) if sw and ref else None
    if ratio is None:
        missing["routed_vs_l3fwd"] = "needs both figures"
    print(json.dumps({"routed_mpps": sw and round(sw, 3), "l3fwd_mpps": ref and round(ref, 3),
                      "routed_vs_l3fwd": ratio, "missing": missing}))


if __name__ == "__main__":
    main()
