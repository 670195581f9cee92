#!/usr/bin/env python3
"""Plot the DCQCN incast over time (docs/dcqcn.md): PFC only beside PFC + DCQCN.

    PFCGEN_INCAST_PLOT=DIR cargo test --test pfcgen_incast dcqcn -- --nocapture
    scripts/plot_dcqcn.py DIR OUT.png [--title TEXT]
    scripts/plot_dcqcn.py --fabric DIR OUT.png --modes pfc,pfc+dcqcn,dcqcn [--title TEXT]

--fabric: the clos-2-4-4 run (scripts/clos_dcqcn.py, `fabric.sh clos-2-4-4 dcqcn-incast
--plot OUT.png` calls it): per mode MODE-rates-HOST.csv (each sender's pfcgen
--rates-csv), each switch's --timeline CSV (SWITCH.csv, every 5 ms: PG OFF states, queue
depths) and timeline.json (each mode's time window, each switch's start time, the
queues the incast can congest). One column per mode, rows: the senders' rates, queue 3
of those ports (packets), and when each switch paused (any of its lossless PGs OFF).

DIR holds what tests/pfcgen_incast.rs writes with PFCGEN_INCAST_PLOT set, per mode (`pfc`,
`dcqcn`): MODE-rates.csv (pfcgen --rates-csv: t_unix_s,stream,tx_bps every 100 ms) and
MODE-switch.csv (t_unix_s,b_queue3_pkts,b_pause_tx,a_pause_tx: B's bottleneck queue and
the PAUSE frames each switch sent so far, polled with `pfcswitch show --json`). One column
per mode, rows sharing the time axis: each sender's rate, the bottleneck queue, PAUSE
frames sent. Exit status: 0 plotted, 2 missing or unusable input.
"""

import csv
import json
import os
import sys

MODES = (("pfc", "PFC only (senders ignore CNPs)"), ("dcqcn", "PFC + DCQCN"))


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def load(d, mode):
    rates, switch = read(os.path.join(d, f"{mode}-rates.csv")), read(os.path.join(d, f"{mode}-switch.csv"))
    if not rates or not switch:
        raise ValueError(f"{mode}: empty CSV")
    streams = {}
    for r in rates:
        streams.setdefault(r["stream"], []).append((float(r["t_unix_s"]), float(r["tx_bps"]) / 1e6))
    # Time 0: the first sample where a stream sent.
    t0 = min((t for v in streams.values() for t, b in v if b > 0), default=float(rates[0]["t_unix_s"]))
    sw = [(float(r["t_unix_s"]) - t0, int(r["b_queue3_pkts"]), int(r["b_pause_tx"]), int(r["a_pause_tx"]))
          for r in switch]
    # Streams that carried traffic (not the receiver's 3-frame MAC-learning broadcast).
    return {k: [(t - t0, b) for t, b in v] for k, v in streams.items() if max(b for _, b in v) > 0.1}, sw


def load_timelines(d):
    """From each switch's --timeline CSV (times made absolute with its start time from
    timeline.json): per switch its PAUSE intervals [(t0, t1)] (any lossless PG OFF), and
    per incast queue ("switch port") its depth steps [(t, packets)]."""
    with open(os.path.join(d, "timeline.json")) as f:
        meta = json.load(f)
    pauses, queues = {}, {q: [] for q in meta["queues"]}
    for sw, start in meta["started"].items():
        off, since, spans = {}, None, []
        for r in read(os.path.join(d, f"{sw}.csv")):
            t = start + int(r["t_us"]) / 1e6
            if r["series"] == "pg":
                off[(r["port"], r["index"])] = r["off"] == "1"
                if any(off.values()) and since is None:
                    since = t
                elif not any(off.values()) and since is not None:
                    spans.append((since, t))
                    since = None
            elif r["series"] == "queue" and r["index"] == "3" and f"{sw} {r['port']}" in queues:
                queues[f"{sw} {r['port']}"].append((t, int(r["depth_pkts"] or 0)))
        if since is not None:
            spans.append((since, t))
        pauses[sw] = spans
    return meta["modes"], pauses, queues


def load_fabric(d, mode, windows, pauses, queues):
    """One mode: senders' rates {host: [(t, Mbit/s)]}, PAUSE spans per switch, queue depth
    steps per incast queue, times from the mode's first frame."""
    streams = {}
    for name in sorted(os.listdir(d)):
        if name.startswith(f"{mode}-rates-") and name.endswith(".csv"):
            host = name[len(f"{mode}-rates-"):-4]
            streams[host] = [(float(r["t_unix_s"]), float(r["tx_bps"]) / 1e6) for r in read(os.path.join(d, name))]
    if not streams or mode not in windows:
        raise ValueError(f"{mode}: no rates CSV or time window in {d}")
    w0, w1 = windows[mode]
    t0 = min((t for v in streams.values() for t, b in v if b > 0), default=w0)
    spans = {sw: [(max(a, w0) - t0, min(b, w1) - t0) for a, b in v if b > w0 and a < w1] for sw, v in pauses.items()}
    depth = {q: [(t - t0, n) for t, n in v if w0 <= t <= w1] for q, v in queues.items()}
    return {h: [(t - t0, b) for t, b in v] for h, v in streams.items()}, spans, depth


def plot_fabric(d, out, modes, title):
    windows, pauses, queues = load_timelines(d)
    data = {m: load_fabric(d, m, windows, pauses, queues) for m in modes}
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = {"pfc": "PFC only (senders ignore CNPs)", "pfc+dcqcn": "PFC + DCQCN", "dcqcn": "DCQCN, PFC off"}
    fig, ax = plt.subplots(3, len(modes), figsize=(5 * len(modes), 8), sharex=True, sharey="row", squeeze=False)
    switches = sorted(pauses)
    for c, m in enumerate(modes):
        streams, spans, depth = data[m]
        for host, v in sorted(streams.items()):
            ax[0][c].plot([t for t, _ in v], [b for _, b in v], label=host)
        ax[0][c].set_title(labels.get(m, m))
        for q, v in sorted(depth.items()):
            if v:
                ax[1][c].step([t for t, _ in v], [n for _, n in v], where="post", label=q)
        for y, sw in enumerate(switches):
            ax[2][c].broken_barh([(a, max(b - a, 0.02)) for a, b in spans[sw]], (y - 0.35, 0.7), color="tab:red")
        ax[2][c].set_yticks(range(len(switches)), switches)
        ax[2][c].set_xlabel("time since the first frame (s)")
        ax[1][c].legend(loc="upper right", fontsize="small")
    ax[0][0].set_ylabel("sender rate (Mbit/s)")
    ax[1][0].set_ylabel("queue 3 toward h41 (packets)")
    ax[2][0].set_ylabel("PAUSE (a lossless PG OFF)")
    ax[0][0].legend(loc="lower left")
    for row in ax:
        for a in row:
            a.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    print(f"plot_dcqcn: wrote {out}")
    return 0


def main(argv):
    if argv[:1] == ["--fabric"]:
        rest = argv[1:]
        opt = {k: rest[rest.index(k) + 1] for k in ("--modes", "--title") if k in rest}
        pos = [a for a in rest if not a.startswith("--") and a not in opt.values()]
        if len(pos) != 2:
            print(__doc__, file=sys.stderr)
            return 2
        try:
            return plot_fabric(pos[0], pos[1], opt.get("--modes", "pfc,pfc+dcqcn,dcqcn").split(","),
                               opt.get("--title", "clos-2-4-4 RoCEv2 incast"))
        except (OSError, ValueError, KeyError) as e:
            print(f"plot_dcqcn: {e}", file=sys.stderr)
            return 2
    args = [a for a in argv if not a.startswith("--")]
    title = argv[argv.index("--title") + 1] if "--title" in argv else "pfcgen incast through two switches, RoCEv2 + ECN"
    if "--title" in argv:
        args.remove(title)
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d, out = args
    try:
        data = {m: load(d, m) for m, _ in MODES}
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_dcqcn: {e}", file=sys.stderr)
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 2, figsize=(12, 8), sharex="col", sharey="row")
    for c, (m, label) in enumerate(MODES):
        streams, sw = data[m]
        for name, v in sorted(streams.items()):
            ax[0][c].plot([t for t, _ in v], [b for _, b in v], label=name)
        ax[0][c].set_title(label)
        for q in sorted(sw[0][1]):
            ax[1][c].plot([r[0] for r in sw], [r[1][q] for r in sw], label=q.replace("_", " "))
        ax[2][c].step([r[0] for r in sw], [r[2] for r in sw], where="post", label="B (bottleneck) to A")
        ax[2][c].step([r[0] for r in sw], [r[3] for r in sw], where="post", label="A to the senders")
        ax[2][c].set_xlabel("time since the first frame (s)")
    ax[0][0].set_ylabel("sender rate (Mbit/s)")
    ax[1][0].set_ylabel("B queue 3 (packets)")
    ax[2][0].set_ylabel("PAUSE frames sent")
    ax[0][1].legend(loc="upper right")
    ax[2][0].legend(loc="upper left")
    for row in ax:
        for a in row:
            a.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    print(f"plot_dcqcn: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
