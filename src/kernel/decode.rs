//! rtnetlink messages → [`KernelEvent`]s: links by name, addresses, main-table routes of
//! IPv4/IPv6 (multipath, RFC 5549 `via inet6`, the nexthop object a route goes through),
//! neighbours with their state; nexthop objects themselves come decoded ([`super::nexthop`]).

use std::net::IpAddr;

use netlink_packet_core::NLM_F_APPEND;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteNextHopFlags, RouteType, RouteVia,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::netlink::Message;
use crate::route::{KernelEvent, KernelRoute, Path, Prefix, RouteKind};
use crate::wire::MacAddr;

/// The kernel's main routing table (the one `ip route` shows and FRR programs).
pub const RT_TABLE_MAIN: u32 = 254;

/// The event a message read by [`RtNetlink`](super::netlink::RtNetlink) carries, if the
/// router cares.
pub fn decode_message(m: Message) -> Option<KernelEvent> {
    match m {
        Message::Route(msg, nl_flags) => decode(&msg, nl_flags),
        Message::NextHop(ev) => Some(ev),
    }
}

/// The event a message carries, if the router cares (`nl_flags`: the netlink header's).
pub fn decode(msg: &RouteNetlinkMessage, nl_flags: u16) -> Option<KernelEvent> {
    match msg {
        RouteNetlinkMessage::NewLink(m) => {
            let f = m.header.flags;
            let carrier = f.contains(LinkFlags::Up) && f.intersects(LinkFlags::Running | LinkFlags::LowerUp);
            link(m).map(|(ifindex, name)| KernelEvent::Link { ifindex, name, carrier })
        }
        RouteNetlinkMessage::DelLink(m) => Some(KernelEvent::LinkGone { ifindex: m.header.index }),
        RouteNetlinkMessage::NewAddress(m) => address(m, true),
        RouteNetlinkMessage::DelAddress(m) => address(m, false),
        RouteNetlinkMessage::NewRoute(m) => route(m, true, nl_flags & NLM_F_APPEND != 0),
        RouteNetlinkMessage::DelRoute(m) => route(m, false, false),
        RouteNetlinkMessage::NewNeighbour(m) => neighbour(m, true),
        RouteNetlinkMessage::DelNeighbour(m) => neighbour(m, false),
        _ => None,
    }
}

fn link(m: &LinkMessage) -> Option<(u32, String)> {
    m.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some((m.header.index, n.clone())),
        _ => None,
    })
}

fn address(m: &AddressMessage, add: bool) -> Option<KernelEvent> {
    // IFA_LOCAL is the interface's own address (IFA_ADDRESS is the peer on point-to-point
    // links); IPv6 sends IFA_ADDRESS only.
    let local = m.attributes.iter().find_map(|a| match a {
        AddressAttribute::Local(ip) => Some(*ip),
        _ => None,
    });
    let addr = local.or_else(|| {
        m.attributes.iter().find_map(|a| match a {
            AddressAttribute::Address(ip) => Some(*ip),
            _ => None,
        })
    })?;
    Some(KernelEvent::Addr { add, ifindex: m.header.index, addr, len: m.header.prefix_len })
}

fn route_addr(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v) => Some(IpAddr::V4(*v)),
        RouteAddress::Inet6(v) => Some(IpAddr::V6(*v)),
        _ => None,
    }
}

fn gateway(attrs: &[RouteAttribute]) -> Option<IpAddr> {
    attrs.iter().find_map(|a| match a {
        RouteAttribute::Gateway(g) => route_addr(g),
        RouteAttribute::Via(RouteVia::Inet(v)) => Some(IpAddr::V4(*v)),
        RouteAttribute::Via(RouteVia::Inet6(v)) => Some(IpAddr::V6(*v)),
        _ => None,
    })
}

fn route(m: &RouteMessage, add: bool, append: bool) -> Option<KernelEvent> {
    let h = &m.header;
    let table = m
        .attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(u32::from(h.table));
    if table != RT_TABLE_MAIN || h.flags.contains(RouteFlags::Cloned) {
        return None;
    }
    let unspecified = match h.address_family {
        AddressFamily::Inet => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        AddressFamily::Inet6 => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        _ => return None,
    };
    let dst = m
        .attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Destination(d) => route_addr(d),
            _ => None,
        })
        .unwrap_or(unspecified);
    let kind = match h.kind {
        RouteType::Unicast => RouteKind::Unicast,
        RouteType::Local => RouteKind::Local,
        RouteType::BlackHole => RouteKind::Blackhole,
        RouteType::Unreachable | RouteType::Prohibit | RouteType::Throw => RouteKind::Unreachable,
        _ => return None,
    };
    let metric = m
        .attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Priority(p) => Some(*p),
            _ => None,
        })
        .unwrap_or(0);
    let mut paths = Vec::new();
    for a in &m.attributes {
        if let RouteAttribute::MultiPath(hops) = a {
            for nh in hops {
                if nh.flags.intersects(RouteNextHopFlags::Dead | RouteNextHopFlags::Linkdown) {
                    continue;
                }
                paths.push(Path {
                    ifindex: nh.interface_index,
                    gateway: gateway(&nh.attributes),
                    weight: u16::from(nh.hops) + 1,
                });
            }
        }
    }
    if paths.is_empty() {
        if let Some(oif) = m.attributes.iter().find_map(|a| match a {
            RouteAttribute::Oif(i) => Some(*i),
            _ => None,
        }) {
            paths.push(Path { ifindex: oif, gateway: gateway(&m.attributes), weight: 1 });
        }
    }
    let nh_id = m.attributes.iter().find_map(|a| match a {
        RouteAttribute::NhId(id) => Some(*id),
        _ => None,
    });
    Some(KernelEvent::Route {
        add,
        append,
        route: KernelRoute { prefix: Prefix::new(dst, h.destination_prefix_length), metric, kind, paths, nh_id },
    })
}

fn neighbour(m: &NeighbourMessage, add: bool) -> Option<KernelEvent> {
    let addr = m.attributes.iter().find_map(|a| match a {
        NeighbourAttribute::Destination(NeighbourAddress::Inet(v)) => Some(IpAddr::V4(*v)),
        NeighbourAttribute::Destination(NeighbourAddress::Inet6(v)) => Some(IpAddr::V6(*v)),
        _ => None,
    })?;
    let lladdr = m.attributes.iter().find_map(|a| match a {
        NeighbourAttribute::LinkLayerAddress(b) => MacAddr::from_bytes(b),
        _ => None,
    });
    let usable = matches!(
        m.header.state,
        NeighbourState::Reachable
            | NeighbourState::Stale
            | NeighbourState::Delay
            | NeighbourState::Probe
            | NeighbourState::Permanent
            | NeighbourState::Noarp
    );
    let mac = if usable { lladdr.filter(|m| m.is_unicast() && *m != MacAddr::ZERO) } else { None };
    Some(KernelEvent::Neigh { add, ifindex: m.header.ifindex, addr, mac })
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::route::{RouteHeader, RouteNextHop};

    fn v4_route(kind: RouteType, attrs: Vec<RouteAttribute>) -> RouteMessage {
        let mut m = RouteMessage::default();
        m.header.address_family = AddressFamily::Inet;
        m.header.destination_prefix_length = 16;
        m.header.table = RouteHeader::RT_TABLE_MAIN;
        m.header.kind = kind;
        m.attributes = attrs;
        m
    }

    #[test]
    fn multipath_route_with_weights_and_dead_paths() {
        let hop = |i: u32, g: [u8; 4], hops: u8, flags: RouteNextHopFlags| {
            let mut nh = RouteNextHop::default();
            nh.interface_index = i;
            nh.hops = hops;
            nh.flags = flags;
            nh.attributes = vec![RouteAttribute::Gateway(RouteAddress::Inet(g.into()))];
            nh
        };
        let m = v4_route(
            RouteType::Unicast,
            vec![
                RouteAttribute::Destination(RouteAddress::Inet([10, 1, 0, 0].into())),
                RouteAttribute::Priority(20),
                RouteAttribute::MultiPath(vec![
                    hop(3, [10, 0, 0, 1], 0, RouteNextHopFlags::empty()),
                    hop(4, [10, 0, 0, 3], 2, RouteNextHopFlags::empty()),
                    hop(5, [10, 0, 0, 5], 0, RouteNextHopFlags::Linkdown),
                ]),
            ],
        );
        let Some(KernelEvent::Route { add: true, append: false, route }) = decode(&RouteNetlinkMessage::NewRoute(m), 0)
        else {
            panic!()
        };
        assert_eq!(route.prefix.to_string(), "10.1.0.0/16");
        assert_eq!(route.metric, 20);
        assert_eq!(route.paths.len(), 2);
        assert_eq!(route.paths[1].weight, 3);
    }

    #[test]
    fn other_tables_and_types_are_ignored() {
        let mut m = v4_route(RouteType::Unicast, vec![RouteAttribute::Oif(3)]);
        m.header.table = 255; // local
        assert_eq!(decode(&RouteNetlinkMessage::NewRoute(m), 0), None);
        let m = v4_route(RouteType::Broadcast, vec![]);
        assert_eq!(decode(&RouteNetlinkMessage::NewRoute(m), 0), None);
        let m = v4_route(RouteType::BlackHole, vec![]);
        let Some(KernelEvent::Route { route, .. }) = decode(&RouteNetlinkMessage::NewRoute(m), 0) else { panic!() };
        assert_eq!((route.kind, route.prefix.to_string()), (RouteKind::Blackhole, "0.0.0.0/16".to_string()));
    }

    #[test]
    fn routes_through_nexthop_objects_captured_from_the_kernel() {
        // With nexthop_compat_mode = 0 (Linux 6.18): `ip route add 192.168.0.0/16 nhid 10`
        // and `ip -6 route add 2001:db8::/32 nhid 3` carry RTA_NH_ID and no path.
        let route = |hex: &str| {
            let b: Vec<u8> =
                (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            let m = netlink_packet_core::NetlinkMessage::<RouteNetlinkMessage>::deserialize(&b).unwrap();
            let netlink_packet_core::NetlinkPayload::InnerMessage(inner) = m.payload else { panic!() };
            let Some(KernelEvent::Route { add: true, route, .. }) = decode(&inner, m.header.flags) else { panic!() };
            route
        };
        let r = route(
            "3400000018000006cea1156b7c44000002100000fe0300010000000008000f00fe00000008000100c0a8000008001e000a000000",
        );
        assert_eq!((r.prefix.to_string(), r.nh_id, r.paths.len()), ("192.168.0.0/16".to_string(), Some(10), 0));
        let r = route(
            "7400000018000006daa1156be94500000a200000fe0300010000000008000f00fe0000001400010020010db800000000\
             0000000000000000080006000004000008001e000300000024000c000000000000000000000000000000000000000000\
             0000000000000000000000000500140000000000",
        );
        assert_eq!(
            (r.prefix.to_string(), r.nh_id, r.metric, r.paths.len()),
            ("2001:db8::/32".to_string(), Some(3), 1024, 0)
        );
    }

    #[test]
    fn a_link_has_carrier_when_up_and_running_or_lower_up() {
        let link = |flags: LinkFlags| {
            let mut m = LinkMessage::default();
            m.header.index = 3;
            m.header.flags = flags;
            m.attributes = vec![LinkAttribute::IfName("Ethernet0".into())];
            match decode(&RouteNetlinkMessage::NewLink(m), 0) {
                Some(KernelEvent::Link { ifindex: 3, carrier, .. }) => carrier,
                other => panic!("{other:?}"),
            }
        };
        assert!(link(LinkFlags::Up | LinkFlags::Running | LinkFlags::LowerUp));
        assert!(link(LinkFlags::Up | LinkFlags::LowerUp));
        // Up without carrier (the peer down), and admin down: the kernel flushes the
        // nexthop objects through it.
        assert!(!link(LinkFlags::Up | LinkFlags::Broadcast | LinkFlags::Multicast));
        assert!(!link(LinkFlags::Broadcast));
    }

    #[test]
    fn neighbour_states() {
        let n = |state: NeighbourState| {
            let mut m = NeighbourMessage::default();
            m.header.ifindex = 7;
            m.header.state = state;
            m.attributes = vec![
                NeighbourAttribute::Destination(NeighbourAddress::Inet([10, 0, 0, 1].into())),
                NeighbourAttribute::LinkLayerAddress(vec![2, 0, 0, 0, 0, 1]),
            ];
            decode(&RouteNetlinkMessage::NewNeighbour(m), 0)
        };
        let mac = Some(MacAddr([2, 0, 0, 0, 0, 1]));
        let addr: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(n(NeighbourState::Reachable), Some(KernelEvent::Neigh { add: true, ifindex: 7, addr, mac }));
        assert_eq!(n(NeighbourState::Stale), Some(KernelEvent::Neigh { add: true, ifindex: 7, addr, mac }));
        assert_eq!(n(NeighbourState::Failed), Some(KernelEvent::Neigh { add: true, ifindex: 7, addr, mac: None }));
        assert_eq!(n(NeighbourState::Incomplete), Some(KernelEvent::Neigh { add: true, ifindex: 7, addr, mac: None }));
    }
}
