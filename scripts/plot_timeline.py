#!/usr/bin/env python3
"""Plot a pfcswitch timeline CSV (`pfcswitch run --timeline FILE.csv`).

    scripts/plot_timeline.py FILE.csv OUT.png [--title TEXT]
    scripts/plot_timeline.py --demo [OUT.png] [--csv DEMO.csv]
    scripts/plot_timeline.py --gen-demo-csv DEMO.csv
    scripts/plot_timeline.py --fabric OUT.png NAME=FILE.csv[@OFFSET_S] ... [--mark T_S=LABEL] [--title TEXT]

The CSV has two kinds of rows (column `series`): `pg` rows per lossless ingress
(port, PG) and `queue` rows per egress (port, queue) depth. Panels share the time axis:
  * one per lossless (port, PG) that saw traffic (idle ones are left out): the PG's
    buffer use, stacked: shared bytes (bottom, compared with the dashed Dynamic
    Threshold T), headroom bytes above it, private bytes on top; the top of the stack is
    the occupancy. Intervals where the PG is asserted OFF (PAUSE sent) are shaded red;
    PFC frames sent (PAUSE, refresh, RESUME) are the small triangles at the top.
  * at the bottom: the depth in packets of every egress (port, queue) that held packets
    (an incast builds at the egress port, not at the paused ingress PG's port), with
    the intervals where any PG shown is OFF shaded.

--fabric plots several switches' timelines on one time axis (each shifted by its OFFSET_S,
the time its switch started after the first): one lane per (switch, port, PG) that was
ever OFF, shaded while OFF, and the egress queue depths below; --mark draws a labelled
vertical line (scripts/fabric.sh deadlock marks the burst that starts the loop).

--demo writes a synthetic incast (two senders into one 100G port: shared occupancy ramps,
crosses T, PAUSE, headroom absorbs the in-flight bytes, drain, RESUME) and plots it.
Exit status: 0 plotted, 2 unusable input (empty CSV, wrong header, bad row).
"""

import csv
import math
import os
import sys

HEADER = [
    "t_us", "port", "series", "index", "occupancy_bytes", "shared_bytes", "headroom_bytes",
    "off", "threshold_bytes", "pfc_tx_frames", "depth_pkts",
]
PG_COLS = HEADER[4:10]
QUEUE_COLS = HEADER[10:]
PROG = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "plot_timeline.py"


class InputError(Exception):
    pass


def _import_matplotlib():
    """matplotlib with the Agg backend; re-executes with Debian's /usr/bin/python3 when
    the python3 first on PATH (pyenv, venv) lacks python3-matplotlib."""
    try:
        import matplotlib
    except ImportError:
        deb = "/usr/bin/python3"
        if os.path.exists(deb) and os.path.realpath(sys.executable) != os.path.realpath(deb) \
                and not os.environ.get("PLOT_TIMELINE_REEXEC"):
            os.environ["PLOT_TIMELINE_REEXEC"] = "1"
            os.execv(deb, [deb, os.path.abspath(__file__)] + sys.argv[1:])
        sys.stderr.write(f"{PROG}: matplotlib is missing: apt-get install python3-matplotlib\n")
        sys.exit(2)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.transforms as mtransforms
    return plt, mtransforms


def _numbers(path, line, cells):
    try:
        nums = [float(x) for x in cells]
    except ValueError as e:
        raise InputError(f"{path}: line {line}: {e}")
    if not all(math.isfinite(v) for v in nums):
        raise InputError(f"{path}: line {line}: non-finite number")
    return nums


def read_timeline(path):
    """{("pg" | "queue", port, index): {column: [values]}}, each sorted by time."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}")
    with f:
        rows = csv.reader(f)
        header = next(rows, None)
        if header is None or header == [] or all(not c.strip() for c in header):
            raise InputError(f"{path}: empty CSV: no header and no samples")
        header = [c.strip() for c in header]
        if header != HEADER:
            raise InputError(f"{path}: line 1: unexpected header {','.join(header)!r} (expected {','.join(HEADER)!r})")
        series = {}
        for line, row in enumerate(rows, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(HEADER):
                raise InputError(f"{path}: line {line}: {len(row)} fields, expected {len(HEADER)}")
            port, kind = row[1].strip(), row[2].strip()
            if not port:
                raise InputError(f"{path}: line {line}: empty port")
            cols = {"pg": PG_COLS, "queue": QUEUE_COLS}.get(kind)
            if cols is None:
                raise InputError(f"{path}: line {line}: series {kind!r} is neither 'pg' nor 'queue'")
            t, index = _numbers(path, line, row[0:1] + row[3:4])
            nums = _numbers(path, line, [row[HEADER.index(c)] for c in cols])
            s = series.setdefault((kind, port, int(index)), {k: [] for k in cols + ["t_us"]})
            s["t_us"].append(t)
            for k, v in zip(cols, nums):
                s[k].append(v)
    if not series:
        raise InputError(f"{path}: empty CSV: header only, no samples")
    for s in series.values():  # sort by time (the writer appends in order; be safe)
        order = sorted(range(len(s["t_us"])), key=s["t_us"].__getitem__)
        for k in s:
            s[k] = [s[k][i] for i in order]
    return series


def _off_intervals(t, off):
    """[(start, end)] of the runs where off != 0; a run lasts until the next sample."""
    out, start = [], None
    for i, v in enumerate(off):
        if v and start is None:
            start = t[i]
        elif not v and start is not None:
            out.append((start, t[i]))
            start = None
    if start is not None:
        end = t[-1] + (t[-1] - t[-2] if len(t) > 1 else 1)
        out.append((start, end))
    return out


def _byte_unit(peak):
    for div, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if peak >= 2 * div:
            return div, name
    return 1, "B"


def _active(s):
    return any(s["occupancy_bytes"]) or any(s["off"]) or (s["pfc_tx_frames"] and s["pfc_tx_frames"][-1] > s["pfc_tx_frames"][0])


def _shade_off(axis, t, offs, mtransforms):
    """OFF shading as one artist per panel (a long run has thousands of intervals)."""
    tr = mtransforms.blended_transform_factory(axis.transData, axis.transAxes)
    axis.fill_between(t, 0, 1, where=offs, step="post", transform=tr, color="#d62728", alpha=0.15, lw=0)


def plot(series, out_png, title=None):
    plt, mtransforms = _import_matplotlib()
    pgs = {k[1:]: s for k, s in series.items() if k[0] == "pg"}
    queues = {k[1:]: s for k, s in series.items() if k[0] == "queue"}
    shown = {k: s for k, s in pgs.items() if _active(s)} or pgs
    keys = sorted(shown, key=lambda k: (k[0], k[1]))
    tmax = max(max(s["t_us"]) for s in series.values())
    tmin = min(min(s["t_us"]) for s in series.values())
    tdiv, tunit = (1000.0, "ms") if tmax - tmin >= 10_000 else (1.0, "µs")
    if tmax - tmin >= 10_000_000:
        tdiv, tunit = 1e6, "s"
    peak = max([max(max(s["occupancy_bytes"]), max(s["threshold_bytes"]),
                    max(a + b for a, b in zip(s["shared_bytes"], s["headroom_bytes"])))
                for s in shown.values()] or [1])
    bdiv, bunit = _byte_unit(peak)

    n = len(keys)
    fig = plt.figure(figsize=(11, 1.4 + 2.6 * n + 1.8), constrained_layout=True)
    gs = fig.add_gridspec(n + 1, 1, height_ratios=[3] * n + [2])
    first_ax = None
    mk_any = None
    for i, key in enumerate(keys):
        s = shown[key]
        t = [x / tdiv for x in s["t_us"]]
        occ = s["occupancy_bytes"]
        sh = s["shared_bytes"]
        hr = s["headroom_bytes"]
        priv = [max(o - a - b, 0.0) for o, a, b in zip(occ, sh, hr)]
        ax = fig.add_subplot(gs[i], sharex=first_ax)
        first_ax = first_ax or ax
        _shade_off(ax, t, [v != 0 for v in s["off"]], mtransforms)
        ax.stackplot(t, [v / bdiv for v in sh], [v / bdiv for v in hr], [v / bdiv for v in priv],
                     labels=["shared", "headroom", "private"],
                     colors=["#1f77b4", "#ff7f0e", "#bbbbbb"], step=None, alpha=0.85)
        mk = "o" if len(t) < 3 else None  # a line needs two points: mark lone samples
        mk_any = mk_any or mk
        ax.plot(t, [v / bdiv for v in occ], color="black", lw=0.8, marker=mk, label="occupancy")
        ax.plot(t, [v / bdiv for v in s["threshold_bytes"]], color="#2ca02c", ls="--", lw=1.6,
                marker=mk, label="DT threshold T")
        # PFC frames sent: a triangle at each sample where the cumulative count grew.
        f = s["pfc_tx_frames"]
        sent = [t[j] for j in range(1, len(t)) if f[j] > f[j - 1]]
        if sent:
            tr = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
            ax.scatter(sent, [0.97] * len(sent), marker="v", s=22, color="#d62728", transform=tr,
                       zorder=5, clip_on=False, label="PFC frame(s) sent")
        ax.set_ylim(bottom=0, top=max(peak / bdiv * 1.08, 1e-9))
        ax.set_ylabel(f"buffer ({bunit})")
        pauses = len(_off_intervals(t, s["off"]))
        frames = int(f[-1] - f[0]) if f else 0
        ax.set_title(f"ingress {key[0]}  PG {key[1]}   —   {pauses} pause interval(s), "
                     f"{frames} PFC frame(s) sent, peak {max(occ) / bdiv:.1f} {bunit}",
                     loc="left", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelbottom=False)
        # Legend once (same artists in every panel), plus the shading.
        if i == 0:
            from matplotlib.patches import Patch
            h, lab = ax.get_legend_handles_labels()
            h.append(Patch(color="#d62728", alpha=0.25))
            lab.append("PG OFF (PAUSE asserted)")
            ax.legend(h, lab, loc="upper right", fontsize=8, ncol=2, framealpha=0.9)

    qa = fig.add_subplot(gs[n], sharex=first_ax)
    # Shade where any PG shown is OFF (the PG series are sampled together).
    if keys:
        base = shown[keys[0]]
        same = [s for s in shown.values() if s["t_us"] == base["t_us"]]
        offs = [any(s["off"][j] for s in same) for j in range(len(base["t_us"]))]
        _shade_off(qa, [x / tdiv for x in base["t_us"]], offs, mtransforms)
    qpeak = 1
    colors = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
    for j, key in enumerate(sorted(queues, key=lambda k: (k[0], k[1]))):
        s = queues[key]
        # A queue is written while it holds packets (and once when it empties): before
        # its first row it was empty.
        t = [tmin] + s["t_us"] if s["t_us"][0] > tmin else list(s["t_us"])
        d = [0.0] + s["depth_pkts"] if len(t) > len(s["depth_pkts"]) else list(s["depth_pkts"])
        t = [x / tdiv for x in t]
        c = colors[j % len(colors)]
        qa.step(t, d, where="post", color=c, lw=1.2, label=f"{key[0]} queue {key[1]} (peak {int(max(d))})")
        qa.fill_between(t, d, step="post", color=c, alpha=0.15)
        qpeak = max(qpeak, max(d))
    if queues:
        qa.legend(loc="upper right", fontsize=8, framealpha=0.9)
    else:
        qa.text(0.5, 0.5, "no egress queue held packets", transform=qa.transAxes, ha="center", va="center", color="#777777")
    qa.set_title("egress queue depth", loc="left", fontsize=10)
    qa.set_ylabel("packets", fontsize=9)
    qa.set_ylim(bottom=0, top=qpeak * 1.15)
    qa.grid(True, alpha=0.3)
    qa.set_xlabel(f"time ({tunit})")
    if tmax == tmin:  # a single sample time: give the axis some width
        qa.set_xlim(tmin / tdiv - 1, tmax / tdiv + 1)
    fig.suptitle(title or "pfcswitch timeline: lossless PG buffer, PFC pauses and egress queues",
                 fontsize=12)
    fig.savefig(out_png, dpi=90)
    plt.close(fig)


# ----------------------------------------------------------------------------- demo data

def demo_rows():
    """A synthetic incast, sampled every 5 µs: at t = 100 µs Ethernet0 and Ethernet4 each
    start sending a 4 MB burst of PG 3 at 100 Gb/s into Ethernet8 (100 Gb/s). Lossless
    shared segment Bs = 1.5 MiB, α = 1: T = Bs − Σω. Each ingress PG fills at 6.25 KB/µs
    until its occupancy reaches φ + T; the PG goes OFF (PAUSE, refreshed every 168 µs), the
    peer reacts after 4 µs (those bytes land in headroom), the buffer drains at the egress
    rate, and the PG goes ON again (RESUME) once occupancy < φ + T − xon_offset."""
    bs, phi, xon_offset = 1.5 * (1 << 20), 4096.0, 256 * 1024.0
    line = 12500.0  # bytes/µs at 100G
    dt, t_end, start = 1.0, 1000.0, 100.0
    react, refresh = 4.0, 168.0
    ingress = ["Ethernet0", "Ethernet4"]
    left = {p: 4e6 for p in ingress}      # burst bytes still to send
    q = {p: 0.0 for p in ingress}           # PG occupancy
    off = {p: False for p in ingress}
    off_since = {p: 0.0 for p in ingress}
    last_frame = {p: -1e9 for p in ingress}
    frames = {p: 0 for p in ingress}
    rows = []
    egress_q_bytes = 0.0

    def split(p, T):
        private = min(q[p], phi)
        shared = min(max(q[p] - phi, 0.0), T)
        return private, shared, max(q[p] - private - shared, 0.0)

    def threshold():
        return max(bs - sum(min(max(q[p] - phi, 0.0), bs) for p in ingress), 0.0)

    t = 0.0
    while t <= t_end:
        for p in ingress:  # arrivals at line rate until the PAUSE takes effect
            if t >= start and left[p] > 0 and not (off[p] and t - off_since[p] >= react):
                b = min(line * dt, left[p])
                left[p] -= b
                q[p] += b
                egress_q_bytes += b
        total = sum(q.values())  # the egress drains both PGs at line rate, fairly
        drain = min(line * dt, total)
        for p in ingress:
            if total > 0:
                q[p] -= drain * q[p] / total
        egress_q_bytes = max(egress_q_bytes - drain, 0.0)
        T = threshold()
        for p in ingress:  # PFC edges (MMU) and frames (control lcore)
            if not off[p] and q[p] >= phi + T:
                off[p], off_since[p], last_frame[p] = True, t, t
                frames[p] += 1  # PAUSE
            elif off[p] and q[p] < phi + T - xon_offset:
                off[p] = False
                frames[p] += 1  # RESUME
            elif off[p] and t - last_frame[p] >= refresh:
                frames[p] += 1  # refresh before the pause expires
                last_frame[p] = t
        if int(t) % 5 == 0:
            for p in ingress:
                _, shared, headroom = split(p, T)
                rows.append([int(t), p, "pg", 3, int(q[p]), int(shared), int(headroom), int(off[p]),
                             int(T), frames[p], ""])
            # The incast victim: Ethernet8's egress queue for TC 3 (1500-byte frames); its
            # own ingress PG 3 is idle.
            rows.append([int(t), "Ethernet8", "pg", 3, 0, 0, 0, 0, int(T), 0, ""])
            rows.append([int(t), "Ethernet8", "queue", 3, "", "", "", "", "", "", int(egress_q_bytes / 1500)])
        t += dt
    return rows


def write_demo_csv(path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(demo_rows())


def plot_fabric(named, out_png, title=None, marks=()):
    """named: [(switch, series, offset_s)]."""
    plt, _ = _import_matplotlib()
    fig, (lanes, depth) = plt.subplots(2, 1, sharex=True, figsize=(11, 6.5), gridspec_kw={"height_ratios": [1, 1.2]})
    labels = []
    for name, series, off_s in named:
        for (kind, port, index), s in sorted(series.items()):
            t = [off_s + v / 1e6 for v in s["t_us"]]
            if kind == "pg" and any(s["off"]):
                y = len(labels)
                runs = [(a, b - a) for a, b in _off_intervals(t, s["off"])]
                lanes.broken_barh(runs, (y - 0.35, 0.7), color="#d62728", alpha=0.8)
                labels.append(f"{name} {port} PG{index}")
            elif kind == "queue" and any(s["depth_pkts"]):
                depth.step(t, s["depth_pkts"], where="post", label=f"{name} {port} q{index}")
    lanes.set_yticks(range(len(labels)))
    lanes.set_yticklabels(labels)
    lanes.set_ylim(-0.6, max(len(labels), 1) - 0.4)
    lanes.set_title("PFC asserted (PG OFF: PAUSE sent upstream)", fontsize=10, loc="left", pad=28)
    depth.set_ylabel("egress queue depth (packets)")
    depth.set_xlabel("time (s)")
    if depth.lines:
        depth.legend(fontsize=8, loc="upper left", ncol=2)
    for axis in (lanes, depth):
        for t, label in marks:
            axis.axvline(t, color="k", ls="--", lw=1)
        axis.grid(alpha=0.3)
    for i, (t, label) in enumerate(marks):
        lanes.annotate(label, (t, 1.0), xycoords=("data", "axes fraction"), xytext=(3, 4 + 11 * i),
                       textcoords="offset points", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)


def fabric_main(args, title):
    if not args:
        sys.stderr.write(f"usage: {PROG} --fabric OUT.png NAME=FILE.csv[@OFFSET_S] ... [--mark T_S=LABEL]\n")
        return 2
    out, named, marks = args[0], [], []
    rest = args[1:]
    while rest:
        a = rest.pop(0)
        if a == "--mark" and rest:
            t, _, label = rest.pop(0).partition("=")
            marks.append((float(t), label))
            continue
        name, sep, spec = a.partition("=")
        if not sep:
            raise InputError(f"{a!r}: expected NAME=FILE.csv[@OFFSET_S]")
        path, _, off = spec.partition("@")
        named.append((name, read_timeline(path), float(off or 0)))
    plot_fabric(named, out, title, marks)
    print(f"{PROG}: {len(named)} switch timeline(s), wrote {out}")
    return 0


def main(argv):
    args = list(argv)
    title = None
    if "--title" in args:
        i = args.index("--title")
        if i + 1 >= len(args):
            sys.stderr.write(f"{PROG}: --title needs a value\n")
            return 2
        title = args[i + 1]
        del args[i:i + 2]
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    try:
        if args and args[0] == "--fabric":
            return fabric_main(args[1:], title)
        if args and args[0] == "--gen-demo-csv":
            if len(args) != 2:
                sys.stderr.write(f"usage: {PROG} --gen-demo-csv DEMO.csv\n")
                return 2
            write_demo_csv(args[1])
            return 0
        if args and args[0] == "--demo":
            rest = args[1:]
            csv_path = None
            if "--csv" in rest:
                i = rest.index("--csv")
                if i + 1 >= len(rest):
                    sys.stderr.write(f"{PROG}: --csv needs a value\n")
                    return 2
                csv_path = rest[i + 1]
                del rest[i:i + 2]
            out = rest[0] if rest else "timeline-demo.png"
            if csv_path is None:
                csv_path = os.path.splitext(out)[0] + ".csv"
            write_demo_csv(csv_path)
            plot(read_timeline(csv_path), out,
                 title or "pfcswitch timeline (synthetic incast: 2 × 4 MB at 100G → one 100G port, PG 3)")
            print(f"{PROG}: wrote {csv_path} and {out}")
            return 0
        if len(args) != 2:
            sys.stderr.write(f"usage: {PROG} FILE.csv OUT.png [--title TEXT] | --demo [OUT.png] [--csv DEMO.csv]\n")
            return 2
        series = read_timeline(args[0])
        plot(series, args[1], title)
        n_pg = sum(1 for k in series if k[0] == "pg")
        print(f"{PROG}: {n_pg} (port, PG) and {len(series) - n_pg} (port, queue) series, wrote {args[1]}")
        return 0
    except InputError as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
