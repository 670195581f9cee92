#!/usr/bin/env python3
"""ECMP failover with 131 072 routes on a live switch (bench JSON `scale_failover_ms`).

    scripts/scale_failover.py WORK_DIR            (root: namespaces, veth)

Three hosts on veth pairs (scripts/hosts.sh, routed: the switch ports are net_af_packet on
the switch-side ends, its representors in the namespace `<p>sw`), as tests/router_contract.rs
`a_dead_link_leaves_ecmp_at_once...` sets them up. In the switch's namespace `ip -batch`
installs 131 072 IPv4 /24s (100.0.0.0 on) plus 10.60.0.0/16, each over the same two next
hops (host 2 via Ethernet4, host 3 via Ethernet8), and the bench waits until the switch's
FIB has them all (`lpm_writes`). Host 1 then sends 16 UDP flows to 10.60.0.1 (an address
of both host 2 and host 3), a datagram per flow every ~1 ms; after 1.5 s host 2's end of
its link goes down (`ip link set down`: the switch's port sees its link drop, as an
unplugged cable).

Figures (one CLOCK_MONOTONIC for every namespace), over the flows that were on host 2 and
moved to host 3: `scale_failover_ms`, the largest gap between a flow's last datagram at host
2 (its link is down from then on, within the ~1 ms between datagrams) and its first at host 3:
how long the switch kept sending that flow to the dead next hop; and
`from_down_command_ms_max`, from the start of the `ip link set down` command (which itself
takes ~100 ms to run through `ip netns exec` on a loaded machine) to the first at host 3.
Prints ONE JSON line; null with
the reason in "missing" when not measured.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import atexit  # noqa: E402
from benchlib import Proc, remove_runtime_dirs  # noqa: E402

atexit.register(remove_runtime_dirs, os.getpid())

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SW = os.environ.get("BENCH_SW") or os.path.join(ROOT, "target/release/pfcswitch")
P = "sf%d" % (os.getpid() % 100000)
PREFIX = f"scale-failover-{os.getpid()}"
ROUTES4 = 131072
HOSTS = os.path.join(ROOT, "scripts/hosts.sh")
TRAFFIC = os.path.join(ROOT, "scripts/host_traffic.py")


def log(msg):
    print(f"scale-failover: {msg}", file=sys.stderr, flush=True)


def config(work):
    ports = "".join(f'[[port]]\nname = "Ethernet{4 * i}"\ndevargs = "net_af_packet{i},iface={P}v{i + 1}a"\n'
                    f'speed = "10G"\n' for i in range(3))
    text = f"""[eal]
args = ["--no-huge", "-m", "2048", "--no-pci", "--lcores=0@0,1@1"]
file_prefix = "{PREFIX}"
{ports}[control_plane]
netns = "{P}sw"
max_ipv4_routes = 262144
[interface]
Ethernet0 = ["198.18.1.1/24"]
Ethernet4 = ["198.18.2.1/24"]
Ethernet8 = ["198.18.3.1/24"]
[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0", "Ethernet4:0", "Ethernet8:0"]
tx = ["Ethernet0", "Ethernet4", "Ethernet8"]
"""
    path = os.path.join(work, "scale-failover.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, **kw)


def in_host(i, cmd):
    return sh(f"ip netns exec {P}h{i} sh -c '{cmd}'")


def lpm_writes():
    r = subprocess.run([SW, "show", "--prefix", PREFIX, "--json", "routing"], capture_output=True, text=True)
    return json.loads(r.stdout).get("rib", {}).get("lpm_writes", 0) if r.returncode == 0 else 0


def measure(work):
    env = dict(os.environ, PFCSW_HOSTS_PREFIX=P, PFCSW_HOSTS_ROUTED="1")
    subprocess.run(["bash", HOSTS, "up", "3"], env=env, check=True, capture_output=True)
    sw = Proc([SW, "run", "--config", config(work), "--duration", "900"])
    try:
        if not sw.wait_for(r"routing: kernel tables loaded", 120):
            return {"missing": f"the switch did not start: {sw.text()[-500:]}"}
        for to in ("198.18.2.2", "198.18.3.2"):
            in_host(1, f"ping -c 2 -i 0.2 -W 2 {to}")
        for h in (2, 3):
            in_host(h, "ip addr add 10.60.0.1/32 dev lo")
        via = "nexthop via 198.18.2.2 dev Ethernet4 nexthop via 198.18.3.2 dev Ethernet8"
        lines = [f"route add {100 + (n >> 16)}.{(n >> 8) & 255}.{n & 255}.0/24 {via}" for n in range(ROUTES4)]
        lines.append(f"route add 10.60.0.0/16 {via}")
        path = os.path.join(work, "scale-failover.batch")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        base = lpm_writes()
        t0 = time.monotonic()
        subprocess.run(["ip", "-n", f"{P}sw", "-force", "-batch", path], check=True)
        while lpm_writes() - base < len(lines):
            if time.monotonic() - t0 > 300:
                return {"missing": f"the FIB had {lpm_writes() - base} of {len(lines)} routes after 300 s"}
            time.sleep(0.1)
        install_s = round(time.monotonic() - t0, 2)
        log(f"{len(lines)} routes in the FIB after {install_s} s")
        rx = {h: subprocess.Popen(["ip", "netns", "exec", f"{P}h{h}", "python3", TRAFFIC, "udp-sports", "5000", "7"],
                                  stdout=subprocess.PIPE, text=True) for h in (2, 3)}
        for h in (2, 3):
            end = time.monotonic() + 20
            while not in_host(h, "ss -Hlun sport = :5000").stdout and time.monotonic() < end:
                time.sleep(0.1)
        tx = subprocess.Popen(["ip", "netns", "exec", f"{P}h1", "python3", TRAFFIC, "udp-flows", "10.60.0.1",
                               "5000", "16", "4000"], stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)
        t_down = time.monotonic()
        in_host(2, f"ip link set {P}v2b down")
        tx.communicate(timeout=120)
        res = {h: json.loads(p.communicate(timeout=60)[0]) for h, p in rx.items()}
        got = {h: r["times"] for h, r in res.items()}
    finally:
        sw.stop(how="sigint")
        subprocess.run(["bash", HOSTS, "down"], env=env, capture_output=True)
    moved = [k for k in got[2] if k in got[3] and got[3][k][0] > got[2][k][1]]
    if not moved:
        return {"missing": f"no flow moved from host 2 to host 3 (host 2 {len(got[2])}, host 3 {len(got[3])} flows)"}
    to_h3 = [(got[3][k][0] - t_down) * 1000 for k in moved]
    gaps = [(got[3][k][0] - got[2][k][1]) * 1000 for k in moved]
    return {"scale_failover_ms": round(max(gaps), 1), "from_down_command_ms_max": round(max(to_h3), 1),
            "flows_moved": len(moved), "received": {h: r["received"] for h, r in res.items()},
            # Per moved flow, ms from the link-down command: last datagram at host 2, first at host 3.
            "moved_ms": {k: [round((got[2][k][1] - t_down) * 1000, 1), round((got[3][k][0] - t_down) * 1000, 1)]
                         for k in moved},
            "routes": len(lines), "install_s": install_s}


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    r = measure(work)
    if "missing" in r:
        r = {"scale_failover_ms": None, "missing": {"scale_failover_ms": r["missing"]}}
    else:
        r["missing"] = {}
    print(json.dumps(r))


if __name__ == "__main__":
    main()
