#!/usr/bin/env python3
"""The three headroom modes on one buffer: N:1 incast, N = 2, 4, 8 (scripts/headroom-compare.sh).

    scripts/headroom_compare.py --bin PFCSWITCH --model HEADROOM_COMPARE --out DIR
                                [--senders 2,4,8] [--modes static,shared_pool,dsh]
                                [--plot OUT.png] [--markdown OUT.md]

For each N and mode it writes one configuration (N+2 ports at 100G on net_pcap vdevs,
40 m cables, MTU 1500, PFC on 3-4 everywhere; the same 6 MiB buffer: a 4 MiB ingress
lossless pool, a 2 MiB egress lossy pool; calculated headroom; shared_pool over-subscribed
2:1) and

  * runs the link model (examples/headroom_compare.rs: the switch's MMU driven by
    PFC-obeying senders at line rate, a draining egress, a bursty lossy background):
    the largest synchronized burst taken before the first PAUSE, PAUSE frames, time
    paused, lossless and lossy drops for a fixed incast workload;
  * checks the model's first figure on a running switch: with the egress stalled, b
    frames from each sender send no PAUSE, b + 1 do (two runs of `pfcswitch run`).

Writes DIR/headroom-compare.json, and the table (--markdown) and plot (--plot).
Exit status: 0 done and every check held, 1 a check failed, 2 bad usage.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pfcsw import load_stats, port, write_pcap  # noqa: E402

PROG = "headroom_compare.py"
SINK = bytes([0x02, 0x50, 0x52, 0, 0, 2])
FRAME = 1000
# memif rings of 2^5 = 32 slots for the pfcgen runs: a memif ring is the wire between
# sender and switch, and its default 1024 frames (1 MB here) in flight would be a cable
# far longer than the 40 m the headroom was sized for.
MEMIF_RSIZE = 5


def port_names(n):
    """Egress, n senders, background."""
    return [f"Ethernet{4 * i}" for i in range(n + 2)]


def config(d, n, mode, prefix, dynamic_th, memif=None):
    """memif = (socket prefix, egress rate): the ports are memif servers for pfcgen and the
    egress drains through a shaper at that rate, instead of net_pcap files and a stalled egress."""
    names = port_names(n)
    lines = [
        "[eal]",
        'args = ["--no-huge", "-m", "1024", "--no-pci", "--lcores=0@0,1@1"]',
        f'file_prefix = "{prefix}"',
        "[switch]",
        "burst_size = 32",
        "flood_lossless = false",
        "mbuf_count = 65536",
    ]
    for i, name in enumerate(names):
        devargs = (f"net_pcap{i},rx_pcap={d}/in{i}.pcap,tx_pcap={d}/out{i}.pcap" if memif is None
                   else f"net_memif{i},role=server,id=0,rsize={MEMIF_RSIZE},socket={memif[0]}{i}.sock")
        lines += [
            "[[port]]",
            f'name = "{name}"',
            f'devargs = "{devargs}"',
            'speed = "100G"',
            'cable_length = "40m"',
            "mtu = 1500",
            "pfc_enable = [3, 4]",
        ]
        if i == 0:
            lines.append("tx_enable = false" if memif is None else f'shaper_rate = "{memif[1]}"')
    lines += [
        "[lcores]",
        "control = 0",
        "[[lcores.worker]]",
        "lcore = 1",
        "rx = [" + ", ".join(f'"{x}:0"' for x in names) + "]",
        "tx = [" + ", ".join(f'"{x}"' for x in names) + "]",
        "[buffer]",
        'total_size = "6MiB"',
        f'headroom_policy = "{mode}"',
    ]
    if mode == "shared_pool":
        lines.append("over_subscribe_ratio = 2")
    lines += [
        "[buffer.pool.ingress_lossless_pool]",
        'size = "4MiB"',
        'type = "ingress"',
        "[buffer.pool.egress_lossy_pool]",
        'size = "2MiB"',
        'type = "egress"',
        "[buffer.profile.pg_lossless]",
        'pool = "ingress_lossless_pool"',
        "size = 4096",
        f"dynamic_th = {dynamic_th}",
        "[buffer.profile.q_lossy]",
        'pool = "egress_lossy_pool"',
        "dynamic_th = 1",
        "[buffer.pg]",
    ]
    lines += [f'"{x}|3-4" = "pg_lossless"' for x in names]
    lines.append("[buffer.queue]")
    for x in names:
        lines += [f'"{x}|0-2" = "q_lossy"', f'"{x}|5-7" = "q_lossy"']
    path = os.path.join(d, f"n{n}-{mode}-a{dynamic_th}.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def burst_frame(i, seq):
    """IPv4, DSCP 3 (TC 3, lossless), from sender i to the sink."""
    src = bytes([0x02, 0x50, 0x52, 1, 0, i])
    total = FRAME - 14
    ip = bytearray([0x45, 3 << 2, total >> 8, total & 0xFF, seq >> 8 & 0xFF, seq & 0xFF, 0, 0, 64, 17, 0, 0,
                    192, 0, 2, i, 192, 0, 2, 200])
    s = sum((ip[k] << 8) | ip[k + 1] for k in range(0, 20, 2))
    s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
    return (SINK + src + b"\x08\x00" + bytes(ip)).ljust(FRAME, b"\x5a")


def learning_frame():
    return (bytes([0x02, 0x50, 0x52, 0, 0, 3]) + SINK + b"\x88\xb5").ljust(64, b"\0")


def switch_pauses(binary, d, n, mode, dynamic_th, b):
    """Run the switch with b frames from each sender into the stalled egress: did any
    sender's PG 3 get a PAUSE? (and the lossless drops)"""
    prefix = f"hrc{os.getpid()}-{n}-{mode}-{b}"
    cfg = config(d, n, mode, prefix, dynamic_th)
    names = port_names(n)
    write_pcap(os.path.join(d, "in0.pcap"), [learning_frame()])
    for i in range(1, n + 1):
        write_pcap(os.path.join(d, f"in{i}.pcap"), [burst_frame(i, s) for s in range(b)])
    write_pcap(os.path.join(d, f"in{n + 1}.pcap"), [])
    stats = os.path.join(d, "stats.json")
    r = subprocess.run([binary, "run", "--config", cfg, "--duration", "1.5", "--stats-json", stats],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ, RUST_LOG="warn"))
    if r.returncode != 0:
        sys.exit(f"{PROG}: pfcswitch run failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    s = load_stats(stats)
    senders = [port(s, x) for x in names[1:n + 1]]
    pauses = sum(p["pfc"]["tx_on2off"][3] for p in senders)
    drops = sum(p["lossless_drops"] for p in senders)
    return pauses > 0, drops


def model(binary, cfg, n):
    """The workload: a 3 MiB incast split over the n senders every 2 ms, ten times, and a
    lossy 128 KiB burst every 250 µs."""
    r = subprocess.run([binary, "--config", cfg, "--burst-kb", str(3072 // n), "--period-us", "2000",
                        "--bursts", "10", "--bg-kb", "128", "--bg-period-us", "250"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{PROG}: the model failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def pfcgen_run(binary, gen, d, n, mode, dynamic_th, rate):
    """The same configuration and workload with real senders: the switch's ports are memif
    servers, pfcgen sends the incast (one stream per sender and burst: the burst is a
    backlog sent at the rate PFC allows, as in the model) and the lossy background, and
    receives everything at the egress. Rates are the model's divided by K = 100G / rate
    (software senders on memif cannot send at 100G) and times multiplied by K: same bytes
    per burst, same 2:1 ratio of senders to egress, same switch configuration (buffer,
    headroom, thresholds, PFC timers at 100G). The senders' ports are declared at the
    scaled rate, so the pause a PFC frame asks for lasts K times longer at the sender, as
    the time scale says (the switch's refreshes, at 100G timers, come more often than that
    needs: compare PAUSE edges, not frames)."""
    bps = float(rate.rstrip("M")) * 1e6
    k = 100e9 / bps
    prefix = f"hrg{os.getpid()}-{n}-{mode}"
    cfg = config(d, n, mode, prefix, dynamic_th, memif=(f"{d}/{prefix}-", rate))
    frames = 3072 * 1024 // n // FRAME
    period_ms, bursts = 2.0 * k, 10  # the model: every 2000 µs
    sink, mac = "02:50:52:00:00:02", lambda i: f"02:50:52:01:00:{i:02x}"
    g = ["[eal]", f'args = ["--no-huge", "-m", "512", "--no-pci", "--lcores=0@0", "--file-prefix={prefix}-gen"]']
    for i in range(n + 2):
        g += ["[[port]]", f'name = "g{i}"', f'devargs = "net_memif{i},role=client,id=0,rsize={MEMIF_RSIZE},socket={d}/{prefix}-{i}.sock"',
              f'speed = "{rate}"', "pfc_enable = [3, 4]"]
    # The sink's MAC first (the switch drops lossless unknown unicast: flood_lossless = false).
    g += ["[[stream]]", 'name = "learn"', 'port = "g0"', 'rate = "100pps"', "count = 3", f'src_mac = "{sink}"',
          'dst_mac = "02:50:52:00:00:03"', "dscp = 8"]
    for b in range(bursts):
        for i in range(1, n + 1):
            g += ["[[stream]]", f'name = "s{i}b{b}"', f'port = "g{i}"', f'rate = "{rate}bit/s"', f"size = {FRAME + 4}",
                  f"count = {frames}", f'start = "{300 + b * period_ms}ms"', f'src_mac = "{mac(i)}"', f'dst_mac = "{sink}"',
                  "dscp = 3", f'src_ip = "192.0.2.{i}"', 'dst_ip = "192.0.2.200"']
    bg_frames = 128 * 1024 // FRAME
    g += ["[[stream]]", 'name = "background"', f'port = "g{n + 1}"', f'rate = "{rate}bit/s"', f"size = {FRAME + 4}",
          'start = "300ms"', f'duration = "{bursts * period_ms}ms"', f'burst_on = "{bg_frames * (FRAME + 24) * 8 / bps * 1e3:.3f}ms"',
          f'burst_off = "{250e-3 * k - bg_frames * (FRAME + 24) * 8 / bps * 1e3:.3f}ms"', f'src_mac = "{mac(n + 1)}"',
          f'dst_mac = "{sink}"', "dscp = 8"]
    gcfg = os.path.join(d, f"{prefix}-gen.toml")
    with open(gcfg, "w") as f:
        f.write("\n".join(g) + "\n")
    sw_json, gen_json = os.path.join(d, f"{prefix}-sw.json"), os.path.join(d, f"{prefix}-gen.json")
    env = dict(os.environ, RUST_LOG="warn")
    sw = subprocess.Popen([binary, "run", "--config", cfg, "--duration", "120", "--stats-json", sw_json],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(3)
    r = subprocess.run([gen, "run", "--config", gcfg, "--drain", "1s", "--stats-interval", "0", "--stats-json", gen_json],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    sw.send_signal(signal.SIGINT)
    _, sw_err = sw.communicate(timeout=60)
    if r.returncode != 0 or sw.returncode != 0:
        sys.exit(f"{PROG}: the pfcgen run failed: pfcgen {r.returncode} {r.stderr.strip()[-1500:]} / "
                 f"pfcswitch {sw.returncode} {sw_err.strip()[-1500:]}")
    s, gj = load_stats(sw_json), load_stats(gen_json)
    names = port_names(n)
    senders = [port(s, x) for x in names[1:n + 1]]
    first = [st for st in gj["streams"] if st["name"].endswith("b0")]
    lossless = [st for st in gj["streams"] if st["name"].startswith("s")]
    return {
        "senders": n, "policy": mode, "dynamic_th": dynamic_th, "rate": rate, "time_scale": k,
        "burst_bytes": sum(st.get("tx_packets_before_first_stop", st["tx_packets"]) for st in first) * FRAME,
        "pause_edges": sum(p["pfc"]["tx_on2off"][3] for p in senders),
        "pause_frames": sum(p["pfc"]["tx_pause"][3] for p in senders),
        "paused_us": sum(gp["pfc"]["rx_pause_duration_us"][3] for gp in gj["ports"][1:n + 1]),
        "lossless_drops": sum(p["lossless_drops"] for p in s["ports"]),
        "lossy_drops": port(s, names[n + 1])["tc"][0]["dropped"],
        "lossless_lost": sum(st["lost"] or 0 for st in lossless),
        "lossless_sent": sum(st["tx_packets"] for st in lossless),
        "reordered": sum(st["reordered"] for st in lossless),
    }


def alpha(dynamic_th):
    return f"1/{2 ** -dynamic_th}" if dynamic_th < 0 else str(2 ** dynamic_th)


def markdown(rows):
    out = ["| α | N | mode | shared segment | burst before 1st PAUSE (model, draining) | checked on the switch (stalled egress) "
           "| PAUSE frames | time paused | lossless drops | lossy drops |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        chk = f"{r['burst_stalled_frames']}/sender: {'ok' if r['switch_check'] else 'FAIL'}"
        out.append(f"| {alpha(r['dynamic_th'])} | {r['senders']} | {r['policy']} | {r['shared_bytes'] / 1048576:.2f} MiB "
                   f"| {r['burst_bytes'] / 1024:.0f} KiB | {chk} | {r['pause_frames']} "
                   f"| {r['paused_us'] / 1000:.2f} ms | {r['lossless_drops']} | {r['lossy_drops']} |")
    return "\n".join(out) + "\n"


def markdown_pfcgen(rows, model_rows):
    out = ["| α | N | mode | senders | burst before 1st PAUSE | PAUSE edges (frames) | time paused | lossless drops "
           "| lossy drops | lossless frames lost / sent (pfcgen) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = next((x for x in model_rows if (x["senders"], x["policy"], x["dynamic_th"]) ==
                  (r["senders"], r["policy"], r["dynamic_th"])), None)
        if m:
            out.append(f"| {alpha(m['dynamic_th'])} | {m['senders']} | {m['policy']} | model (link model at 100G) "
                       f"| {m['burst_bytes'] / 1024:.0f} KiB | {m['pause_edges']} ({m['pause_frames']}) "
                       f"| {m['paused_us'] / 1000:.2f} ms | {m['lossless_drops']} | {m['lossy_drops']} | – |")
        out.append(f"| {alpha(r['dynamic_th'])} | {r['senders']} | {r['policy']} | pfcgen over memif at {r['rate']}bit/s "
                   f"(time × {r['time_scale']:.0f}) | {r['burst_bytes'] / 1024:.0f} KiB | {r['pause_edges']} ({r['pause_frames']}) "
                   f"| {r['paused_us'] / 1000:.1f} ms (÷{r['time_scale']:.0f}: {r['paused_us'] / 1000 / r['time_scale']:.2f} ms) "
                   f"| {r['lossless_drops']} | {r['lossy_drops']} | {r['lossless_lost']} / {r['lossless_sent']} |")
    return "\n".join(out) + "\n"


def plot(rows, out):
    try:
        import matplotlib
    except ImportError:
        deb = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(deb) and os.path.exists(deb):
            return subprocess.run([deb, os.path.abspath(__file__), "--replot", out + ".json", "--plot", out]).returncode
        sys.stderr.write(f"{PROG}: matplotlib is missing: apt-get install python3-matplotlib\n")
        return 2
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = [m for m in ("static", "shared_pool", "dsh") if any(r["policy"] == m for r in rows)]
    ns = sorted({r["senders"] for r in rows})
    ths = sorted({r["dynamic_th"] for r in rows})
    fig, grid = plt.subplots(len(ths), 3, figsize=(13, 3.6 * len(ths)), squeeze=False)
    width = 0.8 / max(1, len(modes))
    titles = ["burst absorbed before the first PAUSE (KiB)", "PAUSE frames sent", "time senders paused (ms)"]
    for axes, th in zip(grid, ths):
        for k, m in enumerate(modes):
            by_n = {r["senders"]: r for r in rows if r["policy"] == m and r["dynamic_th"] == th}
            xs = [i + k * width for i in range(len(ns))]
            axes[0].bar(xs, [by_n[n]["burst_bytes"] / 1024 for n in ns], width, label=m)
            axes[1].bar(xs, [by_n[n]["pause_frames"] for n in ns], width, label=m)
            axes[2].bar(xs, [by_n[n]["paused_us"] / 1000 for n in ns], width, label=m)
        for ax, t in zip(axes, titles):
            ax.set_title(f"α = {alpha(th)}: {t}", fontsize=10)
            ax.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(ns))])
            ax.set_xticklabels([f"N={n}" for n in ns])
        axes[0].legend()
    fig.suptitle("Headroom modes on one 6 MiB buffer (4 MiB lossless), N:1 incast at 100G, 40 m, MTU 1500; "
                 "0 lossless drops in every run", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


def main():
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("--bin")
    ap.add_argument("--model")
    ap.add_argument("--out")
    ap.add_argument("--senders", default="2,4,8")
    ap.add_argument("--modes", default="static,shared_pool,dsh")
    ap.add_argument("--dynamic-th", default="-2,0", help="the lossless profile's dynamic_th values (α = 2^x)")
    ap.add_argument("--plot")
    ap.add_argument("--markdown")
    ap.add_argument("--replot")
    ap.add_argument("--pfcgen", help="pfcgen binary: also run each mode at --pfcgen-senders with real PFC-obeying senders")
    ap.add_argument("--pfcgen-senders", default="2")
    ap.add_argument("--pfcgen-rate", default="400M", help="the senders' and the egress's rate (bit/s, M suffix)")
    a = ap.parse_args()
    if a.replot:
        with open(a.replot) as f:
            return plot(json.load(f), a.plot)
    if not (a.bin and a.model and a.out):
        ap.print_usage(sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="pfcswitch-hrc-") as d:
        for th, n, mode in [(int(t), int(n), m) for t in a.dynamic_th.split(",") for n in a.senders.split(",")
                            for m in a.modes.split(",")]:
            r = model(a.model, config(d, n, mode, "model", th), n)
            r["dynamic_th"] = th
            b = r["burst_stalled_frames"]
            below, drops_below = switch_pauses(a.bin, d, n, mode, th, b)
            at, drops_at = switch_pauses(a.bin, d, n, mode, th, b + 1)
            r["switch_check"] = (not below) and at and drops_below == 0 and drops_at == 0
            ok &= r["switch_check"] and r["lossless_drops"] == 0
            print(f"α={alpha(th)} N={n} {mode:<11} burst {r['burst_bytes'] / 1024:7.0f} KiB (stalled: {b} frames/sender, "
                  f"switch: {'no PAUSE' if not below else 'PAUSE!'} at {b}, {'PAUSE' if at else 'no PAUSE!'} "
                  f"at {b + 1}), PAUSE frames {r['pause_frames']}, paused {r['paused_us'] / 1000:.2f} ms, "
                  f"lossless drops {r['lossless_drops']}, lossy drops {r['lossy_drops']}", flush=True)
            rows.append(r)
        gen_rows = []
        if a.pfcgen:
            th = int(a.dynamic_th.split(",")[0])
            for mode in a.modes.split(","):
                g = pfcgen_run(a.bin, a.pfcgen, d, int(a.pfcgen_senders), mode, th, a.pfcgen_rate)
                ok &= g["lossless_drops"] == 0 and g["lossless_lost"] == 0
                print(f"pfcgen α={alpha(th)} N={g['senders']} {mode:<11} burst {g['burst_bytes'] / 1024:7.0f} KiB, "
                      f"PAUSE edges {g['pause_edges']} ({g['pause_frames']} frames), paused {g['paused_us'] / 1000:.1f} ms, "
                      f"lossless drops {g['lossless_drops']}, lost {g['lossless_lost']} of {g['lossless_sent']}, "
                      f"lossy drops {g['lossy_drops']}", flush=True)
                gen_rows.append(g)
    with open(os.path.join(a.out, "headroom-compare.json"), "w") as f:
        json.dump(rows, f, indent=1)
    if gen_rows:
        with open(os.path.join(a.out, "headroom-compare-pfcgen.json"), "w") as f:
            json.dump(gen_rows, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(rows))
            if gen_rows:
                f.write("\nWith real PFC-obeying senders (pfcgen), beside the model's row:\n\n" + markdown_pfcgen(gen_rows, rows))
    if a.plot:
        with open(a.plot + ".json", "w") as f:
            json.dump(rows, f)
        rc = plot(rows, a.plot)
        os.remove(a.plot + ".json")
        if rc:
            return rc
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
