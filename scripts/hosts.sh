#!/usr/bin/env bash
# Kernel hosts for pfcswitch's af_packet ports: N network namespaces, each holding one end
# of a veth pair whose other end stays in the root namespace for the switch.
#
#   scripts/hosts.sh up [N]     create hosts 1..N (default 2): namespace <P>h<i>, veth
#                               <P>v<i>a (root side, the switch's port: net_af_packet
#                               iface=<P>v<i>a) <-> <P>v<i>b (in the namespace, 198.18.0.<i>/24,
#                               the benchmarking range, unlikely to clash with the host's)
#   scripts/hosts.sh down       remove what `up` created, and nothing else
#
# Routed (PFCSW_HOSTS_ROUTED=1): the switch runs in namespace <P>sw (created here; its
# [control_plane] netns), which holds the <P>v<i>a ends; host i is in its own subnet,
# 198.18.<i>.2/24 and fd00:<i>::2/64, with default routes via .1 and ::1 (the addresses of
# the switch's router interface i in its [interface] section). The <P>v<i>a ends are ports
# of a bridge that stays down (<P>blk): af_packet still sees every frame (packet taps come
# first), but the switch namespace's kernel does not, which would otherwise forward and
# answer them beside the switch (frames to the router MAC are to the veth's own MAC).
#
# <P> is $PFCSW_HOSTS_PREFIX (default "pfc"). Idempotent: `up` skips what exists, `down`
# removes only the names it recorded in /run/pfcswitch-hosts-<P>.list. Direct veth pairs,
# never a Linux bridge: a bridge never forwards 01-80-C2-00-00-01, so PFC frames would not
# pass. The root-side end has IPv6 off (no router solicitations into the switch), answers
# no ARP (arp_ignore=8: the root namespace's own addresses must not leak to the hosts) and
# is promiscuous (the PMD asks for it too). Needs iproute2 and ethtool.
set -euo pipefail

P="${PFCSW_HOSTS_PREFIX:-pfc}"
STATE="/run/pfcswitch-hosts-${P}.list"
ROUTED="${PFCSW_HOSTS_ROUTED:-0}"
SW="${P}sw"
cmd="${1:-}"
n="${2:-2}"

record() { echo "$1" >> "$STATE"; }

case "$cmd" in
    up)
        if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then
            echo "hosts.sh: N must be 1..200" >&2
            exit 2
        fi
        touch "$STATE"
        # Switch side: in the root namespace, or (routed) in the switch's own.
        swx=()
        if [ "$ROUTED" = 1 ]; then
            if ! ip netns list | grep -qw "$SW"; then
                ip netns add "$SW"
                record "netns $SW"
            fi
            ip -n "$SW" link set lo up
            ip -n "$SW" link show "${P}blk" >/dev/null 2>&1 || ip -n "$SW" link add "${P}blk" type bridge
            swx=(ip netns exec "$SW")
        fi
        for i in $(seq 1 "$n"); do
            ns="${P}h${i}" a="${P}v${i}a" b="${P}v${i}b"
            if ! ip netns list | grep -qw "$ns"; then
                ip netns add "$ns"
                record "netns $ns"
            fi
            if ! "${swx[@]}" ip link show "$a" >/dev/null 2>&1; then
                ip link add "$a" type veth peer name "$b"
                record "link $a"
                ip link set "$b" netns "$ns"
                if [ "$ROUTED" = 1 ]; then
                    ip link set "$a" netns "$SW"
                fi
            fi
            "${swx[@]}" sysctl -qw "net.ipv6.conf.${a}.disable_ipv6=1" || true
            "${swx[@]}" sysctl -qw "net.ipv4.conf.${a}.arp_ignore=8" || true
            "${swx[@]}" ip link set "$a" promisc on up
            ip -n "$ns" link set lo up
            if [ "$ROUTED" = 1 ]; then
                ip -n "$SW" link set "$a" master "${P}blk"
                ip -n "$ns" addr replace "198.18.${i}.2/24" dev "$b"
                ip -n "$ns" -6 addr replace "fd00:${i}::2/64" dev "$b" nodad
                ip -n "$ns" link set "$b" up
                ip -n "$ns" route replace default via "198.18.${i}.1"
                ip -n "$ns" -6 route replace default via "fd00:${i}::1"
                echo "host $i: namespace $ns, $b 198.18.${i}.2/24 fd00:${i}::2/64 via .1/::1; switch port (netns $SW): net_af_packet,iface=$a"
                ip netns exec "$ns" ethtool -K "$b" tx off >/dev/null
                continue
            fi
            ip -n "$ns" addr replace "198.18.0.${i}/24" dev "$b"
            ip -n "$ns" link set "$b" up
            # Checksums computed by the host, as a NIC puts them on the wire: a veth
            # otherwise leaves them to an offload that never happens once af_packet
            # has taken the frame, and the receiving host drops the UDP/TCP segments.
            ip netns exec "$ns" ethtool -K "$b" tx off >/dev/null
            echo "host $i: namespace $ns, $b 198.18.0.$i/24; switch port: net_af_packet,iface=$a"
        done
        ;;
    down)
        [ -f "$STATE" ] || exit 0
        # Newest first: links before the namespaces they point into.
        tac "$STATE" | while read -r kind name; do
            case "$kind" in
                link) ip link del "$name" 2>/dev/null || ip -n "$SW" link del "$name" 2>/dev/null || true ;;
                netns) ip netns del "$name" 2>/dev/null || true ;;
            esac
        done
        rm -f "$STATE"
        ;;
    *)
        echo "usage: $0 up [N] | down" >&2
        exit 2
        ;;
esac
