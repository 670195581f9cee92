#!/usr/bin/env python3
"""Plot the DCQCN incast over time (docs/dcqcn.md): PFC only beside PFC + DCQCN.

    PFCGEN_INCAST_PLOT=DIR cargo test --test pfcgen_incast dcqcn -- --nocapture
    scripts/plot_dcqcn.py DIR OUT.png [--title TEXT]

DIR holds what tests/pfcgen_incast.rs writes with PFCGEN_INCAST_PLOT set, per mode (`pfc`,
`dcqcn`): MODE-rates.csv (pfcgen --rates-csv: t_unix_s,stream,tx_bps every 100 ms) and
MODE-switch.csv (t_unix_s,b_queue3_pkts,b_pause_tx,a_pause_tx: B's bottleneck queue and
the PAUSE frames each switch sent so far, polled with `pfcswitch show --json`). One column
per mode, rows sharing the time axis: each sender's rate, the bottleneck queue, PAUSE
frames sent. Exit status: 0 plotted, 2 missing or unusable input.
"""

import csv
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


def main(argv):
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
        ax[1][c].plot([r[0] for r in sw], [r[1] for r in sw], color="tab:purple")
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
