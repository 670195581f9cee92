#!/usr/bin/env python3
"""Tables at ToR sizes through the kernel: `scripts/bench.sh --scale` (docs/benchmarks.md,
"Tables at scale"). A routed pfcswitch with four router interfaces (net_null
ports, their net_tap representors in a namespace of their own) mirrors what is installed
there through netlink: the routes as FRR's zebra sends them (scripts/nl_routes.py: one
socket, batched), the neighbours with `ip -batch`:

  * 131 072 IPv4 /24s and 32 768 IPv6 /48s, each over the same 4 next hops (4-way ECMP);
  * 8192 IPv4 and 8192 IPv6 neighbours (permanent entries: the kernel's gc thresholds do
    not cap those), 16 384 in all = the default `max_neighbours`.

Figures: seconds from the batch's start to the kernel having it and to the switch's FIB
having it (its routing health's `lpm_writes`), the switch's resident memory before and
after, and its tables' memory as it allocated them (`scale_table_memory_mib`). Then scripts/scale_ir.py (callgrind Ir and cache misses per packet with traffic
spread over 32k MACs / 131k routes + 16k neighbours vs one destination) and
scripts/scale_failover.py (ECMP failover with 131k routes on a live veth switch) and
scripts/mac_flap_rate.py, merged under the issue's keys (`scale_l2_ir_ratio`,
`scale_routed_ir_ratio`, `scale_failover_ms`, `scale_mac_flap_rate_ratio`).
Environment (from scripts/bench.sh): BENCH_ROOT, BENCH_WORK. Needs root. Ends with ONE JSON
line; a figure not measured is null and named in "missing".
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

ROOT = os.environ["BENCH_ROOT"]
WORK = os.environ["BENCH_WORK"]
SW = os.environ.get("BENCH_SW") or os.path.join(ROOT, "target/release/pfcswitch")
NS = f"pfcswbt{os.getpid()}"
PREFIX = f"bench-tables-{os.getpid()}"
ROUTES4, ROUTES6, NEIGH4, NEIGH6 = 131072, 32768, 8192, 8192
PORTS = [f"Ethernet{4 * i}" for i in range(4)]


def log(msg):
    print(f"bench-tables: {msg}", file=sys.stderr, flush=True)


def config():
    out = ["[eal]", 'args = ["--no-huge", "-m", "2048", "--no-pci", "--lcores=0@0,1@1"]',
           f'file_prefix = "{PREFIX}"', "[lcores]", "control = 0", "[[lcores.worker]]", "lcore = 1",
           f"rx = [{', '.join(json.dumps(p + ':0') for p in PORTS)}]", f"tx = {json.dumps(PORTS)}"]
    for i, p in enumerate(PORTS):
        out += ["[[port]]", f'name = "{p}"', f'devargs = "net_null{i}"', 'speed = "100G"']
    out += ["[control_plane]", f'netns = "{NS}"', "max_ipv4_routes = 262144",
            "max_ipv6_routes = 65536", "[interface]"]
    out += [f'"{p}" = ["10.9.{i}.0/31", "fd00:{i}::/127"]' for i, p in enumerate(PORTS)]
    path = os.path.join(WORK, "tables.toml")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def routing():
    r = subprocess.run([SW, "show", "--prefix", PREFIX, "--json", "routing"], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def batch(name, lines):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def done(rib):
    """FIB writes plus the neighbours the switch refused (beyond `max_neighbours`: the
    kernel's own count too), so a batch's end is seen when a few were not mirrored."""
    return rib.get("lpm_writes", 0) + rib.get("neighbours_refused", 0)


def install(name, lines, writes):
    """Run `ip -batch`; seconds until the kernel returned and until the FIB has `writes` more."""
    base = done(routing().get("rib", {}))
    path = batch(name, lines)
    t0 = time.monotonic()
    subprocess.run(["ip", "-n", NS, "-force", "-batch", path], check=True)
    kernel = time.monotonic() - t0
    while time.monotonic() - t0 < 300:
        if done(routing().get("rib", {})) - base >= writes:
            return round(kernel, 2), round(time.monotonic() - t0, 2)
        time.sleep(0.05)
    return round(kernel, 2), None


def install_netlink(name, lines, writes):
    """Routes through scripts/nl_routes.py (one netlink socket, batched, as FRR's zebra
    sends them): seconds from its first send until the kernel acknowledged the last and
    until the FIB has `writes` more."""
    base = done(routing().get("rib", {}))
    path = batch(name, lines)
    p = subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, os.path.join(ROOT, "scripts", "nl_routes.py"),
                          path], stdout=subprocess.PIPE, text=True)
    t_fib, deadline = None, time.monotonic() + 600
    while time.monotonic() < deadline and (t_fib is None or p.poll() is None):
        if t_fib is None and done(routing().get("rib", {})) - base >= writes:
            t_fib = time.monotonic()
        time.sleep(0.05)
    out, _ = p.communicate(timeout=600)
    r = json.loads(out.strip().splitlines()[-1])
    if r["refused"]:
        log(f"{name}: the kernel refused {r['refused']} routes, first: {r['first_error']}")
    fib = round(t_fib - r["start"], 2) if t_fib is not None else None
    return round(r["seconds"], 2), fib


def main():
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    subprocess.run(["ip", "netns", "add", NS], check=True)
    sw = None
    try:
        sw = Proc([SW, "run", "--config", config(), "--duration", "900"])
        if not sw.wait_for(r"routing: kernel tables loaded", 120):
            raise SystemExit(f"bench-tables: the switch did not start:\n{sw.text()[-3000:]}")
        pid = sw.p.pid
        rss0 = rss_mib(pid)
        via4 = " ".join(f"nexthop via 10.9.{i}.1 dev {p}" for i, p in enumerate(PORTS))
        via6 = " ".join(f"nexthop via fd00:{i}::1 dev {p}" for i, p in enumerate(PORTS))
        r4 = [f"route add {100 + (n >> 16)}.{(n >> 8) & 255}.{n & 255}.0/24 {via4}" for n in range(ROUTES4)]
        r6 = [f"route add 2001:db8:{n >> 8:x}{n & 255:02x}::/48 {via6}" for n in range(ROUTES6)]
        log(f"{ROUTES4} IPv4 routes, 4-way ECMP")
        k4, f4 = install_netlink("routes4.batch", r4, ROUTES4)
        log(f"{ROUTES6} IPv6 routes, 4-way ECMP")
        k6, f6 = install_netlink("routes6.batch", r6, ROUTES6)
        rss_routes = rss_mib(pid)
        subprocess.run(["ip", "-n", NS, "addr", "add", "10.10.0.1/18", "dev", PORTS[0]], check=True)
        subprocess.run(["ip", "-n", NS, "addr", "add", "fd00:a::1/64", "dev", PORTS[0], "nodad"], check=True)
        nb = [f"neigh replace 10.10.{(n >> 8) + 1}.{n & 255} lladdr 02:4e:00:00:{n >> 8:02x}:{n & 255:02x} "
              f"dev {PORTS[0]} nud permanent" for n in range(NEIGH4)]
        nb += [f"neigh replace fd00:a::{n + 2:x} lladdr 02:4e:01:00:{n >> 8:02x}:{n & 255:02x} "
               f"dev {PORTS[0]} nud permanent" for n in range(NEIGH6)]
        log(f"{NEIGH4} + {NEIGH6} neighbours")
        kn, fn = install("neigh.batch", nb, NEIGH4 + NEIGH6)
        rss_all = rss_mib(pid)
        health = routing()
    finally:
        if sw is not None:
            sw.stop()
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    rib = health.get("rib", {})
    out = {
        "scale_route_install_s": f4,
        "scale_route_kernel_s": k4,
        "scale_route6_install_s": f6,
        "scale_route6_kernel_s": k6,
        "scale_neigh_install_s": fn,
        "scale_neigh_kernel_s": kn,
        "rss_mib": {"started": rss0, "routes": rss_routes, "routes_and_neighbours": rss_all},
        "rib": {k: rib.get(k) for k in ("events", "lpm_writes", "errors", "refused", "neighbours_refused", "last_error")},
        "fib_out_of_sync": health.get("fib_out_of_sync"),
        "scale_table_memory_mib": table_memory(health.get("memory", {})),
    }
    print(f"IPv4 {ROUTES4} routes (4-way ECMP): kernel {k4} s, FIB {f4} s", file=sys.stderr)
    print(f"IPv6 {ROUTES6} routes (4-way ECMP): kernel {k6} s, FIB {f6} s", file=sys.stderr)
    print(f"{NEIGH4 + NEIGH6} neighbours: kernel {kn} s, FIB {fn} s", file=sys.stderr)
    print(f"switch RSS: {rss0} MiB started, {rss_routes} with routes, {rss_all} with neighbours", file=sys.stderr)
    print("tables (MiB): " + ", ".join(f"{k} {v}" for k, v in out["scale_table_memory_mib"].items()), file=sys.stderr)
    out.update(others())
    print(json.dumps(out))


def table_memory(mem):
    """The switch's tables in MiB, as it allocated them (its routing health's `memory`):
    both copies of each FIB from DPDK's heap across their creation, the next hops (one per
    neighbour or gateway), the ECMP groups, the FDB's slots."""
    names = {"fdb": "fdb_bytes", "neighbours": "nexthops_bytes", "ipv4_fib": "fib4_bytes",
             "ipv6_fib": "fib6_bytes", "nexthop_groups": "groups_bytes"}
    return {k: (round(mem[b] / 2**20, 2) if b in mem else None) for k, b in names.items()}


def others():
    """scripts/scale_ir.py (Ir and cache misses per packet at scale vs one destination),
    scripts/scale_failover.py (ECMP failover with 131k routes) and scripts/mac_flap_rate.py
    (other traffic's rate while a MAC flaps between two workers' ports), their JSON merged;
    what they could not measure named in "missing"."""
    merged = {k: None for k in ("scale_l2_ir_ratio", "scale_routed_ir_ratio", "scale_failover_ms",
                                "scale_mac_flap_rate_ratio")}
    merged["missing"] = {}
    for script, args in (("scale_ir.py", [os.path.join(WORK, "scale-ir"), "10"]),
                         ("scale_failover.py", [os.path.join(WORK, "scale-failover")]),
                         ("mac_flap_rate.py", [os.path.join(WORK, "mac-flap"), "10"])):
        log(script)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script)] + args,
                           capture_output=True, text=True)
        try:
            fig = json.loads(r.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            merged["missing"][script] = f"exit {r.returncode}: {r.stderr.strip()[-300:]}"
            continue
        merged["missing"].update(fig.pop("missing", {}))
        merged[script.replace(".py", "")] = fig
        for k, v in fig.items():
            if k.startswith("scale_"):
                merged[k] = v
    return merged


if __name__ == "__main__":
    main()
