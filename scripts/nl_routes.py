#!/usr/bin/env python3
"""Install routes the way FRR's zebra does: one rtnetlink socket, RTM_NEWROUTE messages
packed many to a send, their acknowledgements read while more are sent (a window), not
one request and one wait per route as `ip -batch` does.

    nl_routes.py BATCH_FILE      (inside the namespace: `ip netns exec NS nl_routes.py ...`)

BATCH_FILE holds `ip -batch` lines of one shape, what scripts/bench_tables.py writes:
`route add PREFIX nexthop via GW dev DEV [nexthop via GW dev DEV ...]` (IPv4 or IPv6;
a route replaces one of the same prefix). Prints one JSON line: routes sent, refused (with
the first error), seconds from the first send to the last acknowledgement, and both
instants (`time.monotonic()`, the system's CLOCK_MONOTONIC). The messages are built before
the clock starts, as a routing daemon has them in memory.
"""
import ipaddress
import json
import os
import socket
import struct
import sys
import time

RTM_NEWROUTE = 24
NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_REPLACE, NLM_F_CREATE = 1, 4, 0x100, 0x400
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_MULTIPATH = 1, 4, 5, 9
RT_TABLE_MAIN, RTPROT_STATIC, RT_SCOPE_UNIVERSE, RTN_UNICAST = 254, 4, 0, 1
# Messages per send, and sent but not yet acknowledged at most (the kernel's acks must fit
# the socket's receive buffer).
PER_SEND, WINDOW = 256, 4096


def rta(kind, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + b"\0" * (-n % 4)


def route_msg(seq, line, ifindex):
    words = line.split()
    if words[:2] != ["route", "add"]:
        raise ValueError(f"not a `route add` line: {line!r}")
    net = ipaddress.ip_network(words[2], strict=False)
    hops = []
    i = 3
    while i < len(words):
        if words[i] != "nexthop" or words[i + 1] != "via" or words[i + 3] != "dev":
            raise ValueError(f"expected `nexthop via GW dev DEV`: {line!r}")
        hops.append((ipaddress.ip_address(words[i + 2]).packed, ifindex(words[i + 4])))
        i += 5
    family = socket.AF_INET if net.version == 4 else socket.AF_INET6
    attrs = rta(RTA_DST, net.network_address.packed)
    if len(hops) == 1:
        attrs += rta(RTA_GATEWAY, hops[0][0]) + rta(RTA_OIF, struct.pack("=i", hops[0][1]))
    else:
        mp = b""
        for gw, idx in hops:
            sub = rta(RTA_GATEWAY, gw)
            mp += struct.pack("=HBBi", 8 + len(sub), 0, 0, idx) + sub
        attrs += rta(RTA_MULTIPATH, mp)
    body = struct.pack("=BBBBBBBBI", family, net.prefixlen, 0, 0, RT_TABLE_MAIN, RTPROT_STATIC,
                       RT_SCOPE_UNIVERSE, RTN_UNICAST, 0) + attrs
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWROUTE, flags, seq, 0) + body


def main():
    with open(sys.argv[1]) as f:
        lines = [ln.strip() for ln in f if ln.strip()]
    cache = {}

    def ifindex(name):
        if name not in cache:
            cache[name] = socket.if_nametoindex(name)
        return cache[name]

    msgs = [route_msg(seq + 1, ln, ifindex) for seq, ln in enumerate(lines)]
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind((0, 0))
    acked, refused, first_error = 0, 0, None

    def read_acks(block):
        nonlocal acked, refused, first_error
        data = s.recv(1 << 20, 0 if block else socket.MSG_DONTWAIT)
        off = 0
        while off + 16 <= len(data):
            n, kind, _, seq, _ = struct.unpack_from("=IHHII", data, off)
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("=i", data, off + 16)[0]
                acked += 1
                if err != 0:
                    refused += 1
                    first_error = first_error or f"{lines[seq - 1]}: {-err} ({os.strerror(-err)})"
            off += (n + 3) & ~3

    t0 = time.monotonic()
    sent = 0
    while sent < len(msgs):
        while sent - acked >= WINDOW:
            read_acks(True)
        k = min(PER_SEND, len(msgs) - sent, WINDOW - (sent - acked))
        s.send(b"".join(msgs[sent:sent + k]))
        sent += k
        try:
            while True:
                read_acks(False)
        except BlockingIOError:
            pass
    while acked < sent:
        read_acks(True)
    # CLOCK_MONOTONIC is the system's: the caller times its FIB against `start`.
    out = {"routes": sent, "refused": refused, "first_error": first_error, "start": t0, "end": time.monotonic()}
    out["seconds"] = round(out["end"] - t0, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
