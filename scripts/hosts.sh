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
# <P> is $PFCSW_HOSTS_PREFIX (default "pfc"). Idempotent: `up` skips what exists, `down`
# removes only the names it recorded in /run/pfcswitch-hosts-<P>.list. Direct veth pairs,
# never a Linux bridge: a bridge never forwards 01-80-C2-00-00-01, so PFC frames would not
# pass. The root-side end has IPv6 off (no router solicitations into the switch), answers
# no ARP (arp_ignore=8: the root namespace's own addresses must not leak to the hosts) and
# is promiscuous (the PMD asks for it too). Needs iproute2 and ethtool.
set -euo pipefail

P="${PFCSW_HOSTS_PREFIX:-pfc}"
STATE="/run/pfcswitch-hosts-${P}.list"
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
        for i in $(seq 1 "$n"); do
            ns="${P}h${i}" a="${P}v${i}a" b="${P}v${i}b"
            if ! ip netns list | grep -qw "$ns"; then
                ip netns add "$ns"
                record "netns $ns"
            fi
            if ! ip link show "$a" >/dev/null 2>&1; then
                ip link add "$a" type veth peer name "$b"
                record "link $a"
                ip link set "$b" netns "$ns"
            fi
            sysctl -qw "net.ipv6.conf.${a}.disable_ipv6=1" || true
            sysctl -qw "net.ipv4.conf.${a}.arp_ignore=8" || true
            ip link set "$a" promisc on up
            ip -n "$ns" link set lo up
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
                link) ip link del "$name" 2>/dev/null || true ;;
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
