#!/usr/bin/env python3
"""Send 802.1Qbb PFC frames from a host's interface with a raw (AF_PACKET) socket, as a
server NIC would: dst 01-80-C2-00-00-01, EtherType 0x8808, opcode 0x0101, padded to 60
bytes. Standard library only (run it inside the host's namespace with `ip netns exec`).

    send_pfc.py IFACE PRIORITY QUANTA [COUNT]
"""
import socket
import sys


def pfc_frame(src, prio, quanta):
    times = b"".join((quanta if i == prio else 0).to_bytes(2, "big") for i in range(8))
    body = (0x0101).to_bytes(2, "big") + (1 << prio).to_bytes(2, "big") + times
    frame = bytes.fromhex("0180c2000001") + src + (0x8808).to_bytes(2, "big") + body
    return frame.ljust(60, b"\0")


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    iface, prio, quanta = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    count = int(sys.argv[4]) if len(sys.argv) == 5 else 1
    if not 0 <= prio <= 7 or not 0 <= quanta <= 0xFFFF:
        sys.exit("priority 0..7, quanta 0..65535")
    with open(f"/sys/class/net/{iface}/address") as f:
        src = bytes.fromhex(f.read().strip().replace(":", ""))
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        for _ in range(count):
            s.send(pfc_frame(src, prio, quanta))


if __name__ == "__main__":
    main()
