#!/usr/bin/env python3
"""A leaf-spine fabric of pfcswitch instances on one machine, with kernel hosts.

    scripts/fabric.sh SCENARIO [--pfc on|off] [--duration S] [--keep]

SCENARIO:
  incast  h1 and h2 send UDP at 3 Mbit/s each (kernel sockets, DSCP 3 = the lossless
          TC 3) to h3, whose leaf port is shaped to 5 Mbit/s: the published P4/bmv2 PFC
          experiment on a leaf-spine. With PFC, PAUSE propagates hop by hop back toward
          the senders' leaf and no switch drops lossless traffic; with --pfc off leaf 2
          drops it.
  tcp     h1 -> h3 TCP (DSCP 3) through the fabric: goodput and lossless drops.

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
PREFIX = "fab"
SWITCHES = ["leaf1", "spine1", "leaf2"]  # servers of each memif link start first
SOCKETS = "/run/pfcswitch-fabric"
HOSTS = {"h1": "198.18.0.1", "h2": "198.18.0.2", "h3": "198.18.0.3"}
LOSSLESS_TC = 3


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def host_cmd(host, *args):
    return ["ip", "netns", "exec", PREFIX + host, "python3", TRAFFIC, *args]


class Fabric:
    def __init__(self, work, pfc):
        self.work, self.pfc = work, pfc
        self.procs = {}
        self.hosts_up = False

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
        path = os.path.join(self.work, name + ".toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def up(self):
        if os.path.exists(SOCKETS):
            raise SystemExit(f"{SOCKETS} exists: another fabric is running (or remove it)")
        os.makedirs(SOCKETS)
        self.hosts("up", "3")
        self.hosts_up = True
        for name in SWITCHES:
            self.start(name)

    def start(self, name):
        """Start one switch. DPDK's af_packet names its PACKET_FANOUT group after the
        process id XOR the interface index; two switches whose ids collide on different
        interfaces fail to probe ("could not set PACKET_FANOUT"): start again (new pid)."""
        cfg = self.config(name)
        for attempt in range(5):
            with open(os.path.join(self.work, name + ".log"), "w") as logf:
                self.procs[name] = subprocess.Popen(
                    [BIN, "run", "--config", cfg, "--stats-json", os.path.join(self.work, name + ".json")],
                    stdout=logf, stderr=subprocess.STDOUT, env=dict(os.environ, RUST_LOG="info"))
            ok, text = self.wait_log(name, "forwarding:", 30)
            if ok:
                log(f"{name}: forwarding")
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
        for a in HOSTS:
            for b, ip in HOSTS.items():
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
        log("ping: every pair of h1, h2, h3 reaches the other")

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
        self.stop_switches()
        if self.hosts_up:
            self.hosts("down")
            self.hosts_up = False
        shutil.rmtree(SOCKETS, ignore_errors=True)
        for name in SWITCHES:
            shutil.rmtree(f"/var/run/dpdk/fab-{name}", ignore_errors=True)

    def stats(self):
        out = {}
        for name in SWITCHES:
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


def incast(fab, duration):
    # The 1 Mbit/s excess drains after the senders stop: wait for it (plus slack).
    listen = duration + duration / 5 + 4
    recv = subprocess.Popen(host_cmd("h3", "udp-recv", "5001", str(listen)), stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    senders = [subprocess.Popen(host_cmd(h, "udp-send", HOSTS["h3"], "5001", "3000000", str(duration), "3", "1000"),
                                stdout=subprocess.PIPE, text=True) for h in ("h1", "h2")]
    sent = [json.loads(s.communicate(timeout=duration + 30)[0]) for s in senders]
    got = json.loads(recv.communicate(timeout=listen + 30)[0])
    fab.stop_switches()
    rows = summarize(fab.stats())
    total = sum(s["sent"] for s in sent)
    print(f"incast, PFC {fab.pfc}: h1 + h2 sent {total} datagrams at 3 Mbit/s each for {duration} s, "
          f"h3 received {got['received']} ({total - got['received']} lost) behind a 5 Mbit/s port")
    print_table(rows)
    return {"scenario": "incast", "pfc": fab.pfc, "duration_s": duration, "sent": total,
            "received": got["received"], "lost": total - got["received"],
            **{k: {n: r[k] for n, r in rows.items()} for k in ("pause_tx", "pause_rx", "lossless_drops", "lossy_drops")},
            "conserved": all(r["conserved"] for r in rows.values())}


def tcp(fab, duration):
    recv = subprocess.Popen(host_cmd("h3", "tcp-recv", "5201", str(duration + 20)), stdout=subprocess.PIPE, text=True)
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
            **{k: {n: r[k] for n, r in rows.items()} for k in ("pause_tx", "pause_rx", "lossless_drops")},
            "conserved": all(r["conserved"] for r in rows.values())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=["incast", "tcp"])
    ap.add_argument("--pfc", choices=["on", "off"], default="on")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--keep", action="store_true", help="keep the run directory (configs, logs, JSON)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("fabric.sh needs root (namespaces, veths, DPDK EAL)")
    work = tempfile.mkdtemp(prefix="pfcsw-fabric-")
    fab = Fabric(work, a.pfc)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    result = None
    try:
        fab.up()
        fab.ping_all()
        result = {"incast": incast, "tcp": tcp}[a.scenario](fab, a.duration)
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
