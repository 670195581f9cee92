#!/usr/bin/env python3
"""Routed vs bridged instructions per packet (callgrind), one run each, same frames and vdevs.

    scripts/route_ir.py WORK_DIR [SECONDS]       (root: the routed run owns a namespace)

net_null hands out zero-filled frames (no IP, destination MAC 0): nothing a router would
route. Both runs therefore replay IPv4/UDP frames (64 B, DSCP 3: the lossless TC, 64 flows
differing in UDP source port) from net_pcap with infinite_rx=1 (DPDK copies each from a
ring into a fresh mbuf) and drop on transmit (no tx_pcap: tx_drop). The two configs differ
only in routing:

* l2:     frames to the other host's MAC; learned on start, then known unicast.
* routed: frames to the port's router MAC, [interface] on both ports, [control_plane]
          netns; the neighbours are added in the namespace once the representors exist.

Each run: `valgrind --tool=callgrind --separate-threads=yes --fair-sched=yes` (fair: the
switch's routing thread must get its turns beside the busy-polling worker). The window is
counted by callgrind alone, never over telemetry (under valgrind the busy-polling worker
starves the telemetry thread: reads timed out or never answered, 2026-12-06):

1. routed: once the representors carry their addresses (`ip`, not telemetry), the neighbours
   are added in the namespace;
2. `callgrind_control -d` every few seconds (each dump also zeroes the counters) until the
   worker thread's dump shows process_burst calls and, routed, the representors' kernel RX
   counters (the punts: neighbours not yet in the switch) stood still since the last dump;
3. SECONDS later one more dump: THE WINDOW. Its worker thread file holds both the Ir and the
   calls of that same interval, so however late valgrind acts on a dump both agree.
   Ir/packet = the worker thread's Ir / (process_burst calls x BURST): net_pcap's infinite
   replay hands out full bursts of BURST, one process_burst call each;
4. instrumentation off (`callgrind_control -i off`), then the switch is stopped.

Prints ONE JSON line: {"l2_ir_per_packet": .., "routed_ir_per_packet": .., "ratio": .., ...,
"missing": {"<key>": "<why>"}}: a figure that could not be measured is null and named in
"missing" with the reason (the script exits 0 all the same).
"""
import glob
import re
import shutil
import signal
import json
import os
import socket
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SW = os.path.join(ROOT, "target/release/pfcswitch")
BURST = 32
NS = "pfcbench%d" % (os.getpid() % 100000)
MAC = {"r0": "02:00:00:00:00:10", "r1": "02:00:00:00:00:14", "h0": "02:00:00:00:01:01", "h1": "02:00:00:00:01:02"}
# 198.18.0.0/24 and 198.18.1.0/24: the subnets of l3fwd's own route table, so the
# routed reference (scripts/l3fwd_ref.py) replays these same frames.
IP = {"h0": "198.18.0.2", "h1": "198.18.1.2"}
RIF = {"Ethernet0": "198.18.0.1/24", "Ethernet4": "198.18.1.1/24"}


def mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


def checksum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(dst_mac, src_mac, src_ip, dst_ip, sport):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 3 << 2, 46, 0, 0, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, 4791, 26, 0)
    return (mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x00" + ip + udp).ljust(60, b"\0")


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)


def config(work, routed, prefix):
    ports = []
    for i, name in enumerate(["Ethernet0", "Ethernet4"]):
        mac = f'mac = "{MAC["r%d" % i]}"\n' if routed else ""
        ports.append(f"""[[port]]
name = "{name}"
devargs = "net_pcap{i},rx_pcap={work}/in{i}-{'r' if routed else 'l2'}.pcap,infinite_rx=1"
speed = "400G"
cable_length = "5m"
mtu = 1500
trust = "dscp"
pfc_enable = [3, 4]
{mac}""")
    routing = f"""[control_plane]
netns = "{NS}"
[interface]
Ethernet0 = ["{RIF['Ethernet0']}"]
Ethernet4 = ["{RIF['Ethernet4']}"]
""" if routed else ""
    text = f"""[eal]
args = ["--no-huge", "-m", "1024", "--no-pci", "--lcores=0@0,1@1", "--file-prefix={prefix}"]
[switch]
fdb_aging_time = 300
burst_size = {BURST}
{''.join(ports)}{routing}
[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0", "Ethernet4:0"]
tx = ["Ethernet0", "Ethernet4"]
"""
    path = os.path.join(work, f"route-ir-{'routed' if routed else 'l2'}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def wait(what, limit, f):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            if f():
                return
        except (OSError, ValueError, KeyError, TypeError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"route_ir: {what} not within {limit} s")


def total_ir(f):
    """The file's `totals:` (its cost lines: what was counted since the zeroing, while
    instrumentation was on); `summary:` is not kept consistent by `-i off`."""
    found = {}
    for line in open(f):
        for key in ("totals:", "summary:"):
            if line.startswith(key):
                found[key] = int(line.split()[1])
    return found.get("totals:", found.get("summary:", 0))


def calls_to(f, needle):
    """Calls, in a callgrind file, to the functions whose name contains `needle`."""
    names, callee, total = {}, None, 0
    for line in open(f):
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3).strip()
            callee = names.get(m.group(2), "") if m.group(1) == "cfn" else None
        elif line.startswith("calls=") and callee and needle in callee:
            total += int(line.split()[0][len("calls="):])
    return total


def kernel_rx(routed):
    """Packets the representors' kernel side received (the switch's punts); 0 bridged."""
    if not routed:
        return 0
    out = subprocess.run(["ip", "-n", NS, "-s", "-j", "link", "show"], capture_output=True, text=True).stdout
    return sum(link.get("stats64", {}).get("rx", {}).get("packets", 0)
               for link in json.loads(out or "[]") if link.get("ifname") in RIF)


class Dumps:
    """`callgrind_control -d` of one valgrind process; each dump zeroes the counters, so a
    dump holds what happened since the one before. Files: OUT.<part>-<thread>."""

    def __init__(self, pid, out):
        self.pid, self.out, self.part = pid, out, 0

    def dump(self):
        """The worker thread's file of a new dump (the thread that called process_burst;
        None if none did) and its process_burst calls."""
        subprocess.run(["callgrind_control", "-d", str(self.pid)], capture_output=True, check=True, timeout=120)
        self.part += 1
        best = (None, 0)
        for f in glob.glob(f"{self.out}.{self.part}-*"):
            n = calls_to(f, "process_burst")
            if n > best[1]:
                best = (f, n)
        return best


def one_run(work, routed, seconds):
    """The window's figures, or {"missing": why}."""
    tag = "routed" if routed else "l2"
    prefix = f"route-ir-{tag}-{os.getpid()}"
    cfg = config(work, routed, prefix)
    cg = os.path.join(work, f"cg-{tag}.out")
    js = os.path.join(work, f"route-ir-{tag}.json")
    log = open(os.path.join(work, f"route-ir-{tag}.log"), "w")
    # The run lasts until stopped: start-up under valgrind (the routed one loads the kernel's
    # tables) takes a varying share of any fixed duration.
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--fair-sched=yes",
           f"--callgrind-out-file={cg}", SW, "run", "--config", cfg, "--duration", "3600", "--stats-json", js]
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    dumps = Dumps(p.pid, cg)
    try:
        if routed:
            # Configured (MAC, up, then the addresses): a neighbour added before the MAC
            # is set would be flushed by the change.
            wait("representors", 300, lambda: all(
                a in subprocess.run(["ip", "-n", NS, "addr", "show", "dev", d], capture_output=True, text=True).stdout
                for d, a in RIF.items()))
            time.sleep(1)
            for h, dev in (("h0", "Ethernet0"), ("h1", "Ethernet4")):
                subprocess.run(["ip", "-n", NS, "neigh", "replace", IP[h], "lladdr", MAC[h], "dev", dev,
                                "nud", "permanent"], check=True)
        # Settled: the worker forwards and (routed) punts nothing any more.
        punts, end = kernel_rx(routed), time.monotonic() + 600
        while True:
            if p.poll() is not None:
                return {"missing": f"the switch exited ({p.returncode}) before forwarding: see {log.name}"}
            if time.monotonic() > end:
                return {"missing": "not forwarding (no process_burst calls) or still punting within 600 s"}
            time.sleep(3)
            _, calls = dumps.dump()
            now = kernel_rx(routed)
            settled = calls > 0 and now == punts
            punts = now
            if settled:
                break
        time.sleep(seconds)
        worker, calls = dumps.dump()
        punted = kernel_rx(routed) - punts
        subprocess.run(["callgrind_control", "-i", "off", str(p.pid)], capture_output=True, check=True, timeout=120)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=600)
    except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
        return {"missing": f"{type(e).__name__}: {e}"}
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        # A switch that did not stop cleanly leaves its EAL runtime directory (~10 MB).
        shutil.rmtree(os.path.join("/var/run/dpdk", prefix), ignore_errors=True)
    if not worker:
        return {"missing": "no process_burst call in the window"}
    packets = BURST * calls
    out = {"ir": total_ir(worker), "packets": packets, "punted_in_window": punted, "file": worker}
    out["ir_per_packet"] = out["ir"] / packets
    # A window with punts in it is not the routed path alone.
    if punted > packets // 100:
        out["missing"] = f"{punted} packets punted in the window of {packets}: neighbours not settled"
    return out


def main():
    work = sys.argv[1]
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    h0, h1, r0, r1 = MAC["h0"], MAC["h1"], MAC["r0"], MAC["r1"]
    sports = range(49152, 49152 + 64)
    # Ethernet0 receives host 0's frames to host 1, Ethernet4 the reverse.
    write_pcap(f"{work}/in0-l2.pcap", [frame(h1, h0, IP["h0"], IP["h1"], s) for s in sports])
    write_pcap(f"{work}/in1-l2.pcap", [frame(h0, h1, IP["h1"], IP["h0"], s) for s in sports])
    write_pcap(f"{work}/in0-r.pcap", [frame(r0, h0, IP["h0"], IP["h1"], s) for s in sports])
    write_pcap(f"{work}/in1-r.pcap", [frame(r1, h1, IP["h1"], IP["h0"], s) for s in sports])
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        l2 = one_run(work, False, seconds)
        routed = one_run(work, True, seconds)
    finally:
        subprocess.run(["ip", "netns", "del", NS])
    missing = {}
    for key, r in (("l2_ir_per_packet", l2), ("routed_ir_per_packet", routed)):
        if r.get("missing"):
            missing[key] = r["missing"]
    fig = {k: None if k in missing else round(r["ir_per_packet"], 1)
           for k, r in (("l2_ir_per_packet", l2), ("routed_ir_per_packet", routed))}
    ratio = None
    if fig["l2_ir_per_packet"] and fig["routed_ir_per_packet"]:
        ratio = round(routed["ir_per_packet"] / l2["ir_per_packet"], 3)
    else:
        missing["ratio"] = "needs both figures"
    print(json.dumps({**fig, "ratio": ratio,
                      "l2_packets": l2.get("packets"), "routed_packets": routed.get("packets"),
                      "routed_punted_in_window": routed.get("punted_in_window"),
                      "l2_file": l2.get("file"), "routed_file": routed.get("file"), "missing": missing}))


if __name__ == "__main__":
    main()
