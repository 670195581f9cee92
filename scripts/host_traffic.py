#!/usr/bin/env python3
"""Raw Ethernet traffic from a kernel host (run inside its namespace with `ip netns exec`),
standard library only. IPv4/UDP frames with a chosen DSCP, so the switch's default
`trust = "dscp"` classifies them (DSCP 3 -> TC 3, lossless; DSCP 0 -> TC 1, lossy).

    host_traffic.py flood IFACE DST_MAC DSCP LEN SECONDS
        Send as fast as the socket takes for SECONDS; prints {"sent": n}.
    host_traffic.py burst IFACE SRC_MAC DST_MAC DSCP LEN COUNT
        Send COUNT frames at once from a given source MAC (e.g. to an address no switch
        knows: flooded); prints {"sent": n}.
    host_traffic.py vlan-burst IFACE DST_MAC VID PCP DSCP LEN COUNT
        Send COUNT frames of LEN bytes (+ 4 for the tag) at once, 802.1Q-tagged VID with
        PCP: a host that marks priority by PCP (a VLAN sub-interface with
        `egress-qos-map`), on a kernel without 802.1Q; prints {"sent": n}.
    host_traffic.py pause-probe IFACE DST_MAC DSCP LEN COUNT PRIORITY TIMEOUT_S
        Send COUNT frames, then wait for a PFC frame that pauses PRIORITY. Prints one
        JSON line: delay_us from the last frame sent to the PAUSE's arrival (null if none
        came within TIMEOUT_S), and the data frames/bytes that arrived in between (what
        was queued ahead of the PAUSE on its way here).
    host_traffic.py udp-send DST_IP PORT RATE_BPS SECONDS DSCP LEN
        Kernel UDP socket, IP_TOS = DSCP << 2, paced at RATE_BPS (payload bits); prints
        {"sent": n, "bytes": b}.
    host_traffic.py udp-recv PORT SECONDS [EXPECT_FILE]
        Count datagrams for SECONDS; with EXPECT_FILE, stop earlier once that file exists
        and holds a count already received (the sender's, written when it is done: no
        wall-clock window that a late sender on a busy machine could miss); prints
        {"received": n, "bytes": b}.
    host_traffic.py flood-ip IFACE DST_MAC SRC_IP DST_IP SECONDS [DSCP]
        Raw IPv4/UDP frames (64 bytes, DSCP 0) from SRC_IP to DST_IP (e.g. a router's own
        address) as fast as the socket takes for SECONDS; prints {"sent": n}.
    host_traffic.py udp-burst DST_IP PORT COUNT TOS LEN
        Kernel UDP socket, IP_TOS = TOS (DSCP << 2 | ECN), COUNT datagrams of LEN bytes as
        fast as it takes them; prints {"sent": n}.
    host_traffic.py udp-flows DST_IP PORT NFLOWS COUNT
        NFLOWS kernel UDP sockets on source ports 40000.., COUNT datagrams each (round
        robin); prints {"sent": n}.
    host_traffic.py udp-sports PORT SECONDS
        Like udp-recv, and counts datagrams per source port: {"received": n, "sports":
        {"40000": k, ...}, "times": {"40000": [first, last], ...}} (CLOCK_MONOTONIC s).
    host_traffic.py tcp-send DST_IP PORT SECONDS DSCP
        Kernel TCP, IP_TOS = DSCP << 2, as fast as it goes; prints {"sent_bytes": b}.
    host_traffic.py nd-flood IFACE TARGET_IP6 SRC_PREFIX64 COUNT
        COUNT IPv6 neighbour solicitations for TARGET_IP6 (to its solicited-node group),
        each from a new spoofed source in SRC_PREFIX64 (e.g. fd00:1::) with a new MAC in
        its source link-layer option: every one makes the target's kernel create a
        neighbour entry; prints {"sent": n}.
    host_traffic.py tcp-recv PORT TIMEOUT_S
        Accept one connection, read to its end; prints {"bytes": b, "seconds": s,
        "goodput_bps": g}.
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


def ipv4_frame(dst, src, dscp, length, seq, src_ip="198.18.0.250", dst_ip="198.18.0.251"):
    ip_len = length - 14
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2, ip_len, seq & 0xFFFF, 0, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", 4791, 4791, ip_len - 20, 0) + struct.pack("!I", seq)
    frame = dst + src + b"\x08\x00" + ip + udp
    return frame.ljust(length, b"\0")


def flood(iface, dst, dscp, length, seconds):
    send_for(iface, ipv4_frame(mac_bytes(dst), iface_mac(iface), int(dscp), int(length), 0), seconds)


def send_for(iface, frame, seconds):
    """Send `frame` on `iface` as fast as the socket takes it for SECONDS; prints {"sent": n}."""
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


def flood_ip(iface, dst, src_ip, dst_ip, seconds, dscp=0):
    send_for(iface, ipv4_frame(mac_bytes(dst), iface_mac(iface), int(dscp), 64, 0, src_ip, dst_ip), seconds)


def udp_burst(dst, port, count, tos, length):
    payload = b"\0" * int(length)
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(tos))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        for i in range(int(count)):
            while True:
                try:
                    s.sendto(struct.pack("!I", i) + payload[4:], (dst, int(port)))
                    sent += 1
                    break
                except OSError:
                    time.sleep(0.0001)
    print(json.dumps({"sent": sent}))


def udp_flows(dst, port, nflows, count):
    socks = []
    for i in range(int(nflows)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", 40000 + i))
        socks.append(s)
    sent = 0
    for _ in range(int(count)):
        for s in socks:
            s.sendto(b"flow" * 16, (dst, int(port)))
            sent += 1
        time.sleep(0.001)
    for s in socks:
        s.close()
    print(json.dumps({"sent": sent}))


def udp_sports(port, seconds):
    n = 0
    sports = {}
    # Per source port: first and last arrival, CLOCK_MONOTONIC seconds (one clock for every
    # namespace of the machine: receivers in two hosts compare).
    times = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        big_rcvbuf(s)
        s.bind(("0.0.0.0", int(port)))
        s.settimeout(0.2)
        end = time.monotonic() + float(seconds)
        while time.monotonic() < end:
            try:
                _, addr = s.recvfrom(65536)
            except socket.timeout:
                continue
            now = time.monotonic()
            n += 1
            k = str(addr[1])
            sports[k] = sports.get(k, 0) + 1
            times[k] = [times.get(k, [now])[0], now]
    print(json.dumps({"received": n, "sports": sports, "times": times}))


def burst(iface, src, dst, dscp, length, count):
    frames = [ipv4_frame(mac_bytes(dst), mac_bytes(src), int(dscp), int(length), i) for i in range(int(count))]
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        for f in frames:
            s.send(f)
    print(json.dumps({"sent": len(frames)}))


def vlan_burst(iface, dst, vid, pcp, dscp, length, count):
    """COUNT IPv4/UDP frames from IFACE's MAC, 802.1Q-tagged VID/PCP: what a VLAN
    sub-interface with `egress-qos-map 0:PCP` puts on the wire, for a kernel without
    802.1Q (CONFIG_VLAN_8021Q unset)."""
    tag = struct.pack("!HH", 0x8100, (int(pcp) & 7) << 13 | (int(vid) & 0xFFF))
    src = iface_mac(iface)
    frames = [ipv4_frame(mac_bytes(dst), src, int(dscp), int(length), i) for i in range(int(count))]
    frames = [f[:12] + tag + f[12:] for f in frames]
    sent = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        for f in frames:
            while True:
                try:
                    s.send(f)
                    sent += 1
                    break
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


def udp_send(dst, port, rate_bps, seconds, dscp, length):
    length, rate = int(length), float(rate_bps)
    payload = b"\0" * length
    gap = length * 8 / rate
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(dscp) << 2)
        start = time.monotonic()
        end = start + float(seconds)
        while time.monotonic() < end:
            due = start + sent * gap
            if due >= end:
                break
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                s.sendto(struct.pack("!I", sent) + payload[4:], (dst, int(port)))
                sent += 1
            except OSError:
                time.sleep(0.001)
    print(json.dumps({"sent": sent, "bytes": sent * length}))


def big_rcvbuf(s):
    """8 MiB of receive buffer: past net.core.rmem_max when root (SO_RCVBUFFORCE), so a
    receiver the scheduler leaves aside for a while on a busy machine loses nothing."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUFFORCE, 8 << 20)
    except (OSError, AttributeError):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)


def expected(path):
    """The count in `path`, or None while it does not exist (or is being written)."""
    try:
        with open(path) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def udp_recv(port, seconds, expect_file=None):
    n = nbytes = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        big_rcvbuf(s)
        s.bind(("0.0.0.0", int(port)))
        s.settimeout(0.2)
        end = time.monotonic() + float(seconds)
        want = None
        while time.monotonic() < end and (want is None or n < want):
            try:
                data = s.recv(65536)
            except socket.timeout:
                # Quiet: has the sender said how many it sent?
                if expect_file is not None:
                    want = expected(expect_file)
                continue
            n += 1
            nbytes += len(data)
    print(json.dumps({"received": n, "bytes": nbytes}))


def tcp_send(dst, port, seconds, dscp):
    chunk = b"\0" * 65536
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(dscp) << 2)
        s.settimeout(10)
        for _ in range(50):
            try:
                s.connect((dst, int(port)))
                break
            except (ConnectionRefusedError, socket.timeout):
                time.sleep(0.1)
        end = time.monotonic() + float(seconds)
        while time.monotonic() < end:
            sent += s.send(chunk)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)
    print(json.dumps({"sent_bytes": sent}))


def tcp_recv(port, timeout_s):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", int(port)))
        srv.listen(1)
        srv.settimeout(float(timeout_s))
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(float(timeout_s))
            total, start = 0, time.monotonic()
            while True:
                data = conn.recv(1 << 20)
                if not data:
                    break
                total += len(data)
            secs = time.monotonic() - start
    print(json.dumps({"bytes": total, "seconds": round(secs, 3), "goodput_bps": int(total * 8 / secs)}))


def nd_solicit(target, src, mac):
    """An ICMPv6 neighbour solicitation for `target` from `src` (16 bytes each), SLLAO `mac`."""
    group = bytes.fromhex("ff0200000000000000000001ff") + target[13:]
    body = struct.pack("!BBHI", 135, 0, 0, 0) + target + struct.pack("!BB", 1, 1) + mac
    pseudo = src + group + struct.pack("!I3xB", len(body), 58)
    body = body[:2] + struct.pack("!H", checksum(pseudo + body)) + body[4:]
    ip6 = struct.pack("!IHBB", 6 << 28, len(body), 58, 255) + src + group
    return bytes.fromhex("3333") + group[12:] + mac + b"\x86\xdd" + ip6 + body


def nd_flood(iface, target_ip, src_prefix, count):
    target = socket.inet_pton(socket.AF_INET6, target_ip)
    prefix = socket.inet_pton(socket.AF_INET6, src_prefix)[:8]
    sent = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        for i in range(int(count)):
            src = prefix + struct.pack("!II", 0x5f000000 | (i >> 16), 0x10000 + (i & 0xFFFF))
            mac = struct.pack("!HI", 0x0200 | 0x5f, i)
            while True:
                try:
                    s.send(nd_solicit(target, src, mac))
                    sent += 1
                    break
                except OSError:
                    time.sleep(0.0001)
    print(json.dumps({"sent": sent}))


COMMANDS = {
    "nd-flood": (nd_flood, 4),
    "flood": (flood, 5),
    "flood-ip": (flood_ip, 5),
    "udp-burst": (udp_burst, 5),
    "udp-flows": (udp_flows, 4),
    "udp-sports": (udp_sports, 2),
    "pause-probe": (pause_probe, 7),
    "burst": (burst, 6),
    "vlan-burst": (vlan_burst, 7),
    "udp-send": (udp_send, 6),
    "udp-recv": (udp_recv, 2),
    "tcp-send": (tcp_send, 4),
    "tcp-recv": (tcp_recv, 2),
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    fn, nargs = COMMANDS[sys.argv[1]]
    # Trailing optional arguments (flood-ip's DSCP).
    optional = {"flood-ip": 1, "udp-recv": 1}.get(sys.argv[1], 0)
    if not 2 + nargs <= len(sys.argv) <= 2 + nargs + optional:
        sys.exit(__doc__)
    fn(*sys.argv[2:])


if __name__ == "__main__":
    main()
