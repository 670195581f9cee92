#!/usr/bin/env python3
"""The routed leaf-spine `clos-2-4-4` on one machine (scripts/fabric.sh clos-2-4-4 ...):
ten switches, each in its own network namespace with FRR (zebra, bfdd and bgpd, eBGP per
link), eight hosts in namespaces of their own. The topology, addresses and configuration
files are scripts/clos_topo.py; the scenarios are scripts/clos_scenarios.py. This module
brings the fabric up and tears it down (also on Ctrl-C or SIGTERM), and gives the
scenarios their tools: hosts' traffic (pfcgen, iperf3), captures, counters, CPU shares.

Dataplanes (--dataplane):
  kernel     each switch namespace is a Linux router: its ports are veths named like the
             ports with the /31s on them, shaped by tbf to 5 Mbit/s; FRR's routes forward in
             the kernel (a baseline without PFC).
  pfcswitch  each switch is a `pfcswitch run` in its namespace ([control_plane] netns): its
             ports are af_packet ports on veths, router interfaces ([interface]) whose
             kernel representors carry BGP; FRR programs the namespace's kernel, the switch
             mirrors it over netlink and routes in its dataplane, shaped by its own shaper,
             PFC on TC 3.

Configuration (--config-db): each pfcswitch starts from a generated SONiC config_db.json
(`run --config-db FILE --ports MAP`, the map carrying the af_packet devargs, shaper, EAL and
lcores) and each FRR from what `pfcswitch import sonic FILE --frr DIR` writes of it, instead
of the TOML and FRR files of clos_topo.py; bfdd runs, but no session asks it for BFD.

Docs: docs/fabric.md.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import clos_topo as topo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("PFCSW_BIN") or os.path.join(ROOT, "target", "release", "pfcswitch")
PFCGEN = os.environ.get("PFCGEN_BIN") or os.path.join(os.path.dirname(BIN), "pfcgen")
TRAFFIC = os.path.join(ROOT, "scripts", "host_traffic.py")
NS = "clos-"
LOCK = "/run/pfcswitch-clos"
FRR_BIN = "/usr/lib/frr"
FRR_RUN = "/var/run/frr"
# tbf on kernel-router ports and hosts: the link rate, a burst of a few frames, a queue of
# 64 KB (100 ms at 5 Mbit/s).
TBF = ["tbf", "rate", "5mbit", "burst", "4kb", "limit", f"{topo.TBF_LIMIT // 1024}kb"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(*args, check=True, timeout=60):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {(r.stderr or r.stdout).strip()}")
    return r


def nsx(ns, *args):
    """`args` run in namespace `ns`."""
    return ["ip", "netns", "exec", ns, *args]


def namespaces():
    out = run("ip", "netns", "list").stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(NS)]


def cleanup():
    """Remove what a fabric left behind (a run killed with SIGKILL): every process in a
    clos-* namespace (FRR, pfcswitch, pfcgen, iperf3, by their ids), the namespaces, FRR's
    and DPDK's run directories of these names, the lock."""
    for ns in namespaces():
        pids = run("ip", "netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    time.sleep(0.3)
    for ns in namespaces():
        run("ip", "netns", "del", ns, check=False)
    for base in (FRR_RUN, "/var/run/dpdk"):
        if os.path.isdir(base):
            for d in os.listdir(base):
                if d.startswith(NS):
                    shutil.rmtree(os.path.join(base, d), ignore_errors=True)
    shutil.rmtree(LOCK, ignore_errors=True)


class Fabric:
    """One bring-up of clos-2-4-4. `up()` makes everything, `down()` removes everything it
    made; `children` are the scenario's processes (killed at teardown if still running)."""

    def __init__(self, work, dataplane="kernel", pfc=True, timeline=False, ecn=False, config_db=False, bfd=True,
                 kernel_nhg=True):
        self.t = topo.Clos()
        self.work, self.dataplane, self.pfc, self.timeline, self.ecn = work, dataplane, pfc, timeline, ecn
        self.bfd, self.kernel_nhg = bfd, kernel_nhg
        self.config_db = config_db and dataplane == "pfcswitch"
        self.switch_procs, self.frr_procs, self.children = {}, [], []
        self.locked = False
        self.started = {}
        self.macs = {}
        self.reachable_pairs = 0

    # ---- names
    def ns(self, name):
        return NS + name

    def iface(self, port):
        """The switch's end of a port's veth: the port's own name on a kernel router, the
        raw interface pfcswitch's af_packet port opens otherwise."""
        return port.name if self.dataplane == "kernel" else port.raw_iface()

    # ---- bring-up
    def up(self):
        if os.path.exists(LOCK):
            raise SystemExit(f"{LOCK} exists: another clos fabric is running (or run "
                             "`scripts/fabric.sh clos-2-4-4 down` to remove a dead one)")
        os.makedirs(LOCK)
        self.locked = True
        t0 = time.monotonic()
        for name in list(self.t.switches) + list(self.t.hosts):
            run("ip", "netns", "add", self.ns(name))
            run("ip", "-n", self.ns(name), "link", "set", "lo", "up")
        for lk in self.t.links:
            a, b = self.t.switches[lk.a].port(lk.a_port), self.t.switches[lk.b].port(lk.b_port)
            run("ip", "link", "add", self.iface(a), "netns", self.ns(lk.a), "type", "veth", "peer", "name",
                self.iface(b), "netns", self.ns(lk.b))
        for h in self.t.hosts.values():
            p = self.t.switches[h.tor].port(h.port)
            run("ip", "link", "add", "eth0", "netns", self.ns(h.name), "type", "veth", "peer", "name",
                self.iface(p), "netns", self.ns(h.tor))
        for sw in self.t.switches.values():
            self.switch_ns(sw)
        for h in self.t.hosts.values():
            self.host_ns(h)
        if self.dataplane == "pfcswitch":
            for sw in self.t.switches.values():
                self.start_switch(sw)
        self.start_frr()
        self.wait_bgp(90)
        log(f"{topo.NAME}: BGP converged ({time.monotonic() - t0:.1f} s from the first namespace)")
        self.ping_all()

    def switch_ns(self, sw):
        ns = self.ns(sw.name)
        for key, val in (("net.ipv4.ip_forward", 1), ("net.ipv4.fib_multipath_hash_policy", 1),
                         ("net.ipv4.conf.all.rp_filter", 0), ("net.ipv4.conf.default.rp_filter", 0),
                         ("net.ipv6.conf.all.disable_ipv6", 1), ("net.ipv6.conf.default.disable_ipv6", 1)):
            run(*nsx(ns, "sysctl", "-qw", f"{key}={val}"))
        if self.dataplane == "pfcswitch":
            # The raw veth ends belong to pfcswitch (af_packet). As ports of a bridge that
            # stays down, the namespace's kernel never sees their frames (it would forward
            # and answer them beside the switch); packet taps still do.
            run("ip", "-n", ns, "link", "add", "blk", "type", "bridge")
        for p in sw.ports:
            dev = self.iface(p)
            if self.dataplane == "kernel":
                run("ip", "-n", ns, "addr", "add", p.addr, "dev", dev)
                run("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *TBF)
            else:
                run("ip", "-n", ns, "link", "set", dev, "master", "blk")
                run("ip", "-n", ns, "link", "set", dev, "promisc", "on")
                run(*nsx(ns, "ethtool", "-K", dev, "tx", "off"), check=False)
            run("ip", "-n", ns, "link", "set", dev, "up")
            self.macs[(sw.name, p.name)] = self.read_mac(ns, dev)

    def host_ns(self, h):
        ns = self.ns(h.name)
        run("ip", "-n", ns, "addr", "add", h.addr, "dev", "eth0")
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        run("ip", "-n", ns, "route", "add", "default", "via", h.gateway)
        run("tc", "-n", ns, "qdisc", "replace", "dev", "eth0", "root", *TBF)
        # Checksums computed by the host, as a NIC puts them on the wire: a veth otherwise
        # leaves them to an offload that never happens once af_packet took the frame.
        run(*nsx(ns, "ethtool", "-K", "eth0", "tx", "off"), check=False)
        run(*nsx(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"))
        self.macs[h.name] = self.read_mac(ns, "eth0")

    def read_mac(self, ns, dev):
        return run(*nsx(ns, "cat", f"/sys/class/net/{dev}/address")).stdout.strip()

    def gateway_mac(self, host):
        """The MAC a host sends to: its ToR port's (the veth end's; pfcswitch's af_packet
        port takes the interface's MAC, the router MAC of that port)."""
        h = self.t.hosts[host]
        return self.macs[(h.tor, h.port)]

    def start_switch(self, sw):
        """pfcswitch in the switch's namespace. DPDK 22.11's af_packet names its fanout
        group (pid ^ ifindex) & 0xffff: a collision fails the probe; start again (new pid)."""
        ns = self.ns(sw.name)
        i = list(self.t.switches).index(sw.name)
        cpus = (i % 2, (i + 1) % 2)
        if self.config_db:
            db, ports = self.config_db_files(sw)
            with open(db, "w") as f:
                json.dump(topo.config_db(sw, pfc=self.pfc, ecn=self.ecn), f, indent=2)
            with open(ports, "w") as f:
                f.write(topo.port_map_toml(sw, ns, cpus))
            cmd = [BIN, "run", "--config-db", db, "--ports", ports]
        else:
            path = os.path.join(self.work, sw.name + ".toml")
            with open(path, "w") as f:
                f.write(topo.pfcswitch_toml(sw, ns, cpus, pfc=self.pfc, ecn=self.ecn))
            cmd = [BIN, "run", "--config", path]
        cmd += ["--stats-json", os.path.join(self.work, sw.name + ".json")]
        if self.timeline:
            cmd += ["--timeline", os.path.join(self.work, sw.name + ".csv"), "--timeline-interval-us", "5000"]
        logp = os.path.join(self.work, sw.name + ".log")
        for _ in range(5):
            with open(logp, "w") as logf:
                p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=dict(os.environ, RUST_LOG="info"))
            self.switch_procs[sw.name] = p
            ok, text = wait_log(p, logp, "forwarding:", 60)
            if ok:
                self.started[sw.name] = log_time(text, "forwarding:")
                log(f"{sw.name}: forwarding")
                return
            if "PACKET_FANOUT" not in text:
                break
        raise SystemExit(f"{sw.name} did not start ('forwarding:' not logged):\n{text[-3000:]}")

    def config_db_files(self, sw):
        """Where switch `sw`'s config_db.json and port map are (--config-db)."""
        return (os.path.join(self.work, sw.name + ".config_db.json"), os.path.join(self.work, sw.name + ".ports.toml"))

    def start_frr(self):
        """zebra, bfdd and bgpd per switch namespace, each instance in its own FRR pathspace (-N
        clos-<switch>: sockets in /var/run/frr/clos-<switch>/, so `ip netns exec clos-s1
        vtysh -N clos-s1` reaches it), configuration and logs in the run directory."""
        for sw in self.t.switches.values():
            ns = self.ns(sw.name)
            d = os.path.join(self.work, "frr", sw.name)
            os.makedirs(d, exist_ok=True)
            run_dir = os.path.join(FRR_RUN, ns)
            os.makedirs(run_dir, exist_ok=True)
            if self.config_db:
                # bgpd.conf and zebra.conf from the switch's config_db.json, as SONiC's
                # templates would write them (the daemons log to --log below).
                db, ports = self.config_db_files(sw)
                run(BIN, "import", "sonic", db, "--ports", ports, "-o", os.path.join(d, "pfcswitch.toml"), "--frr", d)
            else:
                with open(os.path.join(d, "zebra.conf"), "w") as f:
                    f.write(topo.zebra_conf(sw, os.path.join(d, "zebra.log"), kernel_nhg=self.kernel_nhg))
                with open(os.path.join(d, "bgpd.conf"), "w") as f:
                    f.write(topo.bgpd_conf(sw, os.path.join(d, "bgpd.log"), bfd=self.bfd))
            with open(os.path.join(d, "bfdd.conf"), "w") as f:
                f.write(topo.bfdd_conf(sw, os.path.join(d, "bfdd.log")))
            for path in (d, os.path.dirname(d), run_dir, *[os.path.join(d, x) for x in os.listdir(d)]):
                shutil.chown(path, "frr", "frr")
        os.chmod(self.work, 0o755)
        for daemon in ("zebra", "bfdd", "bgpd"):
            for sw in self.t.switches.values():
                ns, d = self.ns(sw.name), os.path.join(self.work, "frr", sw.name)
                cmd = nsx(ns, os.path.join(FRR_BIN, daemon), "-N", ns, "-f", os.path.join(d, daemon + ".conf"),
                          "-i", os.path.join(FRR_RUN, ns, daemon + ".pid"), "--log", f"file:{d}/{daemon}.log")
                if daemon == "bgpd":
                    cmd += ["-F", "datacenter"]
                with open(os.path.join(d, daemon + ".out"), "w") as out:
                    self.frr_procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT))
            time.sleep(0.5)

    def expected_paths(self, sw, t):
        """Equal-cost paths switch `sw` must have to ToR `t`'s /24 once BGP converged."""
        s = self.t.switches[sw]
        if s.tier == "tor":
            return 2
        if s.tier == "leaf":
            return 1 if any(p.peer == t for p in s.ports) else 2
        return 2

    def route_paths(self, sw, prefix):
        r = run("ip", "-n", self.ns(sw), "-j", "route", "show", prefix, check=False)
        try:
            routes = json.loads(r.stdout or "[]")
        except json.JSONDecodeError:
            return 0
        if not routes:
            return 0
        return len(routes[0].get("nexthops", [])) or (1 if "gateway" in routes[0] else 0)

    def fib_paths(self):
        """What each pfcswitch's dataplane holds for every ToR's /24 (`pfcswitch show ip
        route --json` over its telemetry socket): next hops in its FIB, resolved, per
        prefix. FRR learned them over BGP and installed them in the namespace's kernel; the
        switch mirrored them over netlink (no route is in its TOML)."""
        return {sw: self.fib_paths_of(sw) for sw in self.t.switches}

    def fib_paths_of(self, sw):
        """fib_paths() of one switch: per other ToR, the resolved next hops to its /24."""
        r = run(BIN, "show", "ip", "route", "--json", "--prefix", self.ns(sw), check=False)
        try:
            rows = json.loads(r.stdout or "[]")
        except json.JSONDecodeError:
            rows = []
        paths = {}
        for row in rows:
            f = row.split("|")
            if len(f) >= 7 and f[1] == "K" and f[6] == "1" and f[0] != "0.0.0.0/0":
                paths.setdefault(f[0], set()).add(f[4])
        return {t: len(paths.get(topo.tor_subnet(int(t[1:])), ())) for t in self.t.tors() if t != sw}

    def fib_converged(self, timeout=10.0):
        """Whether every switch's FIB has, within `timeout` s, the expected number of
        equal-cost next hops to every other ToR's /24 (expected_paths; the kernel has them
        already: wait_bgp), and the last reading."""
        end = time.monotonic() + timeout
        while True:
            fib = self.fib_paths()
            ok = all(n >= self.expected_paths(sw, t) for sw, ts in fib.items() for t, n in ts.items())
            if ok or time.monotonic() > end:
                return ok, fib
            time.sleep(0.5)

    def wait_bgp(self, timeout):
        end = time.monotonic() + timeout
        while True:
            missing = [(sw, t) for sw in self.t.switches for t in self.t.tors() if sw != t
                       and self.route_paths(sw, topo.tor_subnet(int(t[1:]))) < self.expected_paths(sw, t)]
            if not missing:
                return
            if time.monotonic() > end:
                raise SystemExit(f"BGP did not converge in {timeout} s: missing or single paths {missing[:8]} …; "
                                 f"logs in {self.work}/frr")
            self.check_alive()
            time.sleep(0.5)

    def check_alive(self):
        for name, p in self.switch_procs.items():
            if p.poll() is not None:
                raise SystemExit(f"{name} exited ({p.returncode}); log: {self.work}/{name}.log")
        for p in self.frr_procs:
            if p.poll() is not None:
                raise SystemExit(f"{' '.join(p.args[3:5])} exited ({p.returncode}); logs in {self.work}/frr")

    def ping_all(self):
        """Every host reaches every other one (both ways, through the fabric)."""
        hosts = list(self.t.hosts.values())
        for a in hosts:
            pending = {b.name: b.ip for b in hosts if b is not a}
            for _ in range(5):
                procs = {n: subprocess.Popen(nsx(self.ns(a.name), "ping", "-c", "1", "-W", "2", ip),
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                         for n, ip in pending.items()}
                pending = {n: pending[n] for n, p in procs.items() if p.wait() != 0}
                if not pending:
                    break
                time.sleep(1)
            if pending:
                raise SystemExit(f"{a.name} cannot reach {sorted(pending)}")
        self.reachable_pairs = len(hosts) * (len(hosts) - 1)
        log(f"ping: each of the {len(hosts)} hosts reaches the {len(hosts) - 1} others")

    # ---- teardown
    def stop_switches(self):
        for p in self.switch_procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for name, p in self.switch_procs.items():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log(f"{name}: did not stop on SIGINT, killed")
                p.kill()
                p.wait()

    def down(self):
        for p in self.children:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.children:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for p in self.frr_procs:
            if p.poll() is None:
                p.terminate()
        for p in self.frr_procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.stop_switches()
        if self.locked:
            for name in list(self.t.switches) + list(self.t.hosts):
                run("ip", "netns", "del", self.ns(name), check=False)
                shutil.rmtree(os.path.join(FRR_RUN, self.ns(name)), ignore_errors=True)
                shutil.rmtree(os.path.join("/var/run/dpdk", self.ns(name)), ignore_errors=True)
            shutil.rmtree(LOCK, ignore_errors=True)
            self.locked = False

    # ---- tools for the scenarios
    def spawn(self, cmd, out=None):
        """A scenario's process (stdout to `out` or a pipe), stopped at teardown."""
        f = open(out, "w") if out else subprocess.PIPE
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.PIPE if not out else subprocess.STDOUT, text=True)
        self.children.append(p)
        return p

    def pfcgen(self, host, streams, duration, json_path, cpu, rx_streams=0, pfc=True, extra=()):
        """pfcgen on a host's eth0 (af_packet), obeying PFC on priority 3 at the ToR port's
        nominal speed (the quanta's unit), napping between frames; `extra`: more options
        (--cnp, --dcqcn-time-scale, --stats-interval with --rates-csv)."""
        cmd = nsx(self.ns(host), PFCGEN, "run", "--port", "net_af_packet0,iface=eth0", "--speed",
                  topo.NOMINAL_SPEED, "--pfc-enable", "3" if pfc else "none", "--idle", "nap",
                  "--stats-json", json_path, "--link-wait", "2s")
        if "--stats-interval" not in extra:
            cmd += ["--stats-interval", "0"]
        for s in streams:
            cmd += ["--stream", s]
        if duration is not None:
            cmd += ["--duration", str(duration)]
        if rx_streams:
            cmd += ["--rx-streams", str(rx_streams), "--drain", "2s"]
        cmd += list(extra)
        cmd += ["--", "--no-huge", "-m", "128", "--no-pci", f"--lcores=0@{cpu}", f"--file-prefix={self.ns(host)}"]
        return self.spawn(cmd, json_path + ".log")

    def stream(self, src, dst, rate, size=1000, dscp=3, sid=0, dst_port=5001, src_port=49152, name=None, count=None):
        """A pfcgen --stream from host `src` to host `dst`."""
        s, d = self.t.hosts[src], self.t.hosts[dst]
        text = (f"name={name or src},id={sid},rate={rate},size={size},dscp={dscp},src_mac={self.macs[src]},"
                f"dst_mac={self.gateway_mac(src)},src_ip={s.ip},dst_ip={d.ip},src_port={src_port},dst_port={dst_port}")
        return text + (f",count={count}" if count else "")

    def capture(self, ns, dev, path, bpf):
        """dumpcap on `dev` in `ns` into a classic pcap (µs timestamps); returns once it
        captures."""
        p = self.spawn(nsx(ns, "dumpcap", "-q", "-P", "-s", "128", "-i", dev, "-f", bpf, "-w", path),
                       path + ".log")
        end = time.monotonic() + 10
        while time.monotonic() < end:
            with open(path + ".log") as f:
                if "Capturing on" in f.read():
                    return p
            if p.poll() is not None:
                break
            time.sleep(0.05)
        with open(path + ".log") as f:
            raise SystemExit(f"dumpcap on {ns}/{dev} did not start: {f.read().strip()}")

    def link_counters(self):
        """Per switch-to-switch link and direction ("l1>s1"): packets the receiving end
        counted (kernel veth counters: the same in both dataplanes)."""
        out = {}
        for sw in self.t.switches.values():
            stats = json.loads(run("ip", "-n", self.ns(sw.name), "-s", "-j", "link", "show").stdout)
            by = {s["ifname"]: s["stats64"]["rx"]["packets"] for s in stats if "stats64" in s}
            for p in sw.ports:
                if not p.to_host:
                    out[f"{p.peer}>{sw.name}"] = by.get(self.iface(p), 0)
        return out

    def tx_dropped(self, port):
        """What the kernel dropped of what the switch sent out of `port`: a veth whose peer
        is down drops it (the wire is cut) before the switch has seen its link fall."""
        st = json.loads(run("ip", "-n", self.ns(port.switch), "-s", "-j", "link", "show", self.iface(port)).stdout)
        return st[0]["stats64"]["tx"]["dropped"]

    def cpu_ticks(self):
        """CPU time (clock ticks, user + system) so far per switch: its pfcswitch process
        and its FRR daemons; and per host's processes (pfcgen, iperf3)."""
        ticks = {}
        for name in list(self.t.switches) + list(self.t.hosts):
            total = 0
            for pid in run("ip", "netns", "pids", self.ns(name), check=False).stdout.split():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    total += int(fields[11]) + int(fields[12])
                except (OSError, IndexError, ValueError):
                    pass
            ticks[name] = total
        return ticks

    def switch_stats(self):
        """The stats JSON of every pfcswitch (after stop_switches)."""
        out = {}
        for name in self.t.switches:
            path = os.path.join(self.work, name + ".json")
            if os.path.exists(path):
                with open(path) as f:
                    out[name] = json.load(f)
        return out

    def telemetry(self, sw, cmd):
        """One DPDK telemetry query to switch `sw` (its EAL socket, as `pfcswitch show`
        asks): the reply's value. A few ms, cheap enough to poll many switches."""
        path = f"/var/run/dpdk/{self.ns(sw)}/dpdk_telemetry.v2"
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(10)
            s.connect(path)
            s.recv(4096)  # the greeting
            s.send(cmd.encode())
            reply = json.loads(s.recv(1 << 20))
        return reply.get(cmd.split(",")[0])

    def set_pfc(self, enable):
        """PFC on TC 3 of every switch port on or off, live (`pfcswitch config pfc`,
        docs/live-config.md): the lossless class becomes lossy and no switch pauses."""
        for sw in self.t.switches.values():
            for p in sw.ports:
                run(BIN, "config", "--prefix", self.ns(sw.name), "pfc", p.name, "--enable",
                    str(topo.LOSSLESS_TC) if enable else "none")
        self.pfc = enable
        log(f"PFC {'on' if enable else 'off'} on every switch port (live)")

    def tbf_drops(self):
        """Kernel routers: packets each switch's tbf queues dropped, per port."""
        out = {}
        for sw in self.t.switches.values():
            q = json.loads(run("tc", "-n", self.ns(sw.name), "-s", "-j", "qdisc", "show").stdout or "[]")
            by = {x.get("dev"): x.get("drops", 0) for x in q if x.get("kind") == "tbf"}
            out[sw.name] = {p.name: by.get(self.iface(p), 0) for p in sw.ports}
        return out


def wait_log(p, path, needle, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(path) as f:
            text = f.read()
        if needle in text:
            return True, text
        if p.poll() is not None:
            break
        time.sleep(0.1)
    if p.poll() is None:
        p.kill()
        p.wait()
    with open(path) as f:
        return False, f.read()


def log_time(text, needle):
    """Wall-clock time (epoch s) of the first log line containing `needle` (env_logger's
    `[2026-11-25T20:52:15.771Z ...` prefix): the switch's timeline starts just before it."""
    import datetime
    line = next(x for x in text.splitlines() if needle in x)
    stamp = line[1:line.index(" ")].rstrip("Z")
    return datetime.datetime.fromisoformat(stamp).replace(tzinfo=datetime.timezone.utc).timestamp()


def cpu_share(before, after, seconds):
    """Per name: percent of one CPU between two cpu_ticks() readings."""
    hz = os.sysconf("SC_CLK_TCK")
    return {n: round(100.0 * (after[n] - before.get(n, 0)) / hz / seconds, 1) for n in after}
