#!/usr/bin/env python3
"""scripts/incast.sh, step 1: backlogs, buffer and memory sizes, run times (exact
arithmetic); writes the two senders' pcaps and prints shell assignments."""
import math
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pfcsw import write_pcap  # noqa: E402

work, rate, bneck, dur, b_pcp, flen, pfc = sys.argv[1:]
def bps(s):
    m = re.fullmatch(r'\s*([0-9.]+)\s*([kKmMgG]?)(?:bps|bit/s)?\s*', s)
    if not m: sys.exit(f"incast.sh: bad rate '{s}' (e.g. 3M, 500k, 1G)")
    return float(m.group(1)) * {'': 1e6, 'k': 1e3, 'm': 1e6, 'g': 1e9}[m.group(2).lower()]
R, B, S, L, bp = bps(rate), bps(bneck), float(dur), int(flen), int(b_pcp)
if not 64 <= L <= 1500: sys.exit("incast.sh: --frame-len must be 64..1500")
if not 0 <= bp <= 7: sys.exit("incast.sh: --b-pcp must be 0..7")
wire = (L + 24) * 8                      # the shapers count FCS + preamble + IFG
n = max(1, round(R * S / wire))          # frames per sender
if n > 30000: sys.exit(f"incast.sh: {n} frames per sender is too many; lower --rate/--duration or raise --frame-len")
# Upstream buffer: both backlogs plus their flood copies, under DT alpha = 1, twice over.
total = max(16 << 20, 1 << math.ceil(math.log2(12 * n * L + 1)))
mbufs = 1 << math.ceil(math.log2(4 * n + 4096))
mem_up = 128 + mbufs * 9500 // (1 << 20)
speed = "100M" if max(2 * R, B) <= 100e6 else "10G"
# Worst case (PFC on): everything through the bottleneck at >= B/2 per class.
up_secs = math.ceil(2 * n * wire / min(B, 2 * R) * 1.15) + 2
drain = max(1.5, 600e3 * 8 / B + 0.5)
def frame(src, pcp, seq):
    h = bytes([2, 0, 0, 0, 0, 0xdd, 2, 0, 0, 0, 0, src]) + struct.pack('>HHHI', 0x8100, (pcp << 13) | 100, 0x88b5, seq)
    return h + bytes([pcp]) * (L - len(h))
write_pcap(f"{work}/a.pcap", [frame(0x0a, 3, i) for i in range(n)])
write_pcap(f"{work}/b.pcap", [frame(0x0b, bp, i) for i in range(n)])
k = lambda x: f"{round(x / 1e3)}k"
print(f"N={n}\nLINK_RATE={k(2 * R)}\nBNECK_RATE={k(B)}\nSPEED={speed}\nUP_TOTAL={total}\nUP_MBUFS={mbufs}\nUP_MEM={mem_up}\nUP_SECS={up_secs}\nDRAIN={drain:.1f}")
print(f"RATE_BPS={int(R)}\nBNECK_BPS={int(B)}\nWIRE_BITS={wire}")
