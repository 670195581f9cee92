#!/usr/bin/env python3
"""Where a worker's instructions go, per packet, from a callgrind profile.

    scripts/ir_profile.py CALLGRIND_OUT PACKETS [--top N]

CALLGRIND_OUT is one thread's file from
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=cg.out \\
        target/release/pfcswitch run --config dpdk-config/bench-null.toml --duration 2 --stats-json s.json
(the worker is the thread with the largest `summary:`), PACKETS the packets it sent
(Σ tx_packets in s.json). Self cost (exclusive Ir) is grouped by the source file the
instructions were inlined from — which is the stage: parse (src/wire), classify, FDB,
MMU, TX/scheduler, mbuf glue, the PMD (net_null), std collections — and printed as Ir per
packet, largest first, with the total. Needs callgrind_annotate (Debian package valgrind).
"""
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?):(.+?)(?:\s+\[(.+)\])?$")


def stage(path, obj):
    if "librte_net_null" in (obj or "") or "librte_net_null" in path:
        return "PMD net_null (rx/tx burst, mbuf alloc/free)"
    if "librte_mempool" in (obj or "") or "librte_mbuf" in (obj or ""):
        return "DPDK mempool/mbuf"
    if "tls_get_addr" in path or "ld-linux" in (obj or ""):
        return "__tls_get_addr (DPDK's per-lcore TLS, shared linkage)"
    if path.startswith("src/"):
        return path
    m = re.search(r"/src/(.+\.rs)$", path)
    if m and "/rustc/" not in path and "registry" not in path:
        return "src/" + m.group(1)
    m = re.search(r"registry/src/[^/]+/([^/]+)/", path)
    if m:
        return "crate " + m.group(1)
    m = re.search(r"library/(\w+)/src/(.+?)/", path)
    if m:
        return f"std {m.group(2).split('/')[0]}"
    return path.rsplit("/", 1)[-1] if path != "???" else f"??? {obj or ''}".strip()


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    path, packets = argv[0], int(argv[1])
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 20
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", path],
                         capture_output=True, text=True, check=True).stdout
    groups, total = {}, 0
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or m.group(2) == "PROGRAM TOTALS":
            continue
        ir = int(m.group(1).replace(",", ""))
        key = stage(m.group(2), m.group(4))
        groups[key] = groups.get(key, 0) + ir
        total += ir
    print(f"{'where (self Ir, by source of the inlined code)':<58} {'Ir/packet':>10} {'share':>7}")
    for key, ir in sorted(groups.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{key:<58} {ir / packets:>10.1f} {100 * ir / total:>6.1f}%")
    print(f"{'total':<58} {total / packets:>10.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
