#!/usr/bin/env python3
"""pfcswitch benchmarks: the measurement and report half of scripts/bench.sh.

scripts/bench.sh sets up, builds and exports BENCH_ROOT, BENCH_WORK, BENCH_QUICK,
BENCH_PACER, BENCH_BUILD_S and BENCH_T0, then runs this file, which runs every figure,
prints the table and ends with ONE JSON line (keys documented in docs/benchmarks.md).
"""
import json, os, re, signal, statistics, subprocess, sys, time, glob, shutil
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import atexit  # noqa: E402
from benchlib import Proc, med, remove_runtime_dirs, steady, testpmd_blocks  # noqa: E402

# Whatever the exit, this run's EAL runtime directories go (their prefixes carry our pid).
atexit.register(remove_runtime_dirs, os.getpid())

ROOT = os.environ["BENCH_ROOT"]
WORK = os.environ["BENCH_WORK"]
QUICK = os.environ["BENCH_QUICK"] == "1"
PACER = os.environ.get("BENCH_PACER") or None
T0 = float(os.environ["BENCH_T0"])
SW = os.path.join(ROOT, "target/release/pfcswitch")
RUNS = int(os.environ.get("BENCH_RUNS", "3" if QUICK else "5"))
NULL_S = 3 if QUICK else 6          # seconds per null run
MEMIF_S = 4 if QUICK else 7         # generator seconds per memif run
MEMIF_RUNS = 2 if QUICK else RUNS
PFC_S = 3 if QUICK else 5
PFC_RUNS = 1 if QUICK else 3
LAT_S = 3 if QUICK else 6
CG_S = 1 if QUICK else 2
LIVE = re.compile(r"^\[\s*([\d.]+)s\]")
PORTRATE = re.compile(r"(\S+): rx (\S+) tx (\S+) drop (\d+)")
notes = []
extra = {}
missing = {}  # figure -> why it is null (in the JSON as "missing")

def r3m(x):
    return None if x is None else round(x / 1e6, 3)

def log(msg):
    print(f"bench [{time.time() - T0:5.0f}s] {msg}", file=sys.stderr, flush=True)

def rate(s):
    for suf, mul in (("Mpps", 1e6), ("kpps", 1e3), ("pps", 1.0)):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * mul
    return float(s)

def live_samples(text):
    """pfcswitch --stats-interval lines -> list of (t, total tx pps, total rx pps)."""
    out = []
    for line in text.splitlines():
        m = LIVE.match(line.strip())
        if not m:
            continue
        ports = PORTRATE.findall(line)
        if ports:
            out.append((float(m.group(1)), sum(rate(p[2]) for p in ports), sum(rate(p[1]) for p in ports)))
    return out

def cleanup_sockets():
    pass   # DPDK 22.11 net_memif uses abstract sockets by default: nothing on disk

def run_switch(config, duration, tag, stats_interval=1, timeout_extra=30, valgrind=None):
    js = os.path.join(WORK, f"{tag}.json")
    cmd = [SW, "run", "--config", config, "--duration", str(duration), "--stats-json", js]
    if stats_interval:
        cmd += ["--stats-interval", str(stats_interval)]
    if valgrind:
        cmd = valgrind + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=duration * (150 if valgrind else 1) + timeout_extra)
    with open(os.path.join(WORK, f"{tag}.log"), "w") as f:
        f.write(p.stdout)
    try:
        with open(js) as f:
            j = json.load(f)
    except (OSError, ValueError):
        j = None
    if p.returncode != 0:
        tail = " | ".join(l for l in p.stdout.splitlines()[-40:] if "LEAK" in l or "LOSSLESS" in l or "rror" in l)
        notes.append(f"{tag}: pfcswitch exited {p.returncode} ({tail[:240]})")
    return p.stdout, j

TESTPMD_STARTED = r"NIC statistics for port"
STATS_NONZERO = r"Tx-pps:\s+[1-9]"

def testpmd(args, lcores, prefix, vdevs):
    cmd = ["dpdk-testpmd", "--no-huge", "-m", "1024", "--no-pci", f"--lcores={lcores}",
           f"--file-prefix={prefix}"] + [f"--vdev={v}" for v in vdevs] + \
          ["--", "--auto-start", "--total-num-mbufs=16384", "--stats-period=1"] + args
    return Proc(cmd, stdin=True)

OVS_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
RX_NONZERO = r"Rx-pps:\s+[1-9]"

class Ovs:
    """OVS-DPDK as the memif forwarder (what a user would pick instead): its own
    ovsdb-server and ovs-vswitchd-dpdk under WORK/<tag>, a netdev bridge whose default
    flow is NORMAL (MAC learning), two dpdk ports that are memif servers on the
    generator's sockets, the PMD thread on CPU 1 (pfcswitch's worker CPU), the main
    thread on CPU 0. What it needs here: DPDK without hugepages only with --legacy-mem
    (OVS adds --in-memory otherwise, which --no-huge refuses); options:n_rxq=2 and a
    generator with two queue pairs, because OVS transmits on the PMD thread's own TX queue
    (queue 1), which a one-queue memif peer does not have (every packet a tx failure)."""

    def __init__(self, tag):
        self.d = os.path.join(WORK, tag)
        os.makedirs(self.d, exist_ok=True)
        self.db = "unix:" + os.path.join(self.d, "db.sock")
        self.env = dict(os.environ, OVS_RUNDIR=self.d, OVS_LOGDIR=self.d, OVS_DBDIR=self.d)
        self.prefix = f"{tag}-{os.getpid()}"

    def sh(self, *cmd, timeout=60):
        try:
            return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def vsctl(self, *a):
        return self.sh("ovs-vsctl", f"--db={self.db}", "--timeout=30", *a)

    def start(self):
        d = self.d
        ok = self.sh("ovsdb-tool", "create", f"{d}/conf.db", "/usr/share/openvswitch/vswitch.ovsschema") and \
            self.sh("ovsdb-server", f"{d}/conf.db", f"--remote=p{self.db}", f"--pidfile={d}/ovsdb.pid", "--detach",
                    f"--log-file={d}/ovsdb.log", f"--unixctl={d}/ovsdb.ctl") and \
            self.vsctl("--no-wait", "init") and \
            self.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
                       f"other_config:dpdk-extra=--no-huge --legacy-mem -m 1024 --no-pci --file-prefix={self.prefix}",
                       "other_config:dpdk-lcore-mask=0x1", "other_config:pmd-cpu-mask=0x2") and \
            self.sh(OVS_VSWITCHD, self.db, f"--pidfile={d}/vswitchd.pid", "--detach", f"--log-file={d}/vswitchd.log",
                    f"--unixctl={d}/vswitchd.ctl") and \
            self.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
        for i, v in enumerate(GEN_VDEVS):
            dev = v.replace("role=client", "role=server").split(",mac=")[0]
            ok = ok and self.vsctl("add-port", "br0", f"m{i}", "--", "set", "Interface", f"m{i}", "type=dpdk",
                                   f"options:dpdk-devargs={dev}", "options:n_rxq=2")
        return ok

    def pmd_cycles_per_packet(self):
        try:
            r = subprocess.run(["ovs-appctl", "-t", f"{self.d}/vswitchd.ctl", "dpif-netdev/pmd-stats-show"],
                               env=self.env, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        m = re.search(r"avg processing cycles per packet: ([\d.]+)", r.stdout)
        return float(m.group(1)) if m else None

    def stop(self):
        for ctl in ("vswitchd.ctl", "ovsdb.ctl"):
            self.sh("ovs-appctl", "-t", f"{self.d}/{ctl}", "exit", timeout=30)
        for pf in ("vswitchd.pid", "ovsdb.pid"):
            try:
                os.kill(int(open(os.path.join(self.d, pf)).read().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass

def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return None

la = loadavg()
extra["loadavg_at_start"] = la
if la is not None and la > 0.7:
    notes.append(f"load average {la:.2f} at start: other processes share the 2 CPUs, figures are noisy")

# ---------------------------------------------------------------- 1. null -------------
NULL_CFG = os.path.join(ROOT, "dpdk-config/bench-null.toml")
sw_null, tp_null, cpp, null_lossless_drops, null_pfc = [], [], [], 0, 0
for r in range(RUNS):
    log(f"null run {r + 1}/{RUNS}: pfcswitch")
    out, j = run_switch(NULL_CFG, NULL_S, f"null-{r}")
    s = live_samples(out)
    v = steady([x[1] for x in s])
    sw_null.append(v)
    if j:
        tx = sum(p["tx_packets"] for p in j["ports"])
        bc = sum(w["busy_cycles"] for w in j["workers"])
        if tx:
            cpp.append(bc / tx)
        null_lossless_drops += sum(p.get("lossless_drops", 0) for p in j["ports"])
        null_pfc += sum(sum(p["pfc"]["tx_pause"]) for p in j["ports"])
    log(f"null run {r + 1}/{RUNS}: testpmd macswap")
    p = testpmd(["--forward-mode=macswap"], "0@0,1@1", f"bench-tp-{os.getpid()}-{r}",
                ["net_null0", "net_null1"])
    # two ports per period: NULL_S + 2 nonzero periods (the first and last are dropped)
    p.wait_for(STATS_NONZERO, NULL_S + 40, count=2 * (NULL_S + 2))
    text = p.stop()
    with open(os.path.join(WORK, f"tp-null-{r}.log"), "w") as f:
        f.write(text)
    tp_null.append(steady([sum(v[1] for v in b.values()) for b in testpmd_blocks(text)]))
null_mpps = med(sw_null)
tp_mpps = med(tp_null)
extra["null_runs_mpps"] = [round(x / 1e6, 3) if x else None for x in sw_null]
extra["testpmd_macswap_runs_mpps"] = [round(x / 1e6, 3) if x else None for x in tp_null]
extra["null_lossless_drops"] = null_lossless_drops
extra["null_pfc_pause_sent"] = null_pfc
if null_lossless_drops or null_pfc:
    notes.append(f"null: {null_lossless_drops} lossless drops, {null_pfc} PAUSE frames sent")

# ------------------------------------------- 1b. ECN on the null path ----------------
# The same pipeline with a WRED/ECN profile on the lossless queue every frame uses, with
# Kmin = 0 and Pmax = 0: every packet takes the full dequeue decision (depth compare,
# random draw, probability) and none is marked or dropped. The difference in busy cycles
# per forwarded packet is what ECN costs a packet that is not congested.
ECN_TOML = """
[qos.wred_profile.BENCH]
green_min_threshold = 0
green_max_threshold = 1073741824
green_drop_probability = 0
ecn = "ecn_all"
[qos.queue]
"Ethernet0|0-7" = { wred_profile = "BENCH" }
"Ethernet4|0-7" = { wred_profile = "BENCH" }
"""
ECN_CFG = os.path.join(WORK, "bench-null-ecn.toml")
with open(NULL_CFG) as f:
    ecn_text = f.read() + ECN_TOML
with open(ECN_CFG, "w") as f:
    f.write(ecn_text)
cpp_ecn, sw_null_ecn = [], []
for r in range(RUNS):
    log(f"null run {r + 1}/{RUNS}: pfcswitch with ECN deciding every packet")
    out, j = run_switch(ECN_CFG, NULL_S, f"null-ecn-{r}")
    sw_null_ecn.append(steady([x[1] for x in live_samples(out)]))
    if j:
        tx = sum(p["tx_packets"] for p in j["ports"])
        bc = sum(w["busy_cycles"] for w in j["workers"])
        if tx:
            cpp_ecn.append(bc / tx)
extra["null_ecn_runs_mpps"] = [round(x / 1e6, 3) if x else None for x in sw_null_ecn]
extra["ecn_cycles_per_packet"] = round(med(cpp_ecn), 1) if cpp_ecn else None
extra["ecn_cost_cycles_per_packet"] = round(med(cpp_ecn) - med(cpp), 1) if cpp_ecn and cpp else None

# ---------------------------------------------------------------- 2. memif ------------
MEMIF_CFG = os.path.join(ROOT, "dpdk-config/bench-memif.toml")
GEN_VDEVS = ["net_memif0,role=client,id=0,socket=/tmp/pfcswitch-bench-memif0.sock,mac=02:00:00:00:01:00",
             "net_memif1,role=client,id=0,socket=/tmp/pfcswitch-bench-memif1.sock,mac=02:00:00:00:01:01"]
GEN_ARGS = ["--forward-mode=flowgen", "--eth-peer=0,02:00:00:00:01:01", "--eth-peer=1,02:00:00:00:01:00"]
sw_memif, tp_memif, gen_offered, busy_frac, cap_est = [], [], [], [], []
pfcgen_sw, pfcgen_sent, pfcgen_recv, pfcgen_bound, flowgen_bound = [], [], [], [], []
GEN = os.path.join(ROOT, "target/release/pfcgen")
PFCGEN_LIVE = re.compile(r"\] tx (\S+) \S+\s+rx (\S+)")

def pfcgen_cmd(prefix, js):
    """pfcgen as the memif generator and sink: the same two memif clients and MACs as
    flowgen's, one stream per port at full speed (64 B) to the other port's MAC."""
    cmd = [GEN, "run", "--stats-interval", "1", "--duration", str(MEMIF_S + 2), "--drain", "0", "--stats-json", js]
    for v in GEN_VDEVS:
        cmd += ["--port", v]
    for i in (0, 1):
        cmd += ["--stream", f"port={i},rate=max,size=64,src_mac=02:00:00:00:01:0{i},dst_mac=02:00:00:00:01:0{1 - i}"]
    return cmd + ["--", "--no-huge", "-m", "1024", "--no-pci", "--lcores=0@0", f"--file-prefix={prefix}", "--log-level=4"]

def pfcgen_samples(text):
    """pfcgen live lines -> list of (tx pps, rx pps)."""
    return [(rate(m.group(1)), rate(m.group(2))) for m in map(PFCGEN_LIVE.search, text.splitlines()) if m]

ovs_memif, ovs_cpp = [], []
ovs_ok = os.access(OVS_VSWITCHD, os.X_OK) and shutil.which("ovsdb-server") is not None
if not ovs_ok:
    notes.append("OVS-DPDK: openvswitch-switch-dpdk is not installed; ovs_memif_mpps is n/a")
memif_ok = True
for r in range(MEMIF_RUNS):
    if not memif_ok:
        break
    # pfcswitch in the forwarder's place
    log(f"memif run {r + 1}/{MEMIF_RUNS}: pfcswitch + flowgen")
    js = os.path.join(WORK, f"memif-{r}.json")
    sw = Proc([SW, "run", "--config", MEMIF_CFG, "--duration", str(MEMIF_S + 20),
               "--stats-interval", "1", "--stats-json", js])
    if not sw.wait_for(r"forwarding: ", 30):
        out = sw.stop("int")
        open(os.path.join(WORK, f"memif-{r}.log"), "w").write(out)
        notes.append("memif: pfcswitch did not start on memif (see memif-%d.log); memif figures unavailable" % r)
        memif_ok = False
        break
    g = testpmd(GEN_ARGS, "0@0,1@0", f"bench-gen-{os.getpid()}-{r}", GEN_VDEVS)
    g.wait_for(STATS_NONZERO, MEMIF_S + 40, count=2 * (MEMIF_S + 2))
    gtext = g.stop()
    out = sw.stop("int")
    with open(os.path.join(WORK, f"memif-{r}.log"), "w") as f:
        f.write(out)
    with open(os.path.join(WORK, f"gen-sw-{r}.log"), "w") as f:
        f.write(gtext)
    s = live_samples(out)
    sw_memif.append(steady([x[1] for x in s]))
    run_bf = None
    gen_offered.append(steady([sum(v[1] for v in b.values()) for b in testpmd_blocks(gtext)]))
    try:
        j = json.load(open(js))
        tx = sum(p["tx_packets"] for p in j["ports"])
        bc = sum(w["busy_cycles"] for w in j["workers"])
        busy_frac.append(bc / (j["tsc_hz"] * j["elapsed_s"]))
        run_bf = busy_frac[-1]
        if bc:
            cap_est.append(tx / (bc / j["tsc_hz"]))
        ld = sum(p.get("lossless_drops", 0) for p in j["ports"])
        pa = sum(sum(p["pfc"]["tx_pause"]) for p in j["ports"])
        if ld or pa:
            notes.append(f"memif run {r}: {ld} lossless drops, {pa} PAUSE frames sent by the switch")
    except (OSError, ValueError, KeyError, ZeroDivisionError):
        pass
    flowgen_bound.append(None if run_bf is None else run_bf < 0.9)
    # pfcswitch with pfcgen (one lcore on CPU 0) as generator and sink instead of flowgen
    if os.access(GEN, os.X_OK):
        log(f"memif run {r + 1}/{MEMIF_RUNS}: pfcswitch + pfcgen")
        pj = os.path.join(WORK, f"memif-pfcgen-sw-{r}.json")
        sw = Proc([SW, "run", "--config", MEMIF_CFG, "--duration", str(MEMIF_S + 20),
                   "--stats-interval", "1", "--stats-json", pj])
        if sw.wait_for(r"forwarding: ", 30):
            gp = Proc(pfcgen_cmd(f"bench-pfcgen-{os.getpid()}-{r}", os.path.join(WORK, f"pfcgen-{r}.json")))
            try:
                gp.p.wait(timeout=MEMIF_S + 60)
            except subprocess.TimeoutExpired:
                pass
            gtext = gp.stop()
            out = sw.stop("int")
            with open(os.path.join(WORK, f"memif-pfcgen-{r}.log"), "w") as f:
                f.write(out + "\n--- pfcgen ---\n" + gtext)
            pfcgen_sw.append(steady([x[1] for x in live_samples(out)]))
            ps = pfcgen_samples(gtext)
            pfcgen_sent.append(steady([x[0] for x in ps]))
            pfcgen_recv.append(steady([x[1] for x in ps]))
            try:
                j = json.load(open(pj))
                bf = sum(w["busy_cycles"] for w in j["workers"]) / (j["tsc_hz"] * j["elapsed_s"])
                pfcgen_bound.append(bf < 0.9)
            except (OSError, ValueError, KeyError, ZeroDivisionError):
                pfcgen_bound.append(None)
        else:
            sw.stop("int")
            notes.append("memif: pfcswitch did not start for the pfcgen run %d" % r)
            pfcgen_sw.append(None)
    # testpmd io in the forwarder's place
    log(f"memif run {r + 1}/{MEMIF_RUNS}: testpmd io + flowgen")
    fw = testpmd(["--forward-mode=io"], "0@0,1@1", f"bench-fwd-{os.getpid()}-{r}",
                 [v.replace("role=client", "role=server").split(",mac=")[0] for v in GEN_VDEVS])
    if not fw.wait_for(TESTPMD_STARTED, 30):
        fw.stop()
        notes.append("memif: testpmd io did not start")
        tp_memif.append(None)   # keeps run r paired with run r
        continue
    g = testpmd(GEN_ARGS, "0@0,1@0", f"bench-gen2-{os.getpid()}-{r}", GEN_VDEVS)
    fw.wait_for(STATS_NONZERO, MEMIF_S + 40, count=2 * (MEMIF_S + 2))
    g.stop()
    ftext = fw.stop()
    with open(os.path.join(WORK, f"tp-memif-{r}.log"), "w") as f:
        f.write(ftext)
    tp_memif.append(steady([sum(v[1] for v in b.values()) for b in testpmd_blocks(ftext)]))
    # OVS-DPDK in the forwarder's place: its forwarding rate is what the generator receives.
    if ovs_ok:
        log(f"memif run {r + 1}/{MEMIF_RUNS}: OVS-DPDK (NORMAL) + flowgen")
        o = Ovs(f"ovs-{r}")
        if o.start():
            g = testpmd(GEN_ARGS + ["--rxq=2", "--txq=2"], "0@0,1@0", f"bench-gen3-{os.getpid()}-{r}", GEN_VDEVS)
            g.wait_for(RX_NONZERO, MEMIF_S + 40, count=2 * (MEMIF_S + 2))
            gtext = g.stop()
            with open(os.path.join(WORK, f"gen-ovs-{r}.log"), "w") as f:
                f.write(gtext)
            ovs_memif.append(steady([sum(v[0] for v in b.values()) for b in testpmd_blocks(gtext)]))
            ovs_cpp.append(o.pmd_cycles_per_packet())
        else:
            notes.append(f"OVS-DPDK did not start (run {r}; logs in {o.d})")
            ovs_memif.append(None)
        o.stop()
cleanup_sockets()
memif_mpps = med(sw_memif) if memif_ok else None
tp_io_mpps = med(tp_memif) if memif_ok else None
extra["memif_runs_mpps"] = [round(x / 1e6, 3) if x else None for x in sw_memif]
extra["testpmd_io_memif_runs_mpps"] = [round(x / 1e6, 3) if x else None for x in tp_memif]
extra["memif_generator_sent_mpps"] = round(med(gen_offered) / 1e6, 3) if med(gen_offered) else None
extra["memif_switch_worker_busy_fraction"] = round(med(busy_frac), 3) if busy_frac else None
extra["memif_switch_capacity_est_mpps"] = round(med(cap_est) / 1e6, 3) if cap_est else None
extra["memif_pfcgen_runs_mpps"] = [round(x / 1e6, 3) if x else None for x in pfcgen_sw]
extra["pfcgen_sent_mpps"] = r3m(med(pfcgen_sent))
extra["pfcgen_received_mpps"] = r3m(med(pfcgen_recv))
# A memif run is generator-bound when the switch's worker was busy less than 90 % of it:
# the generator, not the switch, set the rate.
extra["memif_generator_bound"] = {"flowgen": flowgen_bound, "pfcgen": pfcgen_bound}
if any(flowgen_bound):
    notes.append("memif: runs %s were generator-bound with testpmd flowgen (switch worker busy < 90%%)"
                 % [i for i, b in enumerate(flowgen_bound) if b])
if busy_frac and med(busy_frac) < 0.9:
    notes.append("memif: the switch worker was busy only %.0f%% of the time: the generator (sharing CPU 0 "
                 "with the switch's control lcore) bounds memif_mpps, not the switch" % (100 * med(busy_frac)))

# ---------------------------------------------------------------- 3. callgrind -------
def callgrind_top(path, tot, n):
    """Top functions of one callgrind thread file: (function, self Ir, self %, incl %).
    With debug info and inlining, callgrind_annotate splits a function by source file;
    self Ir is summed over the splits, inclusive is the largest split (a lower bound)."""
    def table(inclusive):
        a = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100",
                            f"--inclusive={'yes' if inclusive else 'no'}", path],
                           capture_output=True, text=True).stdout
        agg, started = {}, False
        for line in a.splitlines():
            if "file:function" in line:
                started = True
                continue
            m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$", line) if started else None
            if not m:
                continue
            rest = re.sub(r"\s\[[^\]]*\]\s*$", "", m.group(2)).strip()
            rest = re.sub(r"\s\(\d[\d,]*x\)$", "", rest)
            fn = rest.split(":", 1)[1] if ":" in rest and not rest.startswith("???:") else rest
            v = int(m.group(1).replace(",", ""))
            agg[fn] = max(agg.get(fn, 0), v) if inclusive else agg.get(fn, 0) + v
        return agg
    try:
        sf, inc = table(False), table(True)
    except OSError:
        return []
    top = sorted(sf.items(), key=lambda kv: -kv[1])[:n]
    return [(fn, ir, 100.0 * ir / tot, 100.0 * max(ir, inc.get(fn, 0)) / tot) for fn, ir in top]

ipp = None
cmpp = None
prof = []
if QUICK:
    notes.append("instructions_per_packet: callgrind runs in full mode only (it needs ~1-2 minutes)")
elif shutil.which("valgrind"):
    log(f"callgrind: null run of {CG_S}s under valgrind")
    cgout = os.path.join(WORK, "cg.out")
    try:
        out, j = run_switch(NULL_CFG, CG_S, "callgrind", stats_interval=0,
                            valgrind=["valgrind", "--tool=callgrind", "--separate-threads=yes", "--cache-sim=yes",
                                      f"--callgrind-out-file={cgout}"])
        files = glob.glob(cgout + "-*")
        def total(f):
            for line in open(f):
                if line.startswith("totals:") or line.startswith("summary:"):
                    return int(line.split()[1])
            return 0
        worker = max(files, key=total) if files else None
        if worker and j:
            tx = sum(p["tx_packets"] for p in j["ports"])
            if tx:
                ipp = total(worker) / tx
            extra["callgrind_worker_ir"] = total(worker)
            extra["callgrind_packets"] = tx
            # Cache misses from callgrind's cache simulation (no hardware counters in this
            # VM): the first-level data cache and the last level, per forwarded packet.
            ev, sm = None, None
            for line in open(worker):
                if line.startswith("events:"):
                    ev = line.split()[1:]
                elif line.startswith("summary:") or line.startswith("totals:"):
                    sm = [int(x) for x in line.split()[1:]]
            if ev and sm and tx and "D1mr" in ev:
                get = dict(zip(ev, sm)).get
                cmpp = (get("D1mr", 0) + get("D1mw", 0)) / tx
                extra["ll_data_misses_per_packet"] = round((get("DLmr", 0) + get("DLmw", 0)) / tx, 3)
            if not QUICK:
                keep = os.path.join(ROOT, "target/bench-callgrind.out")
                shutil.copy(worker, keep)
                extra["callgrind_file"] = keep
                prof = callgrind_top(worker, total(worker), 15)
    except subprocess.TimeoutExpired:
        notes.append("callgrind run timed out")
else:
    notes.append("valgrind not installed: instructions_per_packet unavailable")

# ---------------------------------------------------------------- 3b. routed Ir ------
# Routed vs bridged Ir/packet (scripts/route_ir.py): net_null's frames carry no IP, so both
# runs replay the same IPv4/UDP frames from net_pcap (infinite_rx) and differ only in
# routing. Full mode, root (the routed run owns a network namespace).
route_ir = None
if QUICK:
    missing["routed_instructions_per_packet"] = "full mode only"
elif shutil.which("valgrind") and os.geteuid() == 0:
    log("callgrind: routed vs bridged on net_pcap (scripts/route_ir.py)")
    try:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/route_ir.py"), WORK, "10"],
                           capture_output=True, text=True, timeout=1200)
        route_ir = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
        if route_ir is None:
            missing["routed_instructions_per_packet"] = "route_ir.py failed: " + p.stderr.strip()[-240:]
    except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
        missing["routed_instructions_per_packet"] = f"route_ir.py: {e}"
    extra["route_ir"] = route_ir
    # route_ir.py names what it could not measure (and why) under its own keys.
    for k, key in (("routed_ir_per_packet", "routed_instructions_per_packet"), ("ratio", "routed_vs_l2_instructions")):
        if route_ir and route_ir.get("missing", {}).get(k):
            missing[key] = route_ir["missing"][k]
else:
    missing["routed_instructions_per_packet"] = "needs valgrind and root"

# ---------------------------------------------------------------- 3c. l3fwd ----------
# The routed reference (scripts/l3fwd_ref.py): pfcswitch routing and DPDK's l3fwd in FIB
# mode (built by bench.sh from Debian's dpdk-doc sources) on route_ir.py's net_pcap replay,
# forwarding lcore on CPU 1 for both, one after the other.
l3ref = None
L3FWD = os.environ.get("BENCH_L3FWD") or None
if QUICK:
    missing["l3fwd_mpps"] = "full mode only"
elif not L3FWD:
    missing["l3fwd_mpps"] = os.environ.get("BENCH_L3FWD_WHY") or "l3fwd not built"
elif os.geteuid() != 0:
    missing["l3fwd_mpps"] = "needs root (the routed run owns a network namespace)"
else:
    log("l3fwd: pfcswitch routed vs DPDK l3fwd (FIB) on the same net_pcap replay (scripts/l3fwd_ref.py)")
    try:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/l3fwd_ref.py"), WORK, L3FWD, "5"],
                           capture_output=True, text=True, timeout=600)
        l3ref = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
        if l3ref is None:
            missing["l3fwd_mpps"] = "l3fwd_ref.py failed: " + p.stderr.strip()[-240:]
        else:
            missing.update(l3ref.get("missing", {}))
    except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
        missing["l3fwd_mpps"] = f"l3fwd_ref.py: {e}"
    extra["l3fwd_ref"] = l3ref
if "l3fwd_mpps" in missing:
    missing.setdefault("routed_vs_l3fwd", "needs l3fwd_mpps")

# perf: no hardware counters in this VM (perf stat -e instructions: <not supported>), but
# timer sampling (cpu-clock) of the worker's CPU works and weighs atomics by their real cost.
perf_top = []
if not QUICK and shutil.which("perf"):
    log("perf: cpu-clock sampling of CPU 1 during a null run")
    pdata = os.path.join(WORK, "perf.data")
    sw = Proc([SW, "run", "--config", NULL_CFG, "--duration", "7"])
    if sw.wait_for(r"forwarding: ", 30):
        time.sleep(1.5)
        subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "4999", "-C", "1", "-o", pdata,
                        "--", "sleep", "4"], capture_output=True, text=True, timeout=60)
    sw.p.wait(timeout=60)
    sw.t.join(timeout=5)
    rep = subprocess.run(["perf", "report", "-i", pdata, "--no-children", "--sort", "dso,symbol", "--stdio"],
                         capture_output=True, text=True, timeout=120).stdout
    for line in rep.splitlines():
        m = re.match(r"^\s+([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*?)\s*$", line)
        if m:
            perf_top.append((float(m.group(1)), m.group(2), re.split(r"\s{2,}", m.group(3))[0]))
    # Group anonymous DPDK driver/library symbols by their shared object.
    grouped = {}
    for pc, dso, sym in perf_top:
        key = sym if not sym.startswith("0x") else f"[{dso}]"
        grouped[key] = grouped.get(key, 0.0) + pc
    perf_top = sorted(grouped.items(), key=lambda kv: -kv[1])[:12]
    extra["perf_top"] = [{"symbol": k, "pct": round(v, 1)} for k, v in perf_top]
    if os.path.exists(pdata):
        shutil.copy(pdata, os.path.join(ROOT, "target/bench-perf.data"))

# ---------------------------------------------------------------- 4. PFC reaction ----
# One process, two ports: Ethernet0 = net_null (an endless lossy source, untagged ->
# default_tc 3, pfc_enable = [] so it is lossy on ingress) whose egress is shaped to 1G;
# Ethernet4 = net_ring0 (a loopback: what the port sends it receives; lossless PG 3).
# Traffic: null rx -> Ethernet4 tx -> looped back -> Ethernet4 rx (lossless PG 3) -> flood to
# Ethernet0 tx (shaped, 1G): PG 3 of Ethernet4 fills, crosses Xoff, the PAUSE frame loops
# back into Ethernet4, which honours it (its TC3 queue stops), the PG drains through the
# shaper to Xon, RESUME loops back, traffic resumes: the PG oscillates thousands of times
# per second and every Xoff crossing is a reaction sample. 64-byte cells keep the ring's
# in-flight frames inside the computed headroom (no lossless drops).
PFC_CFG = os.path.join(WORK, "bench-pfc-loop.toml")
open(PFC_CFG, "w").write('''
[eal]
args = ["--no-huge", "-m", "1024", "--no-pci", "--lcores=0@0,1@1"]
[switch]
fdb_aging_time = 300
[buffer]
total_size = "12MiB"
cell_size = 64
[[port]]
name = "Ethernet0"
devargs = "net_null0,size=64"
speed = "100G"
mtu = 1500
default_tc = 3
pfc_enable = []
shaper_rate = "1G"
[[port]]
name = "Ethernet4"
devargs = "net_ring0"
speed = "100G"
mtu = 1500
default_tc = 3
pfc_enable = [3, 4]
[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0", "Ethernet4:0"]
tx = ["Ethernet0", "Ethernet4"]
''')
pfc50, pfc99, pfcmax, pfccycles, pfcldrops = [], [], [], 0, 0
for r in range(PFC_RUNS):
    log(f"PFC reaction run {r + 1}/{PFC_RUNS}")
    out, j = run_switch(PFC_CFG, PFC_S, f"pfc-{r}", stats_interval=0)
    if j and j.get("pfc_reaction", {}).get("count", 0) > 0:
        pr = j["pfc_reaction"]
        pfc50.append(pr["p50_ns"]); pfc99.append(pr["p99_ns"]); pfcmax.append(pr["max_ns"])
        pfccycles += sum(sum(p["pfc"]["tx_on2off"]) for p in j["ports"])
        pfcldrops += sum(p.get("lossless_drops", 0) for p in j["ports"])
extra["pfc_reaction_max_us"] = round(max(pfcmax) / 1e3, 2) if pfcmax else None
extra["pfc_on2off_transitions"] = pfccycles
extra["pfc_loop_lossless_drops"] = pfcldrops

# ---------------------------------------------------------------- 5. latency ---------
lat = {"p50": None, "p99": None, "p999": None}
if PACER and memif_ok and memif_mpps:
    target = 0.5 * memif_mpps
    log(f"latency: pacer at {target / 1e6:.2f} Mpps (50% of memif_mpps), {LAT_S}s")
    cleanup_sockets()
    js = os.path.join(WORK, "lat.json")
    sw = Proc([SW, "run", "--config", MEMIF_CFG, "--duration", str(LAT_S + 30),
               "--stats-interval", "1", "--stats-json", js])
    if sw.wait_for(r"forwarding: ", 30):
        pr = subprocess.run([PACER, "--no-huge", "-m", "512", "--no-pci", "--lcores=0@0",
                             f"--file-prefix=bench-pacer-{os.getpid()}"] +
                            [f"--vdev={v}" for v in GEN_VDEVS] +
                            ["--", "--rate", str(int(target)), "--duration", str(LAT_S), "--warmup", "1"],
                            capture_output=True, text=True, timeout=LAT_S + 40)
        out = sw.stop("int")
        open(os.path.join(WORK, "lat.log"), "w").write(out + "\n--- pacer ---\n" + pr.stdout + pr.stderr)
        pj = None
        for line in pr.stdout.splitlines():
            if line.startswith("{"):
                pj = json.loads(line)
        if pj:
            extra["latency_offered_mpps"] = round(target / 1e6, 3)
            extra["latency_pacer_sent_mpps"] = round(pj["sent"] / (LAT_S + 1) / 1e6, 3)
            extra["latency_e2e_us"] = {k: round(pj[k + "_ns"] / 1e3, 2) for k in ("p50", "p99", "p999", "max")}
            if pj["tx_fail"]:
                notes.append(f"latency: pacer could not send {pj['tx_fail']} frames (memif ring full)")
        try:
            j = json.load(open(js))
            L = j.get("latency")
            if isinstance(L, dict) and L:
                # {"<port>": {"p50_ns",...}} or {"<port>": {"<tc>": {...}}}: take the worst.
                leaves = []
                def walk(x):
                    if isinstance(x, dict):
                        if "p50_ns" in x:
                            leaves.append(x)
                        else:
                            for v in x.values():
                                walk(v)
                    elif isinstance(x, list):
                        for v in x:
                            walk(v)
                walk(L)
                leaves = [l for l in leaves if l.get("count", 1)]
                if leaves:
                    lat["p50"] = max(l.get("p50_ns", 0) for l in leaves) / 1e3
                    lat["p99"] = max(l.get("p99_ns", 0) for l in leaves) / 1e3
                    p999 = [l.get("p999_ns", l.get("p99_9_ns")) for l in leaves]
                    p999 = [x for x in p999 if x is not None]
                    lat["p999"] = max(p999) / 1e3 if p999 else None
            else:
                notes.append("latency: the stats JSON has no 'latency' yet (switch histograms): n/a")
        except (OSError, ValueError):
            notes.append("latency: no stats JSON from the switch")
    else:
        sw.stop("int")
        notes.append("latency: pfcswitch did not start on memif")
    cleanup_sockets()
elif not PACER:
    notes.append("latency: pacer unavailable (no C compiler)")

# ---------------------------------------------------------------- report -------------
def r3(x, d=1e6):
    return None if x is None else round(x / d, 3)

def ratio(a, b):
    return None if (a is None or not b) else round(a / b, 3)

def pair_ratio(sw, ref):
    """Median of the per-pair ratios: run r of the switch against run r of the reference,
    measured one right after the other. More robust than a ratio of medians when the
    host moves the rate between runs (memif here is bimodal: ~13 or ~29 Mpps for testpmd)."""
    rs = [a / b for a, b in zip(sw, ref) if a and b]
    return round(statistics.median(rs), 3) if rs else None

extra["ovs_memif_runs_mpps"] = [round(x / 1e6, 3) if x else None for x in ovs_memif]
extra["ovs_pmd_processing_cycles_per_packet"] = round(med(ovs_cpp), 1) if med(ovs_cpp) else None

# The host state, told by the reference forwarders' own rates in this run: this VM family
# has been seen with testpmd macswap on net_null at ~38, ~32 and ~23 Mpps, and with memif
# at ~29 or ~5-17 Mpps for testpmd io; ratios are comparable within one state.
def state(v, fast, slow):
    v = [x for x in v if x]
    if not v:
        return None
    kinds = {"fast" if x >= fast else "slow" if x < slow else "mid" for x in v}
    return kinds.pop() if len(kinds) == 1 else "mixed"

extra["host_state"] = {"null": state(tp_null, 35e6, 27e6), "memif": state(tp_memif, 20e6, 20e6)}

for key, sw, ref in (("null", sw_null, tp_null), ("memif", sw_memif, tp_memif)):
    rs = [round(a / b, 3) for a, b in zip(sw, ref) if a and b]
    extra[f"{key}_pair_ratios"] = rs
    extra[f"{key}_ratio_of_medians"] = ratio(med(sw), med(ref))
    refs = [x for x in ref if x]
    if refs and max(refs) > 1.5 * min(refs):
        notes.append(f"{key}: the reference moved between {min(refs) / 1e6:.1f} and {max(refs) / 1e6:.1f} Mpps across runs "
                     f"(the host, not the software): {key}_ratio is the median of the per-pair ratios {rs}")

res = {
    "null_mpps": r3(null_mpps),
    "testpmd_macswap_mpps": r3(tp_mpps),
    "null_ratio": pair_ratio(sw_null, tp_null),
    "memif_mpps": r3(memif_mpps),
    "testpmd_io_memif_mpps": r3(tp_io_mpps),
    "memif_ratio": pair_ratio(sw_memif, tp_memif) if memif_ok else None,
    "pfcgen_memif_mpps": r3(med(pfcgen_sw)),
    "ovs_memif_mpps": r3(med(ovs_memif)),
    "vs_ovs": pair_ratio(sw_memif, ovs_memif) if memif_ok else None,
    "cycles_per_packet": round(med(cpp), 1) if cpp else None,
    "instructions_per_packet": round(ipp, 1) if ipp else None,
    "cache_misses_per_packet": round(cmpp, 2) if cmpp is not None else None,
    "routed_instructions_per_packet": route_ir and route_ir["routed_ir_per_packet"],
    "routed_vs_l2_instructions": route_ir and route_ir["ratio"],
    "l3fwd_mpps": l3ref and l3ref["l3fwd_mpps"],
    "routed_vs_l3fwd": l3ref and l3ref["routed_vs_l3fwd"],
    "latency_p50_us": None if lat["p50"] is None else round(lat["p50"], 2),
    "latency_p99_us": None if lat["p99"] is None else round(lat["p99"], 2),
    "latency_p999_us": None if lat["p999"] is None else round(lat["p999"], 2),
    "pfc_reaction_p50_us": round(med(pfc50) / 1e3, 2) if pfc50 else None,
    "pfc_reaction_p99_us": round(med(pfc99) / 1e3, 2) if pfc99 else None,
}
elapsed = time.time() - T0
extra["mode"] = "quick" if QUICK else "full"
extra["runs"] = RUNS
extra["build_s"] = int(os.environ.get("BENCH_BUILD_S", "0"))
extra["total_s"] = round(elapsed, 1)
extra["loadavg_at_end"] = loadavg()

def fmt(v, unit=""):
    return "n/a" if v is None else f"{v}{unit}"

rows = [
    ("null: pfcswitch (both ports, Mpps)", fmt(res["null_mpps"]), "full lossless pipeline, 2 x net_null, worker on CPU 1"),
    ("null: testpmd macswap (Mpps)", fmt(res["testpmd_macswap_mpps"]), "same vdevs, forwarding lcore on CPU 1"),
    ("null_ratio", fmt(res["null_ratio"]), "median of per-run-pair ratios; goal >= 0.85"),
    ("memif: pfcswitch (both dirs, Mpps)", fmt(res["memif_mpps"]), f"generator sent {fmt(extra['memif_generator_sent_mpps'])} Mpps, worker busy {fmt(extra['memif_switch_worker_busy_fraction'])}"),
    ("memif: testpmd io (Mpps)", fmt(res["testpmd_io_memif_mpps"]), "generator flowgen on CPU 0"),
    ("memif: pfcswitch, pfcgen generator (Mpps)", fmt(res["pfcgen_memif_mpps"]), f"pfcgen (1 lcore, CPU 0) sent {fmt(extra['pfcgen_sent_mpps'])}, received {fmt(extra['pfcgen_received_mpps'])} Mpps"),
    ("memif_ratio", fmt(res["memif_ratio"]), "median of per-run-pair ratios; goal >= 0.95"),
    ("memif: OVS-DPDK NORMAL (Mpps)", fmt(res["ovs_memif_mpps"]), f"same generator (2 queue pairs), PMD on CPU 1: {fmt(extra['ovs_pmd_processing_cycles_per_packet'])} cycles/packet"),
    ("vs_ovs", fmt(res["vs_ovs"]), "memif_mpps / ovs_memif_mpps, per-run pairs; goal >= 1.2"),
    ("host state (null / memif)", f"{extra['host_state']['null']} / {extra['host_state']['memif']}", "from testpmd's own rates in this run (macswap >= 35 fast, < 27 slow, else mid; io >= 20 fast)"),
    ("cycles / packet (worker, TSC)", fmt(res["cycles_per_packet"]), "busy cycles / forwarded packets, null"),
    ("cycles / packet, ECN deciding", fmt(extra["ecn_cycles_per_packet"]), f"WRED/ECN on every packet (Kmin 0, Pmax 0): +{fmt(extra['ecn_cost_cycles_per_packet'])} cycles"),
    ("instructions / packet (callgrind)", fmt(res["instructions_per_packet"]), "worker thread Ir / forwarded packets; goal <= 400"),
    ("routed / bridged Ir per packet (callgrind)", f"{fmt(res['routed_instructions_per_packet'])} / {fmt(route_ir and route_ir['l2_ir_per_packet'])}", f"net_pcap replay, same frames; ratio {fmt(res['routed_vs_l2_instructions'])}, goal <= 1.15"),
    ("routed: pfcswitch / l3fwd FIB (Mpps)", f"{fmt(l3ref and l3ref['routed_mpps'])} / {fmt(res['l3fwd_mpps'])}", f"same net_pcap replay, CPU 1; routed_vs_l3fwd {fmt(res['routed_vs_l3fwd'])}, goal >= 0.6"),
    ("D1 data misses / packet (callgrind)", fmt(res["cache_misses_per_packet"]), f"cache simulation; last level {fmt(extra.get('ll_data_misses_per_packet'))}"),
    ("latency p50 / p99 / p99.9 (us)", f"{fmt(res['latency_p50_us'])} / {fmt(res['latency_p99_us'])} / {fmt(res['latency_p999_us'])}", "switch histograms at 50% of memif_mpps; goal p99 <= 20"),
    ("latency e2e via pacer (us)", (lambda e: f"{e['p50']} / {e['p99']} / {e['p999']}" if e else "n/a")(extra.get("latency_e2e_us")), "generator TX -> switch -> generator RX (includes memif both ways)"),
    ("PFC reaction p50 / p99 (us)", f"{fmt(res['pfc_reaction_p50_us'])} / {fmt(res['pfc_reaction_p99_us'])}", f"{extra['pfc_on2off_transitions']} ON->OFF cycles; goal p99 <= 2"),
]
w = max(len(r[0]) for r in rows)
print()
print(f"pfcswitch bench ({extra['mode']}, {RUNS} runs, medians) on {os.uname().nodename}, {time.strftime('%Y-%m-%d %H:%M')}")
print("-" * (w + 60))
for a, b, c in rows:
    print(f"{a:<{w}}  {b:>18}  {c}")
print("-" * (w + 60))
if prof:
    print("callgrind profile of the worker thread (top 15 by self Ir; incl = largest inlined split):")
    print(f"  {'self':>6} {'incl':>6} {'self Ir':>14}  function")
    for fn, ir, pc, ipc in prof:
        print(f"  {pc:5.1f}% {ipc:5.1f}% {ir:>14,}  {fn[:100]}")
    extra["profile_top"] = [{"function": fn, "self_pct": round(pc, 1), "incl_pct": round(ipc, 1)} for fn, ir, pc, ipc in prof[:10]]
if perf_top:
    print("perf cpu-clock profile of CPU 1 (worker), self time:")
    for k, v in perf_top:
        print(f"  {v:5.1f}%  {k[:110]}")
for n in notes:
    print("note: " + n)
for k, why in missing.items():
    print(f"missing: {k}: {why}")
print(f"total {elapsed:.0f}s (build {extra['build_s']}s); work dir {WORK if os.environ.get('BENCH_KEEP') == '1' else '(removed)'}")
res["missing"] = missing
res["extra"] = extra
res["notes"] = notes
print(json.dumps(res, separators=(", ", ": ")))
