#!/usr/bin/env python3
"""Raw Ethernet traffic from a kernel host (run inside its namespace with `ip netns exec`),
standard library only. IPv4/UDP frames with a chosen DSCP, so the switch's default
`trust = "dscp"` classifies them (DSCP 3 -> TC 3, lossless; DSCP 0 -> TC 1, lossy).

    host_traffic.py flood IFACE DST_MAC DSCP LEN SECONDS
        Send as fast as the socket takes for SECONDS; prints {"sent": n}.
    host_traffic.py pause-probe IFACE DST_MAC DSCP LEN COUNT PRIORITY TIMEOUT_S
        Send COUNT frames, then wait for a PFC frame that pauses PRIORITY. Prints one
        JSON line: delay_us from the last frame sent to the PAUSE's arrival (null if none
        came within TIMEOUT_S), and the data frames/bytes that arrived in between (what
        was queued ahead of the PAUSE on its way here).
"""
import json
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003


def mac_bytes(text):
    return bytes.fromhex(text.replace(":", ""))


def iface_mac(iface):
    with open(f"/sys/class/net/{iface}/address") as f:
        return mac_bytes(f.read().strip())


def checksum(hdr):
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_frame(dst, src, dscp, length, seq):
    ip_len = length - 14
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2, ip_len, seq & 0xFFFF, 0, 64, 17, 0,
                     bytes([198, 18, 0, 250]), bytes([198, 18, 0, 251]))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", 4791, 4791, ip_len - 20, 0) + struct.pack("!I", seq)
    frame = dst + src + b"\x08\x00" + ip + udp
    return frame.ljust(length, b"\0")


def flood(iface, dst, dscp, length, seconds):
    src = iface_mac(iface)
    frame = ipv4_frame(mac_bytes(dst), src, int(dscp), int(length), 0)
    sent = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        end = time.monotonic() + float(seconds)
        while time.monotonic() < end:
            for _ in range(64):
                try:
                    s.send(frame)
                    sent += 1
                except OSError:
                    time.sleep(0.0001)
    print(json.dumps({"sent": sent}))


def pauses(frame, prio):
    """A PFC frame (EtherType 0x8808, opcode 0x0101) with a non-zero time for `prio`."""
    if len(frame) < 34 or frame[12:14] != b"\x88\x08" or frame[14:16] != b"\x01\x01":
        return False
    enable = struct.unpack("!H", frame[16:18])[0]
    quanta = struct.unpack("!H", frame[18 + 2 * prio:20 + 2 * prio])[0]
    return bool(enable & (1 << prio)) and quanta > 0


def pause_probe(iface, dst, dscp, length, count, prio, timeout_s):
    src = iface_mac(iface)
    frames = [ipv4_frame(mac_bytes(dst), src, int(dscp), int(length), i) for i in range(int(count))]
    prio = int(prio)
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)) as s:
        s.bind((iface, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        # What arrived before the burst is not ours to count.
        s.setblocking(False)
        try:
            while True:
                s.recv(65536)
        except BlockingIOError:
            pass
        for f in frames:
            s.send(f)
        sent_ns = time.monotonic_ns()
        s.settimeout(0.05)
        end = sent_ns + int(float(timeout_s) * 1e9)
        data_frames = data_bytes = 0
        pause_ns = None
        while time.monotonic_ns() < end:
            try:
                f, addr = s.recvfrom(65536)
            except socket.timeout:
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            now = time.monotonic_ns()
            if pauses(f, prio):
                pause_ns = now
                break
            if f[12:14] != b"\x88\x08":
                data_frames += 1
                data_bytes += len(f)
    print(json.dumps({
        "sent": len(frames),
        "delay_us": None if pause_ns is None else (pause_ns - sent_ns) / 1000,
        "data_frames_before_pause": data_frames,
        "data_bytes_before_pause": data_bytes,
    }))


def main():
    if len(sys.argv) >= 7 and sys.argv[1] == "flood":
        flood(*sys.argv[2:7])
    elif len(sys.argv) >= 9 and sys.argv[1] == "pause-probe":
        pause_probe(*sys.argv[2:9])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
