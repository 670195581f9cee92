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

Each run: `valgrind --tool=callgrind --separate-threads=yes`; once the data ports forward
(and, routed, the routed counter moves), the port counters are read over telemetry and
callgrind's counters zeroed (`callgrind_control -z`), so start-up and the punts before the
neighbours exist are not in the figure; SECONDS later the counters are read again and
instrumentation switched off (`callgrind_control -i off`) before the switch is stopped, so
the stop is not in it either. Ir/packet = the worker thread's Ir / the packets of that window,
counted by callgrind itself (full bursts of 32 from net_pcap's replay × calls of
process_burst; the telemetry counters read around the window are printed beside it, but
valgrind takes seconds to act on -z and -i off while the worker forwards). Prints ONE JSON line:
{"l2_ir_per_packet": .., "routed_ir_per_packet": .., "ratio": .., ...}.
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
IP = {"h0": "10.0.0.2", "h1": "10.0.1.2"}


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
Ethernet0 = ["10.0.0.1/24"]
Ethernet4 = ["10.0.1.1/24"]
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


def telemetry(prefix, cmd):
    path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(20)
        s.connect(path)
        s.recv(65536)
        s.send(cmd.encode())
        v = json.loads(s.recv(1 << 20))
    return v.get(cmd.split(",")[0], v)


def port_counters(prefix):
    return {p: telemetry(prefix, f"/pfcswitch/port_counters,{p}")[p] for p in ("Ethernet0", "Ethernet4")}


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


def one_run(work, routed, seconds):
    tag = "routed" if routed else "l2"
    prefix = f"route-ir-{tag}-{os.getpid()}"
    cfg = config(work, routed, prefix)
    cg = os.path.join(work, f"cg-{tag}.out")
    js = os.path.join(work, f"route-ir-{tag}.json")
    log = open(os.path.join(work, f"route-ir-{tag}.log"), "w")
    # The run lasts until stopped: start-up under valgrind (the routed one loads the kernel's
    # tables) takes a varying share of any fixed duration.
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={cg}",
           SW, "run", "--config", cfg, "--duration", "3600", "--stats-json", js]
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        if routed:
            # Configured (MAC, up, then the addresses): a neighbour added before the MAC
            # is set would be flushed by the change.
            wait("representors", 300, lambda: all(
                a in subprocess.run(["ip", "-n", NS, "addr", "show", "dev", d], capture_output=True, text=True).stdout
                for d, a in (("Ethernet0", "10.0.0.1/24"), ("Ethernet4", "10.0.1.1/24"))))
            time.sleep(1)
            for h, dev in (("h0", "Ethernet0"), ("h1", "Ethernet4")):
                subprocess.run(["ip", "-n", NS, "neigh", "replace", IP[h], "lladdr", MAC[h], "dev", dev,
                                "nud", "permanent"], check=True)
        key = "routed_packets" if routed else "tx_packets"
        wait("forwarding", 300, lambda: all(c[key] > 0 for c in port_counters(prefix).values()))
        base = port_counters(prefix)
        subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True, check=True, timeout=120)
        # The window: `seconds` of forwarding, then the counters, then instrumentation off
        # (the stop that follows spins and frees, which is not a packet's cost).
        time.sleep(seconds)
        end = port_counters(prefix)
        subprocess.run(["callgrind_control", "-i", "off", str(p.pid)], capture_output=True, check=True, timeout=120)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        # A switch that did not stop cleanly leaves its EAL runtime directory (~10 MB).
        shutil.rmtree(os.path.join("/var/run/dpdk", prefix), ignore_errors=True)
    with open(js) as f:
        j = json.load(f)
    sent = sum(end[n]["tx_packets"] - base[n]["tx_packets"] for n in base)
    routed_n = sum(q.get("routed_packets", 0) for q in j["ports"] if q["name"] in base)
    worker = max(glob.glob(cg + "-*"), key=total_ir)
    ir = total_ir(worker)
    # The packets of the instrumented window, from callgrind itself: net_pcap's infinite
    # replay hands out full bursts of BURST, one process_burst call each. The telemetry
    # counters around the window are skewed by how long valgrind takes to act on -z and
    # -i off (seconds, while the worker forwards), which made the figure swing 2x.
    packets = BURST * calls_to(worker, "Worker::process_burst")
    return {"ir": ir, "packets": packets, "ir_per_packet": ir / packets if packets else None,
            "window_counter_packets": sent, "routed_total": routed_n, "file": worker}


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
    ratio = routed["ir_per_packet"] / l2["ir_per_packet"] if routed["ir_per_packet"] and l2["ir_per_packet"] else None
    print(json.dumps({"l2_ir_per_packet": l2["ir_per_packet"] and round(l2["ir_per_packet"], 1),
                      "routed_ir_per_packet": routed["ir_per_packet"] and round(routed["ir_per_packet"], 1),
                      "ratio": ratio and round(ratio, 3),
                      "l2_packets": l2["packets"], "routed_packets": routed["packets"],
                      "l2_window_counter_packets": l2["window_counter_packets"],
                      "routed_window_counter_packets": routed["window_counter_packets"],
                      "l2_file": l2["file"], "routed_file": routed["file"]}))


if __name__ == "__main__":
    main()
