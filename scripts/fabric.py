#!/usr/bin/env python3
"""A leaf-spine fabric of pfcswitch instances on one machine, with kernel hosts.

    scripts/fabric.sh SCENARIO [--pfc on|off] [--duration S] [--keep]
    scripts/fabric.sh clos-2-4-4 SCENARIO ...   the routed leaf-spine of ten switches with
                                                BGP (scripts/clos_scenarios.py --help)

SCENARIO:
  incast  h1 and h2 send UDP at 3 Mbit/s each (--rate; DSCP 3 = the lossless TC 3) to h3,
          whose leaf port is shaped to 5 Mbit/s: the published P4/bmv2 PFC experiment on a
          leaf-spine. With PFC, PAUSE propagates hop by hop back toward the senders' leaf;
          with --pfc off leaf 2 drops. The senders are kernel sockets (--senders kernel),
          which ignore PAUSE: leaf 1's buffer holds the excess only as long as it lasts
          (3.5 MiB: about 28 s of the 1 Mbit/s excess), then leaf 1 drops lossless
          traffic; or pfcgen on the hosts' veths (--senders pfcgen), which obeys leaf 1's
          PAUSE: nothing is lost however long the run.
  tcp     h1 -> h3 TCP (DSCP 3) through the fabric: goodput and lossless drops.
  deadlock  Two switches A, B joined by two memif links (loop-a/loop-b.toml), h1 on A,
          h2 on B. h1 sends one burst of lossless frames to a MAC nobody has: flooded
          round the loop until every link direction is paused with packets queued and
          nothing moves (a cyclic buffer dependency). Then h1 -> h2 lossless UDP shows
          whether the fabric still carries the class. --watchdog on adds `[pfcwd] action
          = "drop"` (the storm is detected and the loop drained); --flood-lossless off
          sets `flood_lossless = false` (the burst is dropped, no loop forms).

Topology (dpdk-config/fabric/*.toml; each switch its own `pfcswitch run`, no hugepages):

  h1 ─ af_packet ┐
                 ├ leaf1 ══memif══ spine1 ══memif══ leaf2 ─ af_packet (5M) ─ h3
  h2 ─ af_packet ┘

Hosts are network namespaces fabh1..fabh3 (scripts/hosts.sh, 198.18.0.1-3). The script
starts everything, pings every pair, runs the scenario, prints a table and one JSON line,
and tears everything down, also on Ctrl-C or SIGTERM. Needs root.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The binary: $PFCSW_BIN (the tests pass theirs), else the release build.
BIN = os.environ.get("PFCSW_BIN") or os.path.join(ROOT, "target", "release", "pfcswitch")
TRAFFIC = os.path.join(ROOT, "scripts", "host_traffic.py")
PFCGEN = os.environ.get("PFCGEN_BIN") or os.path.join(os.path.dirname(BIN), "pfcgen")
PREFIX = "fab"
# Servers of each memif link start first.
TOPOLOGIES = {"leaf-spine": ["leaf1", "spine1", "leaf2"], "loop": ["loop-a", "loop-b"]}
SOCKETS = "/run/pfcswitch-fabric"
HOSTS = {"h1": "198.18.0.1", "h2": "198.18.0.2", "h3": "198.18.0.3"}
LOSSLESS_TC = 3


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def log_time(text, needle):
    """Wall-clock time (epoch s) of the first log line containing `needle`: env_logger's
    `[2026-11-25T20:52:15.771Z ...` prefix. The switch's timeline starts just before it."""
    import datetime
    line = next(l for l in text.splitlines() if needle in l)
    stamp = line[1:line.index(" ")].rstrip("Z")
    return datetime.datetime.fromisoformat(stamp).replace(tzinfo=datetime.timezone.utc).timestamp()


def host_cmd(host, *args):
    return ["ip", "netns", "exec", PREFIX + host, "python3", TRAFFIC, *args]


CHILDREN = []


def spawn(cmd):
    """A host's traffic process, killed at teardown if still running (Ctrl-C)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    CHILDREN.append(p)
    return p


class Fabric:
    def __init__(self, work, pfc, switches, nhosts, extra_toml="", timeline=False):
        self.work, self.pfc = work, pfc
        self.switches, self.nhosts = switches, nhosts
        self.extra_toml, self.timeline = extra_toml, timeline
        self.procs = {}
        self.hosts_up = False
        self.made_sockets = False
        self.loop = "loop-a" in switches
        self.started, self.marks = {}, []

    def hosts(self, action, *extra):
        env = dict(os.environ, PFCSW_HOSTS_PREFIX=PREFIX)
        out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "hosts.sh"), action, *extra],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"hosts.sh {action}: {out.stderr.strip()}")

    def config(self, name):
        with open(os.path.join(ROOT, "dpdk-config", "fabric", name + ".toml")) as f:
            text = f.read()
        if self.pfc == "off":
            text = text.replace("pfc_enable = [3]", "pfc_enable = []")
        if getattr(self, "flood_lossless", "on") == "off":
            text = text.replace("[switch]\n", "[switch]\nflood_lossless = false\n", 1)
        text += self.extra_toml
        path = os.path.join(self.work, name + ".toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def up(self):
        if os.path.exists(SOCKETS):
            raise SystemExit(f"{SOCKETS} exists: another fabric is running (or remove it)")
        os.makedirs(SOCKETS)
        self.made_sockets = True
        self.hosts("up", str(self.nhosts))
        self.hosts_up = True
        if self.loop:
            self.quiet_hosts()
        for name in self.switches:
            self.start(name)
        if self.loop:
            self.learn_hosts()

    def quiet_hosts(self):
        """A looped L2 fabric circulates every flooded frame for ever (nothing like STP
        here): the hosts send no broadcast or multicast (static neighbours, no IPv6) and,
        before talking, one frame to themselves, which teaches their own switch where
        they are and is dropped there (`same_port`) instead of flooded."""
        macs = {}
        for i in range(1, self.nhosts + 1):
            ns, dev = f"{PREFIX}h{i}", f"{PREFIX}v{i}b"
            for key in ("all", "default", dev):
                subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1"],
                               check=True)
            macs[i] = subprocess.run(["ip", "netns", "exec", ns, "cat", f"/sys/class/net/{dev}/address"],
                                     capture_output=True, text=True, check=True).stdout.strip()
        self.macs = macs
        for i in macs:
            for j in macs:
                if i != j:
                    subprocess.run(["ip", "-n", f"{PREFIX}h{i}", "neigh", "replace", f"198.18.0.{j}", "lladdr",
                                    macs[j], "dev", f"{PREFIX}v{i}b", "nud", "permanent"], check=True)

    def learn_hosts(self):
        for i, mac in self.macs.items():
            run_json(host_cmd(f"h{i}", "burst", f"{PREFIX}v{i}b", mac, mac, "0", "64", "1"), 30)
        time.sleep(0.2)

    def start(self, name):
        """Start one switch. DPDK's af_packet names its PACKET_FANOUT group after the
        process id XOR the interface index; two switches whose ids collide on different
        interfaces fail to probe ("could not set PACKET_FANOUT"): start again (new pid)."""
        cfg = self.config(name)
        cmd = [BIN, "run", "--config", cfg, "--stats-json", os.path.join(self.work, name + ".json")]
        if self.timeline:
            cmd += ["--timeline", os.path.join(self.work, name + ".csv"), "--timeline-interval-us", "5000"]
        for attempt in range(5):
            with open(os.path.join(self.work, name + ".log"), "w") as logf:
                self.procs[name] = subprocess.Popen(
                    cmd, stdout=logf, stderr=subprocess.STDOUT, env=dict(os.environ, RUST_LOG="info"))
            ok, text = self.wait_log(name, "forwarding:", 30)
            if ok:
                log(f"{name}: forwarding")
                self.started[name] = log_time(text, "forwarding:")
                return
            self.procs[name].wait()
            if "PACKET_FANOUT" not in text:
                break
            log(f"{name}: af_packet fanout group id taken by another switch, starting again")
        raise SystemExit(f"{name} did not start ('forwarding:' not logged):\n{text[-2000:]}")

    def wait_log(self, name, text, timeout):
        path = os.path.join(self.work, name + ".log")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with open(path) as f:
                content = f.read()
            if text in content:
                return True, content
            if self.procs[name].poll() is not None:
                break
            time.sleep(0.1)
        if self.procs[name].poll() is None:
            self.procs[name].kill()
        with open(path) as f:
            return False, f.read()

    def ping_all(self):
        """Every pair, both ways; the first pings also teach the fabric the hosts' MACs."""
        hosts = dict(list(HOSTS.items())[:self.nhosts])
        for a in hosts:
            for b, ip in hosts.items():
                if a == b:
                    continue
                for attempt in range(5):
                    r = subprocess.run(["ip", "netns", "exec", PREFIX + a, "ping", "-c", "2", "-i", "0.2",
                                        "-W", "2", ip], capture_output=True, text=True)
                    if r.returncode == 0:
                        break
                    time.sleep(1)
                else:
                    raise SystemExit(f"{a} cannot ping {b} ({ip}):\n{r.stdout}{r.stderr}")
        log(f"ping: every pair of {', '.join(hosts)} reaches the other")

    def stop_switches(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for name, p in self.procs.items():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                log(f"{name}: did not stop on SIGINT, killed")
                p.kill()
                p.wait()

    def down(self):
        for p in CHILDREN:
            if p.poll() is None:
                p.kill()
        self.stop_switches()
        if self.hosts_up:
            self.hosts("down")
            self.hosts_up = False
        # Only what this run made: a run refused because another fabric is up leaves it be.
        if self.made_sockets:
            shutil.rmtree(SOCKETS, ignore_errors=True)
        for name in self.procs:
            shutil.rmtree(f"/var/run/dpdk/fab-{name}", ignore_errors=True)

    def show(self, name, *what):
        """`pfcswitch show --json` of a running switch."""
        r = subprocess.run([BIN, "show", "--prefix", f"fab-{name}", "--json", *what],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise SystemExit(f"show {what} on {name}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def stats(self):
        out = {}
        for name in self.switches:
            with open(os.path.join(self.work, name + ".json")) as f:
                out[name] = json.load(f)
        return out


def summarize(stats):
    """Per switch: PFC frames for the lossless priority sent/received, lossless and lossy
    drops (per-TC drops summed over the switch's ingress ports), conservation."""
    rows = {}
    for name, j in stats.items():
        r = {"pause_tx": 0, "pause_rx": 0, "lossless_drops": 0, "lossy_drops": 0}
        for p in j["ports"]:
            r["pause_tx"] += p["pfc"]["tx_pause"][LOSSLESS_TC]
            r["pause_rx"] += p["pfc"]["rx_pause"][LOSSLESS_TC]
            for t in p["tc"]:
                key = "lossless_drops" if t["tc"] == LOSSLESS_TC else "lossy_drops"
                r[key] += t["dropped"]
        r["conserved"] = bool(j["conservation"]["ok"])
        rows[name] = r
    return rows


def by_switch(rows, *extra):
    """The JSON line's per-switch part: {"pause_tx": {switch: n}, "pause_rx", "lossless_drops",
    *extra, "conserved": every switch balanced}."""
    out = {k: {n: r[k] for n, r in rows.items()} for k in ("pause_tx", "pause_rx", "lossless_drops", *extra)}
    out["conserved"] = all(r["conserved"] for r in rows.values())
    return out


def print_table(rows):
    print(f"{'switch':<8} {'PAUSE tx':>9} {'PAUSE rx':>9} {'lossless drops':>15} {'lossy drops':>12} {'conserved':>10}")
    for name, r in rows.items():
        print(f"{name:<8} {r['pause_tx']:>9} {r['pause_rx']:>9} {r['lossless_drops']:>15} "
              f"{r['lossy_drops']:>12} {str(r['conserved']):>10}")


def run_json(cmd, timeout):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def incast(fab, duration, senders="kernel", rate=3_000_000):
    if senders == "pfcgen":
        return incast_pfcgen(fab, duration, rate)
    # The excess drains after the senders stop: wait for it (the buffers hold at most
    # ~6 MiB, 10 s at 5 Mbit/s), plus slack.
    excess = max(2 * rate - 5_000_000, 0) / 5_000_000
    listen = duration + min(duration * excess, 10) + 4
    recv = spawn(host_cmd("h3", "udp-recv", "5001", str(listen)))
    time.sleep(0.5)
    procs = [spawn(host_cmd(h, "udp-send", HOSTS["h3"], "5001", str(rate), str(duration), "3", "1000"))
             for h in ("h1", "h2")]
    sent = [json.loads(s.communicate(timeout=duration + 30)[0]) for s in procs]
    got = json.loads(recv.communicate(timeout=listen + 30)[0])
    fab.stop_switches()
    rows = summarize(fab.stats())
    total = sum(s["sent"] for s in sent)
    print(f"incast, PFC {fab.pfc}: h1 + h2 (kernel sockets) sent {total} datagrams at {rate / 1e6:g} Mbit/s each "
          f"for {duration:g} s, h3 received {got['received']} ({total - got['received']} lost) behind a 5 Mbit/s port")
    print_table(rows)
    return {"scenario": "incast", "pfc": fab.pfc, "senders": "kernel", "rate_bps": rate, "duration_s": duration,
            "sent": total, "received": got["received"], "lost": total - got["received"],
            **by_switch(rows, "lossy_drops")}


def mac_of(host):
    i = host[1:]
    return subprocess.run(["ip", "netns", "exec", f"{PREFIX}{host}", "cat", f"/sys/class/net/{PREFIX}v{i}b/address"],
                          capture_output=True, text=True, check=True).stdout.strip()


def pfcgen_cmd(host, json_path, cpu, *args):
    """pfcgen on a host's veth (af_packet), obeying PFC priority 3 at the leaf port's
    declared speed (10G: the unit of the quanta), napping between frames."""
    i = host[1:]
    return ["ip", "netns", "exec", PREFIX + host, PFCGEN, "run", "--port", f"net_af_packet0,iface={PREFIX}v{i}b",
            "--speed", "10G", "--pfc-enable", "3", "--idle", "nap", "--stats-interval", "0", "--stats-json",
            json_path, *args, "--", "--no-huge", "-m", "128", "--no-pci", f"--lcores=0@{cpu}",
            f"--file-prefix={PREFIX}-{host}"]


def incast_pfcgen(fab, duration, rate):
    """The incast with senders that obey PFC: pfcgen on h1's and h2's veths, pfcgen
    receiving on h3's (and a UDP socket, so h3's kernel sends no ICMP back)."""
    w = fab.work
    sink = spawn(host_cmd("h3", "udp-recv", "5001", str(duration + 60)))
    rx = subprocess.Popen(pfcgen_cmd("h3", f"{w}/rx.json", 0, "--rx-streams", "2", "--drain", "2s"),
                          stdout=subprocess.DEVNULL, stderr=open(f"{w}/rx.log", "w"))
    CHILDREN.append(rx)
    end = time.monotonic() + 30
    while "generating" not in open(f"{w}/rx.log").read():
        if rx.poll() is not None or time.monotonic() > end:
            raise SystemExit(f"pfcgen on h3 did not start: {open(f'{w}/rx.log').read()[-2000:]}")
        time.sleep(0.1)
    dst = mac_of("h3")
    procs = []
    for k, h in enumerate(("h1", "h2")):
        stream = (f"name={h},id={k},rate={rate}bit/s,size=1000,dscp=3,src_mac={mac_of(h)},dst_mac={dst},"
                  f"src_ip={HOSTS[h]},dst_ip={HOSTS['h3']},dst_port=5001")
        p = subprocess.Popen(pfcgen_cmd(h, f"{w}/{h}.json", k % 2, "--stream", stream, "--duration", str(duration)),
                             stdout=subprocess.DEVNULL, stderr=open(f"{w}/{h}.log", "w"))
        CHILDREN.append(p)
        procs.append(p)
    for p in procs:
        p.wait(timeout=duration + 60)
    time.sleep(1.0)
    rx.send_signal(signal.SIGINT)
    rx.wait(timeout=30)
    sink.kill()
    sent = [json.load(open(f"{w}/{h}.json")) for h in ("h1", "h2")]
    got = {r["id"]: r["unique"] for r in json.load(open(f"{w}/rx.json"))["received"]}
    fab.stop_switches()
    rows = summarize(fab.stats())
    flows = {}
    for k, (h, s) in enumerate(zip(("h1", "h2"), sent)):
        st = s["streams"][0]
        flows[h] = {"sent": st["tx_packets"], "received": got.get(k, 0), "lost": st["tx_packets"] - got.get(k, 0),
                    "pause_frames_rx": s["totals"]["pause_frames_rx"],
                    "tx_bps_after_first_stop": round(st.get("tx_wire_bps_after_first_stop", st["tx_wire_bps"]))}
    total, recvd = sum(f["sent"] for f in flows.values()), sum(f["received"] for f in flows.values())
    print(f"incast, PFC {fab.pfc}: h1 + h2 (pfcgen, obeying PFC) offered {rate / 1e6:g} Mbit/s each for "
          f"{duration:g} s and sent {total} frames; h3 received {recvd} ({total - recvd} lost) behind a 5 Mbit/s port")
    for h, f in flows.items():
        print(f"  {h}: {f['pause_frames_rx']} PAUSE frames received, "
              f"{f['tx_bps_after_first_stop'] / 1e6:.2f} Mbit/s from the first PFC stop on")
    print_table(rows)
    return {"scenario": "incast", "pfc": fab.pfc, "senders": "pfcgen", "rate_bps": rate, "duration_s": duration,
            "sent": total, "received": recvd, "lost": total - recvd, "flows": flows, **by_switch(rows, "lossy_drops")}


def tcp(fab, duration):
    recv = spawn(host_cmd("h3", "tcp-recv", "5201", str(duration + 20)))
    time.sleep(0.5)
    sent = run_json(host_cmd("h1", "tcp-send", HOSTS["h3"], "5201", str(duration), "3"), duration + 60)
    got = json.loads(recv.communicate(timeout=duration + 30)[0])
    fab.stop_switches()
    rows = summarize(fab.stats())
    print(f"tcp, PFC {fab.pfc}: h1 -> h3 {got['bytes']} bytes in {got['seconds']} s, "
          f"goodput {got['goodput_bps'] / 1e6:.2f} Mbit/s (h3's port is shaped to 5 Mbit/s)")
    print_table(rows)
    return {"scenario": "tcp", "pfc": fab.pfc, "duration_s": duration, "sent_bytes": sent["sent_bytes"],
            "received_bytes": got["bytes"], "goodput_bps": got["goodput_bps"],
            **by_switch(rows)}


LINKS = ["Ethernet8", "Ethernet12"]


def link_state(fab):
    """Per switch and link port: queue 3 sent and queued, PG 3 OFF (over telemetry)."""
    out = {}
    for name in fab.switches:
        q = fab.show(name, "queue", "counters")
        pg = fab.show(name, "priority-group", "watermark", "shared")
        out[name] = {p: {"tx": q[p]["UC3_packets"], "depth": q[p]["UC3_depth"], "off": pg[p]["PG3_off"]}
                     for p in LINKS}
    return out


def deadlock(fab, duration):
    # 1. One burst of lossless frames to a MAC nobody has, from a MAC no host has.
    fab.marks.append((time.time(), "burst to an unknown MAC"))
    sent = run_json(host_cmd("h1", "burst", PREFIX + "v1b", "02:00:00:00:0f:0f", "02:00:00:00:0e:0e",
                             "3", "1000", "400"), 30)
    time.sleep(1.0)
    # 2. Watch the links: a deadlock is every link direction OFF with packets queued and
    # nothing sent between two looks `duration` apart.
    first = link_state(fab)
    fab.marks.append((time.time(), "h1 -> h2 lossless UDP"))
    recv = spawn(host_cmd("h2", "udp-recv", "5001", str(duration + 2)))
    time.sleep(0.3)
    udp = run_json(host_cmd("h1", "udp-send", HOSTS["h2"], "5001", "1000000", str(duration), "3", "1000"),
                   duration + 30)
    second = link_state(fab)
    got = json.loads(recv.communicate(timeout=duration + 30)[0])
    fab.stop_switches()
    stats = fab.stats()
    rows = summarize(stats)
    stalled = all(first[n][p]["off"] and first[n][p]["depth"] > 0 and second[n][p]["off"]
                  and second[n][p]["depth"] > 0 and second[n][p]["tx"] == first[n][p]["tx"]
                  for n in fab.switches for p in LINKS)
    storms = {n: sum(p["pfcwd"].get(f"prio{LOSSLESS_TC}_storms_detected", 0) for p in j["ports"])
              for n, j in stats.items()}
    print(f"deadlock, watchdog {fab.watchdog}, flood_lossless {fab.flood_lossless}: h1 sent {sent['sent']} "
          f"lossless frames to an unknown MAC; then h1 -> h2 lossless UDP: {udp['sent']} sent, "
          f"{got['received']} received")
    print(f"{'switch':<8} {'link':<11} {'PG3 OFF':>8} {'queued':>7} {'sent in between':>16}")
    for n in fab.switches:
        for p in LINKS:
            a, b = first[n][p], second[n][p]
            print(f"{n:<8} {p:<11} {str(bool(a['off'])) + '->' + str(bool(b['off'])):>8} "
                  f"{a['depth']:>3}->{b['depth']:<3} {b['tx'] - a['tx']:>16}")
    print_table(rows)
    return {"scenario": "deadlock", "watchdog": fab.watchdog, "flood_lossless": fab.flood_lossless,
            "burst": sent["sent"], "deadlocked": stalled, "watched_s": duration,
            "links": {n: {p: {"off": [bool(first[n][p]["off"]), bool(second[n][p]["off"])],
                              "queued": [first[n][p]["depth"], second[n][p]["depth"]],
                              "sent_between": second[n][p]["tx"] - first[n][p]["tx"]} for p in LINKS}
                      for n in fab.switches},
            "udp_sent": udp["sent"], "udp_received": got["received"], "storms": storms,
            **by_switch(rows)}


def main():
    if sys.argv[1:2] == ["clos-2-4-4"]:
        import clos_scenarios
        return clos_scenarios.main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=["incast", "tcp", "deadlock"])
    ap.add_argument("--pfc", choices=["on", "off"], default="on")
    ap.add_argument("--watchdog", choices=["on", "off"], default="off", help="deadlock: [pfcwd] action = drop")
    ap.add_argument("--flood-lossless", choices=["on", "off"], default="on", help="deadlock: [switch] flood_lossless")
    ap.add_argument("--plot", metavar="OUT.png", help="deadlock: plot each switch's link PGs and queues over time")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--senders", choices=["kernel", "pfcgen"], default="kernel",
                    help="incast: kernel UDP sockets (ignore PAUSE) or pfcgen (obeys PFC)")
    ap.add_argument("--rate", type=float, default=3.0, help="incast: Mbit/s per sender (default 3)")
    ap.add_argument("--keep", action="store_true", help="keep the run directory (configs, logs, JSON)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("fabric.sh needs root (namespaces, veths, DPDK EAL)")
    work = tempfile.mkdtemp(prefix="pfcsw-fabric-")
    extra = ""
    if a.scenario == "deadlock":
        if a.watchdog == "on":
            extra += "\n[pfcwd]\naction = \"drop\"\ndetection_time = 200\nrestoration_time = 200\npoll_interval = 10\n"
        fab = Fabric(work, a.pfc, TOPOLOGIES["loop"], 2, extra, timeline=bool(a.plot))
    else:
        fab = Fabric(work, a.pfc, TOPOLOGIES["leaf-spine"], 3)
    fab.watchdog, fab.flood_lossless = a.watchdog, a.flood_lossless

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    # Explicitly: a shell starting this in the background leaves SIGINT ignored.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    result = None
    try:
        fab.up()
        fab.ping_all()
        if a.scenario == "incast":
            result = incast(fab, a.duration, a.senders, round(a.rate * 1e6))
        else:
            result = {"tcp": tcp, "deadlock": deadlock}[a.scenario](fab, a.duration)
        if a.plot:
            t0 = min(fab.started.values())
            plot = [sys.executable, os.path.join(ROOT, "scripts", "plot_timeline.py"), "--fabric", a.plot]
            plot += [f"{n}={os.path.join(work, n + '.csv')}@{fab.started[n] - t0:.3f}" for n in fab.switches]
            for t, label in fab.marks:
                plot += ["--mark", f"{t - t0:.3f}={label}"]
            plot += ["--title", f"PFC deadlock: two switches, two links; watchdog {a.watchdog}, "
                                f"flood_lossless {a.flood_lossless}"]
            subprocess.run(plot, check=True)
    except KeyboardInterrupt:
        log("interrupted: tearing down")
    finally:
        fab.down()
        if a.keep:
            log(f"run directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if result is None:
        sys.exit(130)
    print(json.dumps(result, separators=(",", ":")))


if __name__ == "__main__":
    main()
