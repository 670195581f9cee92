#!/usr/bin/env python3
"""Frames a router must never relay, and one it must route, sent from a kernel host
(run inside its namespace with `ip netns exec`), standard library only. Each frame carries
its name after the marker `PFCSW-RC:` in its payload, so a capture at the far side tells
which ones crossed (docs/routing.md, "A router's contract"; tests/router_contract.rs).

    router_probe.py send IFACE ROUTER_MAC PEER_MAC SRC_IP DST_IP SRC6 DST6 COUNT
        Send COUNT copies of every case: to the router MAC (SRC_IP -> DST_IP, the far
        host), to PEER_MAC (the far host's MAC: must not be bridged), broadcast and
        multicast. Prints {"sent": {name: n}}.
    router_probe.py broadcast IFACE ETHERTYPE
        One broadcast frame of ETHERTYPE (hex, e.g. 88b5), marker `loop`. Prints {"sent": 1}.
    router_probe.py arp-flood IFACE SRC_IP SECONDS [ASK_IP]
        Broadcast ARP requests from SRC_IP for every address of its /24 in turn, as fast as
        the socket takes them, for SECONDS; with ASK_IP (the router's address), every other
        request asks for it, which the router's kernel answers. Prints {"sent": n}.
    router_probe.py arp-ask IFACE SRC_IP TARGET_IP COUNT INTERVAL_S
        COUNT ARP requests for TARGET_IP, one every INTERVAL_S, each waiting up to
        INTERVAL_S for its reply. Prints {"asked": n, "answered": m}.
"""
import json
import select
import socket
import struct
import sys
import time

# The frame helpers the other host script has (scripts/ is on sys.path when run).
from host_traffic import checksum, iface_mac, mac_bytes

MARK = b"PFCSW-RC:"


def payload(name):
    return MARK + name.encode() + b"\0"


def udp4(src_ip, dst_ip, name, ttl=64, bad_sum=False, options=b""):
    data = struct.pack("!HHHH", 40000, 5001, 8 + len(payload(name)), 0) + payload(name)
    ihl = 5 + len(options) // 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(data), 1, 0x4000, ttl, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip)) + options
    csum = checksum(ip) ^ (0x5A5A if bad_sum else 0)
    return ip[:10] + struct.pack("!H", csum) + ip[12:] + data


def udp6(src, dst, name):
    data = struct.pack("!HHHH", 40000, 5001, 8 + len(payload(name)), 0) + payload(name)
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(data), 17, 64,
                     socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst))
    return ip + data


def eth(dst, src, ethertype, body, tag=None):
    t = struct.pack("!HH", 0x8100, tag) if tag is not None else b""
    return (dst + src + t + struct.pack("!H", ethertype) + body).ljust(60, b"\0")


def cases(src, rmac, peer, src_ip, dst_ip, src6, dst6):
    bcast = b"\xff" * 6
    v4, v6 = 0x0800, 0x86DD
    yield "good", eth(rmac, src, v4, udp4(src_ip, dst_ip, "good"))
    yield "good6", eth(rmac, src, v6, udp6(src6, dst6, "good6"))
    yield "bcast_udp", eth(bcast, src, v4, udp4(src_ip, "255.255.255.255", "bcast_udp"))
    yield "bcast_88b5", eth(bcast, src, 0x88B5, payload("bcast_88b5"))
    yield "mcast_239", eth(b"\x01\x00\x5e\x01\x01\x01", src, v4, udp4(src_ip, "239.1.1.1", "mcast_239", ttl=8))
    yield "foreign_ttl1", eth(peer, src, v4, udp4(src_ip, dst_ip, "foreign_ttl1", ttl=1))
    yield "foreign", eth(peer, src, v4, udp4(src_ip, dst_ip, "foreign"))
    yield "nonip_router", eth(rmac, src, 0x88B5, payload("nonip_router"))
    yield "bad_checksum", eth(rmac, src, v4, udp4(src_ip, dst_ip, "bad_checksum", bad_sum=True))
    for m in ["127.0.0.1", "0.0.0.0", "224.1.1.1", "240.0.0.1", "255.255.255.255"]:
        name = "martian_" + m
        yield name, eth(rmac, src, v4, udp4(m, dst_ip, name))
    for m in ["::", "::1", "ff02::1", "fe80::2"]:
        name = "martian6_" + m
        yield name, eth(rmac, src, v6, udp6(m, dst6, name))
    yield "tagged_100", eth(rmac, src, v4, udp4(src_ip, dst_ip, "tagged_100"), tag=(3 << 13) | 100)
    yield "priority_tagged", eth(rmac, src, v4, udp4(src_ip, dst_ip, "priority_tagged"), tag=(3 << 13))
    # Record Route (RFC 791): the kernel, not the dataplane, forwards it (and records).
    rr = bytes([7, 11, 4]) + b"\0" * 8 + b"\0"
    yield "record_route", eth(rmac, src, v4, udp4(src_ip, dst_ip, "record_route", options=rr))


def send(iface, rmac, peer, src_ip, dst_ip, src6, dst6, count):
    sent = {}
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        for name, frame in cases(iface_mac(iface), mac_bytes(rmac), mac_bytes(peer), src_ip, dst_ip, src6, dst6):
            for _ in range(int(count)):
                s.send(frame)
            sent[name] = int(count)
    print(json.dumps({"sent": sent}))


def broadcast(iface, ethertype):
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        et = int(ethertype, 16)
        body = udp4("198.18.1.2", "255.255.255.255", "loop") if et == 0x0800 else payload("loop")
        s.send(eth(b"\xff" * 6, iface_mac(iface), et, body))
    print(json.dumps({"sent": 1}))


def arp_request(src_mac, src_ip, target_ip):
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, src_mac, socket.inet_aton(src_ip),
                       b"\0" * 6, socket.inet_aton(target_ip))
    return eth(b"\xff" * 6, src_mac, 0x0806, body)


def arp_flood(iface, src_ip, seconds, ask_ip=None):
    mac = iface_mac(iface)
    net = src_ip.rsplit(".", 1)[0]
    frames = [arp_request(mac, src_ip, f"{net}.{i}") for i in range(2, 255)]
    if ask_ip:
        ask = arp_request(mac, src_ip, ask_ip)
        frames = [f for x in frames for f in (x, ask)]
    sent = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        end = time.monotonic() + float(seconds)
        while time.monotonic() < end:
            for f in frames:
                try:
                    s.send(f)
                    sent += 1
                except OSError:
                    time.sleep(0.0001)
    print(json.dumps({"sent": sent}))


def arp_ask(iface, src_ip, target_ip, count, interval):
    mac = iface_mac(iface)
    req = arp_request(mac, src_ip, target_ip)
    want = socket.inet_aton(target_ip)
    answered = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806)) as s:
        s.bind((iface, 0))
        for _ in range(int(count)):
            s.send(req)
            end = time.monotonic() + float(interval)
            got = False
            while not got and time.monotonic() < end:
                r, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
                if not r:
                    break
                f = s.recv(2048)
                # An ARP reply (op 2) from TARGET_IP to us.
                got = len(f) >= 42 and f[20:22] == b"\0\x02" and f[28:32] == want and f[0:6] == mac
            answered += got
            time.sleep(max(0.0, end - time.monotonic()))
    print(json.dumps({"asked": int(count), "answered": answered}))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "send" and len(args) == 8:
        send(*args)
    elif cmd == "broadcast" and len(args) == 2:
        broadcast(*args)
    elif cmd == "arp-flood" and len(args) in (3, 4):
        arp_flood(*args)
    elif cmd == "arp-ask" and len(args) == 5:
        arp_ask(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
