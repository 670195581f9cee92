"""Helpers shared by the Python parts of scripts/: pcap files (classic libpcap format,
LINKTYPE_ETHERNET) and pfcswitch's stats JSON (`run --stats-json`)."""
import json
import struct


def write_pcap(path, frames):
    """Write Ethernet frames to a classic little-endian pcap (µs timestamps 1 s + i µs)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1, i, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    """The frames of a little-endian pcap (µs or ns magic), in order."""
    b = open(path, "rb").read()
    off, frames = 24, []
    while off + 16 <= len(b):
        incl = struct.unpack("<I", b[off + 8:off + 12])[0]
        frames.append(b[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def load_stats(path):
    """A stats JSON written by `pfcswitch run --stats-json`."""
    with open(path) as f:
        return json.load(f)


def port(stats, name):
    """The `ports[]` entry named `name`."""
    return next(p for p in stats["ports"] if p["name"] == name)
