//! The writer and the decision together, over the software LPM.

use super::*;
use crate::wire::{self, MacAddr, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const E0: u32 = 10; // ifindex of Ethernet0's representor
const E4: u32 = 11;
const LO: u32 = 1;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}
fn pfx(s: &str) -> Prefix {
    let (a, l) = s.split_once('/').unwrap();
    Prefix::new(ip(a), l.parse().unwrap())
}
fn route(p: &str, paths: &[(u32, Option<&str>)]) -> KernelEvent {
    KernelEvent::Route {
        add: true,
        append: false,
        route: KernelRoute {
            prefix: pfx(p),
            metric: 0,
            kind: RouteKind::Unicast,
            paths: paths.iter().map(|(i, g)| Path { ifindex: *i, gateway: g.map(ip), weight: 1 }).collect(),
            nh_id: None,
        },
    }
}
fn del(p: &str) -> KernelEvent {
    KernelEvent::Route {
        add: false,
        append: false,
        route: KernelRoute { prefix: pfx(p), metric: 0, kind: RouteKind::Unicast, paths: vec![], nh_id: None },
    }
}
fn neigh(ifindex: u32, a: &str, mac: Option<u8>) -> KernelEvent {
    KernelEvent::Neigh { add: true, ifindex, addr: ip(a), mac: mac.map(|m| MacAddr([2, 0, 0, 0, 0xee, m])) }
}

/// A grace period the test ends by hand.
#[derive(Default)]
struct ManualGrace {
    started: AtomicU64,
    done: AtomicU64,
}
impl Grace for ManualGrace {
    fn start(&self) -> u64 {
        self.started.fetch_add(1, Ordering::SeqCst) + 1
    }
    fn passed(&self, t: u64) -> bool {
        self.done.load(Ordering::SeqCst) >= t
    }
    fn wait(&self, t: u64) {
        self.done.fetch_max(t, Ordering::SeqCst);
    }
}

type TestRib = Rib<SoftLpm, ManualGrace>;

fn rib() -> (TestRib, Arc<NextHopTables>, Arc<ManualGrace>) {
    let tables = Arc::new(NextHopTables::new());
    let grace = Arc::new(ManualGrace::default());
    let mut r =
        Rib::new(SoftLpm::default(), tables.clone(), grace.clone(), vec!["Ethernet0".into(), "Ethernet4".into()]);
    r.apply([
        KernelEvent::Link { ifindex: LO, name: "lo".into(), carrier: true },
        KernelEvent::Link { ifindex: E0, name: "Ethernet0".into(), carrier: true },
        KernelEvent::Link { ifindex: E4, name: "Ethernet4".into(), carrier: true },
        KernelEvent::Addr { add: true, ifindex: E0, addr: ip("10.0.0.0"), len: 31 },
        KernelEvent::Addr { add: true, ifindex: E4, addr: ip("10.0.0.2"), len: 31 },
        route("10.0.0.0/31", &[(E0, None)]),
        route("10.0.0.2/31", &[(E4, None)]),
    ]);
    (r, tables, grace)
}

fn lookup(r: &TestRib, a: &str) -> Option<Target> {
    match ip(a) {
        IpAddr::V4(v) => Target::decode(r.lpm().lookup4(u32::from(v))),
        IpAddr::V6(v) => Target::decode(r.lpm().lookup6(v.octets())),
    }
}

#[test]
fn local_connected_and_neighbours() {
    let (mut r, t, _) = rib();
    assert_eq!(lookup(&r, "10.0.0.0"), Some(Target::Local));
    assert_eq!(lookup(&r, "10.0.0.1"), Some(Target::Glean));
    assert_eq!(lookup(&r, "10.9.9.9"), None);
    // The neighbour resolves: its host route goes to it.
    r.apply([neigh(E0, "10.0.0.1", Some(1))]);
    let Some(Target::NextHop(id)) = lookup(&r, "10.0.0.1") else { panic!("{:?}", r.installed()) };
    assert_eq!(t.next_hop(id), Some(NextHop { port: 0, mac: Some(MacAddr([2, 0, 0, 0, 0xee, 1])) }));
    // A failed neighbour withdraws the host route: glean again.
    r.apply([neigh(E0, "10.0.0.1", None)]);
    assert_eq!(lookup(&r, "10.0.0.1"), Some(Target::Glean));
    // The address goes: no longer ours (the connected route stays until the kernel says).
    r.apply([KernelEvent::Addr { add: false, ifindex: E0, addr: ip("10.0.0.0"), len: 31 }]);
    assert_eq!(lookup(&r, "10.0.0.0"), Some(Target::Glean));
}

#[test]
fn gateway_route_follows_its_neighbour() {
    let (mut r, t, _) = rib();
    r.apply([route("192.168.0.0/16", &[(E4, Some("10.0.0.3"))])]);
    let Some(Target::NextHop(id)) = lookup(&r, "192.168.7.7") else { panic!() };
    assert_eq!(t.next_hop(id), Some(NextHop { port: 1, mac: None }));
    r.apply([neigh(E4, "10.0.0.3", Some(3))]);
    // Same id, rewritten in place; the neighbour's host route shares it.
    assert_eq!(lookup(&r, "192.168.7.7"), Some(Target::NextHop(id)));
    assert_eq!(lookup(&r, "10.0.0.3"), Some(Target::NextHop(id)));
    assert_eq!(t.next_hop(id).unwrap().mac, Some(MacAddr([2, 0, 0, 0, 0xee, 3])));
    r.apply([del("192.168.0.0/16")]);
    assert_eq!(lookup(&r, "192.168.7.7"), None);
    assert_eq!(lookup(&r, "10.0.0.3"), Some(Target::NextHop(id)));
}

#[test]
fn routes_via_other_interfaces_and_special_kinds() {
    let (mut r, _, _) = rib();
    r.apply([
        route("172.16.0.0/12", &[(LO, Some("127.0.0.2"))]),
        KernelEvent::Route {
            add: true,
            append: false,
            route: KernelRoute {
                prefix: pfx("198.51.100.0/24"),
                metric: 0,
                kind: RouteKind::Blackhole,
                paths: vec![],
                nh_id: None,
            },
        },
        KernelEvent::Route {
            add: true,
            append: false,
            route: KernelRoute {
                prefix: pfx("203.0.113.0/24"),
                metric: 0,
                kind: RouteKind::Unreachable,
                paths: vec![],
                nh_id: None,
            },
        },
        route("0.0.0.0/0", &[(E0, Some("10.0.0.1"))]),
    ]);
    assert_eq!(lookup(&r, "172.16.1.1"), Some(Target::NonPort));
    assert_eq!(lookup(&r, "198.51.100.1"), Some(Target::Blackhole));
    assert_eq!(lookup(&r, "203.0.113.1"), Some(Target::Kernel));
    assert!(matches!(lookup(&r, "8.8.8.8"), Some(Target::NextHop(_))));
}

#[test]
fn paths_through_non_ports_are_left_out_and_alone_dropped() {
    let (mut r, t, _) = rib();
    r.apply([
        // Connected through lo (a dummy, the management port: any interface not a port).
        route("10.77.0.0/24", &[(LO, None)]),
        // Two paths, one through a port: that one alone is used.
        route("10.78.0.0/16", &[(LO, Some("127.0.0.2")), (E0, Some("10.0.0.1"))]),
    ]);
    assert_eq!(lookup(&r, "10.77.0.5"), Some(Target::NonPort));
    let Some(Target::NextHop(n)) = lookup(&r, "10.78.0.1") else { panic!("{:?}", lookup(&r, "10.78.0.1")) };
    assert_eq!(t.resolve(Target::NextHop(n), 0), t.resolve(Target::NextHop(n), 7));
    // The decision drops what only leaves through a non-port, never punts it.
    let l3 = wire::L3Header { ttl: 64, ..wire::L3Header::EMPTY };
    let d = forward(&l3, Target::NonPort.encode(), &t, 0, &[1500; 4], false, 0);
    assert_eq!(d, Decision::Drop(RouteDrop::NonPort));
}

#[test]
fn lower_metric_wins_and_the_other_takes_over() {
    let (mut r, _, _) = rib();
    let mut hi = route("10.5.0.0/16", &[(E4, Some("10.0.0.3"))]);
    if let KernelEvent::Route { route, .. } = &mut hi {
        route.metric = 100;
    }
    r.apply([route("10.5.0.0/16", &[(E0, Some("10.0.0.1"))]), hi]);
    let low = lookup(&r, "10.5.1.1");
    r.apply([del("10.5.0.0/16")]); // metric 0
    let after = lookup(&r, "10.5.1.1");
    assert!(matches!((low, after), (Some(Target::NextHop(a)), Some(Target::NextHop(b))) if a != b));
}

#[test]
fn multipath_is_one_shared_group_and_ids_wait_for_grace() {
    let (mut r, t, g) = rib();
    let two = [(E0, Some("10.0.0.1")), (E4, Some("10.0.0.3"))];
    r.apply([route("10.1.0.0/16", &two), route("10.2.0.0/16", &two)]);
    let Some(Target::Group(gid)) = lookup(&r, "10.1.0.1") else { panic!("{:?}", r.installed()) };
    assert_eq!(lookup(&r, "10.2.0.1"), Some(Target::Group(gid)), "same set, same group");
    assert_eq!(t.group(gid).len(), 2);
    // Withdraw both: the group and its next hops are freed, but not reusable before the
    // grace period that started after the commit has passed.
    r.apply([del("10.1.0.0/16"), del("10.2.0.0/16")]);
    let freed = t.group(gid);
    r.apply([route("10.3.0.0/16", &[(E0, Some("10.0.0.9")), (E4, Some("10.0.0.8"))])]);
    let Some(Target::Group(g2)) = lookup(&r, "10.3.0.0") else { panic!() };
    assert_ne!(g2, gid, "a group id is not reused before its grace period");
    for m in t.group(g2) {
        assert!(!freed.contains(&m), "a next-hop id is not reused before its grace period");
    }
    // Once it passed, the ids come back.
    g.done.store(u64::MAX, Ordering::SeqCst);
    r.apply([route("10.4.0.0/16", &[(E0, Some("10.0.0.5")), (E4, Some("10.0.0.7"))])]);
    let Some(Target::Group(g3)) = lookup(&r, "10.4.0.0") else { panic!() };
    assert_eq!(g3, gid);
}

#[test]
fn ipv6_multipath_append_and_remove_one_path() {
    let (mut r, t, _) = rib();
    r.apply([route("2001:db8::/32", &[(E0, Some("fe80::1"))])]);
    assert!(matches!(lookup(&r, "2001:db8::5"), Some(Target::NextHop(_))));
    r.apply([KernelEvent::Route {
        add: true,
        append: true,
        route: KernelRoute {
            prefix: pfx("2001:db8::/32"),
            metric: 0,
            kind: RouteKind::Unicast,
            paths: vec![Path { ifindex: E4, gateway: Some(ip("fe80::2")), weight: 1 }],
            nh_id: None,
        },
    }]);
    let Some(Target::Group(g)) = lookup(&r, "2001:db8::5") else { panic!("{:?}", r.installed()) };
    assert_eq!(t.group(g).len(), 2);
    r.apply([KernelEvent::Route {
        add: false,
        append: false,
        route: KernelRoute {
            prefix: pfx("2001:db8::/32"),
            metric: 0,
            kind: RouteKind::Unicast,
            paths: vec![Path { ifindex: E0, gateway: Some(ip("fe80::1")), weight: 1 }],
            nh_id: None,
        },
    }]);
    let Some(Target::NextHop(id)) = lookup(&r, "2001:db8::5") else { panic!() };
    assert_eq!(t.next_hop(id).unwrap().port, 1);
}

#[test]
fn weights_expand_into_members() {
    let (mut r, t, _) = rib();
    r.apply([KernelEvent::Route {
        add: true,
        append: false,
        route: KernelRoute {
            prefix: pfx("10.7.0.0/16"),
            metric: 0,
            kind: RouteKind::Unicast,
            paths: vec![
                Path { ifindex: E0, gateway: Some(ip("10.0.0.1")), weight: 3 },
                Path { ifindex: E4, gateway: Some(ip("10.0.0.3")), weight: 1 },
            ],
            nh_id: None,
        },
    }]);
    let Some(Target::Group(g)) = lookup(&r, "10.7.0.0") else { panic!() };
    let m = t.group(g);
    assert_eq!(m.len(), 4);
    assert_eq!(m.iter().filter(|&&x| x == m[0]).count(), 3);
}

#[test]
fn a_link_seen_late_rebinds_its_routes() {
    let tables = Arc::new(NextHopTables::new());
    let mut r = Rib::new(SoftLpm::default(), tables, Arc::new(NoReaders), vec!["Ethernet0".into()]);
    r.apply([route("10.8.0.0/16", &[(E0, Some("10.0.0.1"))])]);
    assert_eq!(Target::decode(r.lpm().lookup4(0x0a08_0001)), Some(Target::NonPort));
    r.apply([KernelEvent::Link { ifindex: E0, name: "Ethernet0".into(), carrier: true }]);
    assert!(matches!(Target::decode(r.lpm().lookup4(0x0a08_0001)), Some(Target::NextHop(_))));
    r.apply([KernelEvent::LinkGone { ifindex: E0 }]);
    assert_eq!(Target::decode(r.lpm().lookup4(0x0a08_0001)), Some(Target::NonPort));
}

// ---- the decision ----

const RMAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0x10]);

fn v4_frame(dst_mac: MacAddr, dst: Ipv4Addr, ttl: u8, sport: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(60)];
    f[..6].copy_from_slice(&dst_mac.0);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x99]);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let total = (f.len() - 14) as u16;
    let h = &mut f[14..];
    h[0] = 0x45;
    h[1] = (26 << 2) | 2;
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[8] = ttl;
    h[9] = wire::proto::UDP;
    h[12..16].copy_from_slice(&[10, 0, 0, 1]);
    h[16..20].copy_from_slice(&dst.octets());
    let c = wire::ipv4_checksum(&h[..20]);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h[20..22].copy_from_slice(&sport.to_be_bytes());
    h[22..24].copy_from_slice(&4791u16.to_be_bytes());
    f
}

fn decide_on(r: &TestRib, t: &NextHopTables, f: &[u8], routed: bool) -> Decision {
    decide_as(r, t, f, if routed { RouterPort::port(RMAC) } else { RouterPort::NONE })
}

fn decide_as(r: &TestRib, t: &NextHopTables, f: &[u8], port: RouterPort) -> Decision {
    let p = wire::parse(f).unwrap();
    let lookup = |l3: &wire::L3Header| match l3.addrs {
        wire::IpPair::V4 { dst, .. } => r.lpm().lookup4(u32::from_be_bytes(dst)),
        wire::IpPair::V6 { dst, .. } => r.lpm().lookup6(dst),
    };
    decide(&p, f, &port, lookup, t, 0x1234, &[1500, 1500])
}

#[test]
fn decisions() {
    let (mut r, t, _) = rib();
    r.apply([
        route("192.168.0.0/16", &[(E4, Some("10.0.0.3"))]),
        route("172.20.0.0/16", &[(E4, Some("10.0.0.5"))]),
        neigh(E4, "10.0.0.3", Some(3)),
        KernelEvent::Route {
            add: true,
            append: false,
            route: KernelRoute {
                prefix: pfx("198.51.100.0/24"),
                metric: 0,
                kind: RouteKind::Blackhole,
                paths: vec![],
                nh_id: None,
            },
        },
    ]);
    let d = |f: &[u8]| decide_on(&r, &t, f, true);
    let a = |s: &str| s.parse::<Ipv4Addr>().unwrap();
    assert_eq!(
        d(&v4_frame(RMAC, a("192.168.1.1"), 64, 1, 100)),
        Decision::Route(RouteTo { port: 1, dst_mac: MacAddr([2, 0, 0, 0, 0xee, 3]) })
    );
    assert_eq!(d(&v4_frame(RMAC, a("192.168.1.1"), 1, 1, 100)), Decision::Punt(PuntReason::TtlExpired));
    assert_eq!(d(&v4_frame(RMAC, a("10.0.0.0"), 1, 1, 100)), Decision::Punt(PuntReason::ToUs));
    assert_eq!(d(&v4_frame(RMAC, a("8.8.8.8"), 64, 1, 100)), Decision::Punt(PuntReason::NoRoute));
    assert_eq!(d(&v4_frame(RMAC, a("10.0.0.1"), 64, 1, 100)), Decision::Punt(PuntReason::NeighbourMiss));
    assert_eq!(d(&v4_frame(RMAC, a("172.20.0.1"), 64, 1, 100)), Decision::Punt(PuntReason::NeighbourMiss));
    assert_eq!(d(&v4_frame(RMAC, a("192.168.1.1"), 64, 1, 1600)), Decision::TooBig(1500));
    assert_eq!(d(&v4_frame(RMAC, a("198.51.100.9"), 64, 1, 100)), Decision::Drop(RouteDrop::Blackhole));
    assert_eq!(d(&v4_frame(RMAC, a("224.0.0.5"), 64, 1, 100)), Decision::Punt(PuntReason::ToUs));
    // Not to the router MAC: dropped on a routed port, bridged in a VLAN interface's VLAN;
    // not a router interface: bridged.
    let other = v4_frame(MacAddr([2, 0, 0, 0, 0, 0x77]), a("192.168.1.1"), 1, 1, 100);
    assert_eq!(d(&other), Decision::Drop(RouteDrop::NotRouterMac));
    assert_eq!(decide_as(&r, &t, &other, RouterPort::vlan(RMAC)), Decision::Bridge);
    assert_eq!(decide_on(&r, &t, &v4_frame(RMAC, a("192.168.1.1"), 64, 1, 100), false), Decision::Bridge);
    // Link-scope multicast to a group MAC: the kernel's (OSPF, VRRP), and so is limited
    // broadcast; other groups are dropped on a routed port (no multicast routing).
    assert_eq!(
        d(&v4_frame(MacAddr([1, 0, 0x5e, 0, 0, 5]), a("224.0.0.5"), 1, 1, 100)),
        Decision::Punt(PuntReason::ToUs)
    );
    assert_eq!(d(&v4_frame(MacAddr::BROADCAST, a("255.255.255.255"), 1, 1, 100)), Decision::Punt(PuntReason::ToUs));
    let group = v4_frame(MacAddr([1, 0, 0x5e, 1, 1, 1]), a("239.1.1.1"), 8, 1, 100);
    assert_eq!(d(&group), Decision::Drop(RouteDrop::NotRouted));
    assert_eq!(decide_as(&r, &t, &group, RouterPort::vlan(RMAC)), Decision::Bridge);
    // A lying total length to the router MAC is dropped, not parsed further.
    let mut bad = v4_frame(RMAC, a("192.168.1.1"), 64, 1, 60);
    bad[16..18].copy_from_slice(&1000u16.to_be_bytes());
    assert_eq!(d(&bad), Decision::Drop(RouteDrop::Malformed));
}

fn arp(dst: MacAddr) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&dst.0);
    f[12..14].copy_from_slice(&decide::ETHERTYPE_ARP.to_be_bytes());
    f
}

fn v6_frame(dst_mac: MacAddr, dst: Ipv6Addr, next: u8, first: u8) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 40 + 24];
    f[..6].copy_from_slice(&dst_mac.0);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
    f[14] = 0x60;
    f[18..20].copy_from_slice(&24u16.to_be_bytes());
    f[20] = next;
    f[21] = 64;
    f[22..38].copy_from_slice(&"fc00::9".parse::<Ipv6Addr>().unwrap().octets());
    f[38..54].copy_from_slice(&dst.octets());
    f[54] = first;
    f
}

#[test]
fn arp_nd_and_link_local() {
    let (r, t, _) = rib();
    let d = |f: &[u8]| decide_on(&r, &t, f, true);
    assert_eq!(d(&arp(MacAddr::BROADCAST)), Decision::Punt(PuntReason::Arp));
    assert_eq!(d(&arp(RMAC)), Decision::Punt(PuntReason::Arp));
    assert_eq!(d(&arp(MacAddr([2, 0, 0, 0, 0, 0x77]))), Decision::Drop(RouteDrop::NotRouterMac));
    let sn = MacAddr([0x33, 0x33, 0xff, 0, 0, 1]);
    assert_eq!(d(&v6_frame(sn, "ff02::1:ff00:1".parse().unwrap(), 58, 135)), Decision::Punt(PuntReason::Nd));
    assert_eq!(d(&v6_frame(RMAC, "fc00::1".parse().unwrap(), 58, 136)), Decision::Punt(PuntReason::Nd));
    assert_eq!(d(&v6_frame(RMAC, "fe80::1".parse().unwrap(), 6, 0)), Decision::Punt(PuntReason::ToUs));
    assert_eq!(d(&v6_frame(RMAC, "2001:db8::1".parse().unwrap(), 17, 0)), Decision::Punt(PuntReason::NoRoute));
    // An ICMPv6 echo to a group MAC outside link scope is dropped on a routed port.
    assert_eq!(
        d(&v6_frame(MacAddr([0x33, 0x33, 0, 0, 0, 1]), "ff05::1".parse().unwrap(), 58, 128)),
        Decision::Drop(RouteDrop::NotRouted)
    );
}

/// The multipath check on the model: 64 flows (UDP source ports) over a two-path
/// route use both ports, and each flow always the same one.
#[test]
fn sixty_four_flows_over_two_paths() {
    let (mut r, t, _) = rib();
    r.apply([
        route("10.100.0.0/16", &[(E0, Some("10.0.0.1")), (E4, Some("10.0.0.3"))]),
        neigh(E0, "10.0.0.1", Some(1)),
        neigh(E4, "10.0.0.3", Some(3)),
    ]);
    let mut per_port = [0u32; 2];
    for sport in 0..64u16 {
        let f = v4_frame(RMAC, "10.100.0.9".parse().unwrap(), 64, 50000 + sport, 100);
        let Decision::Route(first) = decide_on(&r, &t, &f, true) else { panic!() };
        for _ in 0..4 {
            assert_eq!(decide_on(&r, &t, &f, true), Decision::Route(first));
        }
        per_port[usize::from(first.port)] += 1;
    }
    assert!(per_port[0] >= 16 && per_port[1] >= 16, "{per_port:?}");
}

#[test]
fn view_lists_routes_with_origin_next_hops_and_neighbours() {
    let (mut r, _, _) = rib();
    r.apply([
        neigh(E0, "10.0.0.1", Some(1)),
        neigh(E4, "10.0.0.3", None),
        route("192.168.0.0/16", &[(E0, Some("10.0.0.1")), (E4, Some("10.0.0.3"))]),
    ]);
    let v = r.view();
    let row = |p: &str| v.routes.iter().find(|x| x.prefix == pfx(p)).unwrap_or_else(|| panic!("no {p}"));
    let c = row("10.0.0.0/31");
    assert_eq!((c.origin, c.port, c.origin.code()), (RouteOrigin::Connected, Some(0), 'C'));
    assert_eq!(row("10.0.0.0/32").origin, RouteOrigin::Local);
    let n = row("10.0.0.1/32");
    assert_eq!(n.origin, RouteOrigin::Neighbour);
    let g = row("192.168.0.0/16");
    assert_eq!((g.origin, g.metric), (RouteOrigin::Kernel, Some(0)));
    let mac = MacAddr([2, 0, 0, 0, 0xee, 1]);
    assert_eq!(g.nexthops, vec![(0, ip("10.0.0.1"), Some(mac), 1), (1, ip("10.0.0.3"), None, 1)]);
    assert_eq!(
        v.neighbours,
        vec![
            NeighRow { addr: ip("10.0.0.1"), port: 0, mac: Some(mac) },
            NeighRow { addr: ip("10.0.0.3"), port: 1, mac: None }
        ]
    );
    // Sorted by prefix.
    assert!(v.routes.windows(2).all(|w| w[0].prefix <= w[1].prefix));
}

/// A software LPM that holds at most `cap` IPv4 prefixes (a full `rte_fib`).
struct CappedLpm {
    inner: SoftLpm,
    cap: usize,
}
impl LpmWriter for CappedLpm {
    fn set4(&mut self, p: Prefix4, value: u32) -> Result<(), String> {
        if !self.inner.v4.contains_key(&p) && self.inner.v4.len() >= self.cap {
            return Err("No space left on device".into());
        }
        self.inner.set4(p, value)
    }
    fn del4(&mut self, p: Prefix4) -> Result<(), String> {
        self.inner.del4(p)
    }
    fn set6(&mut self, p: Prefix6, value: u32) -> Result<(), String> {
        self.inner.set6(p, value)
    }
    fn del6(&mut self, p: Prefix6) -> Result<(), String> {
        self.inner.del6(p)
    }
    fn commit(&mut self) -> Result<(), String> {
        self.inner.commit()
    }
}

#[test]
fn refused_prefixes_are_retried_when_room_is_made() {
    let tables = Arc::new(NextHopTables::new());
    let lpm = CappedLpm { inner: SoftLpm::default(), cap: 4 };
    let mut r = Rib::new(lpm, tables, Arc::new(NoReaders), vec!["Ethernet0".into()]);
    r.apply([KernelEvent::Link { ifindex: E0, name: "Ethernet0".into(), carrier: true }]);
    let routes: Vec<String> = (0..6).map(|i| format!("100.{i}.0.0/16")).collect();
    r.apply(routes.iter().map(|p| route(p, &[(E0, Some("10.0.0.1"))])));
    assert_eq!(r.lpm().inner.v4.len(), 4);
    assert_eq!((r.refused(), r.stats().errors, r.stats().refused), (2, 2, 2));
    // Retrying on a full table counts nothing new.
    assert_eq!(r.retry_refused(), 2);
    assert_eq!(r.stats().errors, 2);
    // One delete makes room for one; a second for the other, in the same commits.
    let installed: Vec<Prefix> = r.installed().iter().map(|(p, _)| *p).collect();
    r.apply([del(&installed[0].to_string())]);
    assert_eq!((r.refused(), r.lpm().inner.v4.len()), (1, 4));
    r.apply([del(&installed[1].to_string())]);
    assert_eq!((r.refused(), r.lpm().inner.v4.len(), r.stats().retried_ok, r.stats().refused), (0, 4, 2, 0));
    // A refused prefix the kernel withdraws is forgotten.
    r.apply([route("100.9.0.0/16", &[(E0, Some("10.0.0.1"))])]);
    assert_eq!(r.refused(), 1);
    r.apply([del("100.9.0.0/16")]);
    assert_eq!((r.refused(), r.stats().refused), (0, 0));
}

/// docs/routing.md, "A router's contract": what a routed port never relays, and the RFC 1812
/// / RFC 4291 checks on the routed path.
#[test]
fn routed_port_contract() {
    let (mut r, t, _) = rib();
    r.apply([
        route("192.168.0.0/16", &[(E4, Some("10.0.0.3"))]),
        route("2001:db8::/32", &[(E4, Some("10.0.0.3"))]),
        neigh(E4, "10.0.0.3", Some(3)),
    ]);
    let d = |f: &[u8]| decide_on(&r, &t, f, true);
    let a = |s: &str| s.parse::<Ipv4Addr>().unwrap();
    let ok = v4_frame(RMAC, a("192.168.1.1"), 64, 1, 100);
    assert!(matches!(d(&ok), Decision::Route(_)));
    // A non-IP frame to the router MAC, or a broadcast of another EtherType: never relayed.
    let mut l2 = ok.clone();
    l2[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    assert_eq!(d(&l2), Decision::Drop(RouteDrop::NotRouted));
    l2[..6].copy_from_slice(&MacAddr::BROADCAST.0);
    assert_eq!(d(&l2), Decision::Drop(RouteDrop::NotRouted));
    l2[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0x77]);
    assert_eq!(d(&l2), Decision::Drop(RouteDrop::NotRouterMac));
    assert_eq!(decide_as(&r, &t, &l2, RouterPort::vlan(RMAC)), Decision::Bridge);
    // A wrong IPv4 header checksum (RFC 1812 5.2.2).
    let mut bad = ok.clone();
    bad[24] ^= 0x40;
    assert_eq!(d(&bad), Decision::Drop(RouteDrop::BadChecksum));
    // Martian sources (RFC 1812 5.3.7), unless the interface accepts them; destinations.
    for src in ["127.0.0.1", "0.0.0.0", "224.1.1.1", "240.0.0.1", "255.255.255.255"] {
        let mut f = ok.clone();
        f[26..30].copy_from_slice(&a(src).octets());
        f[24..26].copy_from_slice(&[0, 0]);
        let c = wire::ipv4_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        assert_eq!(d(&f), Decision::Drop(RouteDrop::MartianSource), "{src}");
        let relaxed = RouterPort { accept_martian_v4: true, ..RouterPort::port(RMAC) };
        assert!(matches!(decide_as(&r, &t, &f, relaxed), Decision::Route(_)), "{src} accepted");
    }
    assert_eq!(d(&v4_frame(RMAC, a("127.0.0.1"), 64, 1, 100)), Decision::Drop(RouteDrop::MartianDestination));
    assert_eq!(d(&v4_frame(RMAC, a("0.1.2.3"), 64, 1, 100)), Decision::Drop(RouteDrop::MartianDestination));
    // IPv6 sources a router MUST NOT forward (RFC 4291), relaxed or not.
    let d6 = |src: &str, port: RouterPort| {
        let mut f = v6_frame(RMAC, "2001:db8::1".parse().unwrap(), 17, 0);
        f[22..38].copy_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
        decide_as(&r, &t, &f, port)
    };
    for src in ["::", "::1", "ff02::1", "fe80::2"] {
        let relaxed = RouterPort { accept_martian_v4: true, ..RouterPort::port(RMAC) };
        assert_eq!(d6(src, relaxed), Decision::Drop(RouteDrop::MartianSource), "{src}");
    }
    assert!(matches!(d6("fc00::9", RouterPort::port(RMAC)), Decision::Route(_)));
    // ... but a link-local source to the switch itself is the kernel's (BGP over fe80::).
    let mut to_us = v6_frame(RMAC, "fe80::1".parse().unwrap(), 6, 0);
    to_us[22..38].copy_from_slice(&"fe80::2".parse::<Ipv6Addr>().unwrap().octets());
    assert_eq!(d(&to_us), Decision::Punt(PuntReason::ToUs));
    // IPv4 options: the kernel processes them (RFC 1812 5.2.4).
    let mut opts = vec![0u8; 14 + 24 + 40];
    opts[..6].copy_from_slice(&RMAC.0);
    opts[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    opts[14] = 0x46;
    opts[16..18].copy_from_slice(&64u16.to_be_bytes());
    opts[22] = 64;
    opts[23] = wire::proto::UDP;
    opts[26..30].copy_from_slice(&[10, 0, 0, 1]);
    opts[30..34].copy_from_slice(&[192, 168, 1, 1]);
    opts[34] = 7; // Record Route
    let c = wire::ipv4_checksum(&opts[14..38]);
    opts[24..26].copy_from_slice(&c.to_be_bytes());
    assert_eq!(d(&opts), Decision::Punt(PuntReason::IpOptions));
    // 802.1Q: VID 0 (priority-tagged) routes; any other VID is dropped on a routed port.
    let tag = |vid: u16| {
        let mut f = ok[..12].to_vec();
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&((3u16 << 13) | vid).to_be_bytes());
        f.extend_from_slice(&ok[12..]);
        f
    };
    assert!(matches!(d(&tag(0)), Decision::Route(_)));
    assert_eq!(d(&tag(100)), Decision::Drop(RouteDrop::Tagged));
}

/// A dead port's ECMP members are skipped at once: every flow leaves by the live member,
/// and flows come back to both when the link does.
#[test]
fn dead_ecmp_members_are_skipped() {
    let (mut r, t, _) = rib();
    r.apply([
        route("10.100.0.0/16", &[(E0, Some("10.0.0.1")), (E4, Some("10.0.0.3"))]),
        neigh(E0, "10.0.0.1", Some(1)),
        neigh(E4, "10.0.0.3", Some(3)),
    ]);
    let on = |down: u64| {
        let mut per_port = [0u32; 2];
        for sport in 0..64u16 {
            let f = v4_frame(RMAC, "10.100.0.9".parse().unwrap(), 64, 50000 + sport, 100);
            let p = wire::parse(&f).unwrap();
            let mut l3 = wire::L3Header::EMPTY;
            assert_eq!(decide::ingress(&p, &f, &RouterPort::port(RMAC), &mut l3), Ingress::Lookup);
            let value = match l3.addrs {
                wire::IpPair::V4 { dst, .. } => r.lpm().lookup4(u32::from_be_bytes(dst)),
                wire::IpPair::V6 { dst, .. } => r.lpm().lookup6(dst),
            };
            let Decision::Route(to) = forward(&l3, value, &t, 0x1234, &[1500, 1500], true, down) else { panic!() };
            per_port[usize::from(to.port)] += 1;
        }
        per_port
    };
    let both = on(0);
    assert!(both[0] > 0 && both[1] > 0, "{both:?}");
    assert_eq!(on(1 << 0), [0, 64], "port 0 down");
    assert_eq!(on(1 << 1), [64, 0], "port 1 down");
    assert_eq!(on(0b11), both, "every member down: as if none were (dropped as link_down)");
}

/// An ND flood from spoofed sources (each a new STALE neighbour with a MAC) mirrors at most
/// the bound of neighbours, counts the rest, and leaves the next-hop table room: a route
/// through a new gateway still resolves, on the flooded interface too.
#[test]
fn a_neighbour_flood_is_bounded() {
    let (mut r, t, _) = rib();
    r.apply([
        KernelEvent::Addr { add: true, ifindex: E0, addr: ip("fd00:1::1"), len: 64 },
        route("fd00:1::/64", &[(E0, None)]),
    ]);
    r.set_neighbour_limits(NeighbourLimits { total: 300, per_interface: 200 });
    let flood: Vec<KernelEvent> = (0..30_000u32)
        .map(|i| neigh(E0, &format!("fd00:1::{:x}:{:x}", 0x100 + (i >> 16), i & 0xffff), Some(i as u8)))
        .collect();
    r.apply(flood);
    assert_eq!(r.neighbour_count(), 200);
    assert_eq!(r.stats().neighbours_refused, 30_000 - 200);
    let hosts = r.installed().iter().filter(|(p, _)| p.prefix_len() == 128).count();
    assert!(hosts <= 201, "{hosts} host routes mirrored");
    // Another interface still has room up to the total.
    r.apply([neigh(E4, "10.0.0.3", Some(3))]);
    assert!(matches!(lookup(&r, "10.0.0.3"), Some(Target::NextHop(_))));
    // A gateway on the flooded interface: its route, then its neighbour (exempt from the bound).
    r.apply([route("2001:db8:7::/64", &[(E0, Some("fd00:1::9"))])]);
    r.apply([neigh(E0, "fd00:1::9", Some(9))]);
    let Some(Target::NextHop(id)) = lookup(&r, "2001:db8:7::1") else { panic!("{:?}", r.stats()) };
    assert_eq!(t.next_hop(id).unwrap().mac, Some(MacAddr([2, 0, 0, 0, 0xee, 9])));
    // The flood withdrawn (the kernel's GC): room again.
    let gone: Vec<KernelEvent> = (0..30_000u32)
        .map(|i| KernelEvent::Neigh {
            add: false,
            ifindex: E0,
            addr: ip(&format!("fd00:1::{:x}:{:x}", 0x100 + (i >> 16), i & 0xffff)),
            mac: None,
        })
        .collect();
    r.apply(gone);
    assert_eq!(r.neighbour_count(), 2);
    r.apply([neigh(E0, "fd00:1::5", Some(5))]);
    assert!(matches!(lookup(&r, "fd00:1::5"), Some(Target::NextHop(_))));
}

/// With the default bound, a flood larger than the next-hop table cannot fill it: routes
/// through new gateways are still installed after 40 000 spoofed neighbours.
#[test]
fn a_neighbour_flood_leaves_next_hops_for_routes() {
    let (mut r, _, _) = rib();
    r.apply([
        KernelEvent::Addr { add: true, ifindex: E0, addr: ip("fd00:1::1"), len: 64 },
        route("fd00:1::/64", &[(E0, None)]),
    ]);
    let flood: Vec<KernelEvent> = (0..40_000u32)
        .map(|i| neigh(E0, &format!("fd00:1::{:x}:{:x}", 0x100 + (i >> 16), i & 0xffff), Some(i as u8)))
        .collect();
    r.apply(flood);
    let gateways: Vec<KernelEvent> =
        (0..2000u32).map(|i| route(&format!("2001:db8:{i:x}::/64"), &[(E4, Some("10.0.0.3"))])).collect();
    r.apply(gateways);
    r.apply(
        (0..100u32)
            .map(|i| route(&format!("2001:db9:{i:x}::/64"), &[(E0, Some(&format!("fd00:1::{:x}", 0x9000 + i)))])),
    );
    assert_eq!(r.stats().refused, 0, "{:?}", r.stats());
    assert!(matches!(lookup(&r, "2001:db9:63::1"), Some(Target::NextHop(_))));
    assert!(r.stats().neighbours_refused >= 40_000 - 16_384);
}

/// ECMP failover at scale: 131 072 routes over the same 4 next hops are one
/// group, so a dead link is one bit in the mask the router reads per burst: no route, group
/// or next hop is rewritten before every route stops using the dead member (the kernel's
/// withdrawals come later, and then also change one group, not 131 072).
#[test]
fn ecmp_failover_at_scale_is_one_shared_group() {
    let tables = Arc::new(NextHopTables::new());
    let grace = Arc::new(ManualGrace::default());
    let names = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"].map(String::from).to_vec();
    let mut r = Rib::new(SoftLpm::default(), tables.clone(), grace, names);
    let mut ev: Vec<KernelEvent> = (0..4u32)
        .flat_map(|i| {
            [
                KernelEvent::Link { ifindex: 20 + i, name: format!("Ethernet{}", 4 * i), carrier: true },
                KernelEvent::Addr { add: true, ifindex: 20 + i, addr: ip(&format!("10.1.{i}.0")), len: 31 },
                route(&format!("10.1.{i}.0/31"), &[(20 + i, None)]),
                neigh(20 + i, &format!("10.1.{i}.1"), Some(i as u8)),
            ]
        })
        .collect();
    let paths: Vec<(u32, String)> = (0..4u32).map(|i| (20 + i, format!("10.1.{i}.1"))).collect();
    let paths: Vec<(u32, Option<&str>)> = paths.iter().map(|(i, g)| (*i, Some(g.as_str()))).collect();
    ev.extend(
        (0..131_072u32).map(|n| route(&format!("{}.{}.{}.0/24", 100 + (n >> 16), (n >> 8) & 255, n & 255), &paths)),
    );
    r.apply(ev);
    let targets: std::collections::BTreeSet<Target> =
        r.installed().into_iter().filter(|(p, _)| p.prefix_len() == 24).map(|(_, t)| t).collect();
    assert_eq!(targets.len(), 1, "131 072 routes over the same paths share one group: {targets:?}");
    let target = *targets.iter().next().unwrap();
    let writes = r.stats().lpm_writes;
    // Port 2 goes down: nothing is rewritten, and no flow of any route resolves to it.
    let down = 1u64 << 2;
    let mut per_port = [0u32; 4];
    for hash in (0..1_000_000u32).map(|h| h.wrapping_mul(2_654_435_761)) {
        match tables.resolve_live(target, hash, down) {
            Resolved::Forward { port, .. } => per_port[usize::from(port)] += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(per_port[2], 0, "a flow still on the dead member: {per_port:?}");
    assert!(per_port.iter().enumerate().all(|(p, &n)| p == 2 || n > 200_000), "{per_port:?}");
    assert_eq!(r.stats().lpm_writes, writes);
}

fn nh_route(p: &str, id: u32) -> KernelEvent {
    KernelEvent::Route {
        add: true,
        append: false,
        route: KernelRoute { prefix: pfx(p), metric: 20, kind: RouteKind::Unicast, paths: vec![], nh_id: Some(id) },
    }
}
fn nh(id: u32, ifindex: u32, gw: &str) -> KernelEvent {
    KernelEvent::NextHop { id, kind: NextHopKind::Via { ifindex, gateway: Some(ip(gw)) } }
}
fn group(id: u32, members: &[(u32, u16)]) -> KernelEvent {
    KernelEvent::NextHop { id, kind: NextHopKind::Group(members.to_vec()) }
}
/// (port, gateway) of what `a` resolves to: one next hop or a group's members.
fn members(r: &TestRib, t: &NextHopTables, a: &str) -> Vec<(u16, IpAddr)> {
    let hops: Vec<(u16, u16, IpAddr, Option<MacAddr>)> = r.next_hops();
    let key = |id: u16| hops.iter().find(|h| h.0 == id).map(|h| (h.1, h.2)).unwrap();
    match lookup(r, a) {
        Some(Target::NextHop(id)) => vec![key(id)],
        Some(Target::Group(g)) => t.group(g).iter().map(|&id| key(id)).collect(),
        other => panic!("{a}: {other:?}"),
    }
}

#[test]
fn routes_through_kernel_nexthop_objects() {
    let (mut r, t, _) = rib();
    // What the kernel sends with nexthop_compat_mode = 0: objects, then routes with only
    // RTA_NH_ID, for both families; a group with weights.
    r.apply([
        nh(1, E0, "10.0.0.1"),
        nh(2, E4, "10.0.0.3"),
        nh(3, E0, "fc00::1"),
        KernelEvent::NextHop { id: 4, kind: NextHopKind::Blackhole },
        group(10, &[(1, 1), (2, 3)]),
        nh_route("192.168.0.0/16", 10),
        nh_route("172.16.0.0/12", 2),
        nh_route("2001:db8::/32", 3),
        nh_route("198.51.100.0/24", 4),
    ]);
    let (a, b) = ((0, ip("10.0.0.1")), (1, ip("10.0.0.3")));
    assert_eq!(members(&r, &t, "192.168.1.1"), vec![a, b, b, b]);
    assert_eq!(members(&r, &t, "172.16.0.1"), vec![b]);
    assert_eq!(members(&r, &t, "2001:db8::1"), vec![(0, ip("fc00::1"))]);
    assert_eq!(lookup(&r, "198.51.100.1"), Some(Target::Blackhole));
    assert_eq!(r.nexthop_objects(), 5);
    let view = r.view();
    let row = view.routes.iter().find(|row| row.prefix == pfx("192.168.0.0/16")).unwrap();
    assert_eq!(row.nexthops.iter().map(|h| (h.0, h.3)).collect::<Vec<_>>(), vec![(0, 1), (1, 3)]);

    // The group replaced (no route message comes): the route follows in the same batch.
    r.apply([group(10, &[(1, 1)])]);
    assert_eq!(members(&r, &t, "192.168.1.1"), vec![a]);
    // A member replaced: every route through it or a group holding it follows.
    r.apply([nh(2, E0, "10.0.0.1"), group(10, &[(1, 1), (2, 1)])]);
    assert_eq!(members(&r, &t, "172.16.0.1"), vec![a]);
    r.apply([nh(2, E4, "10.0.0.3")]);
    assert_eq!(members(&r, &t, "192.168.1.1"), vec![a, b]);
    assert_eq!(members(&r, &t, "172.16.0.1"), vec![b]);

    // Object 2 deleted: its route goes with it, the group keeps member 1.
    r.apply([KernelEvent::NextHopGone { id: 2 }]);
    assert_eq!(lookup(&r, "172.16.0.1"), None);
    assert_eq!(members(&r, &t, "192.168.1.1"), vec![a]);
    // Object 1 deleted: group 10 is left empty and goes, and its route.
    r.apply([KernelEvent::NextHopGone { id: 1 }]);
    assert_eq!(lookup(&r, "192.168.1.1"), None);
    assert_eq!(r.nexthop_objects(), 2);
    // An object and its route added and the object deleted in one batch: the route goes
    // with it; added again, it is back.
    r.apply([nh(5, E4, "10.0.0.3"), nh_route("10.50.0.0/16", 5), KernelEvent::NextHopGone { id: 5 }]);
    assert_eq!(lookup(&r, "10.50.0.1"), None);
    r.apply([nh(5, E4, "10.0.0.3"), nh_route("10.50.0.0/16", 5)]);
    assert_eq!(members(&r, &t, "10.50.0.1"), vec![b]);

    // Ethernet4 loses its carrier: the kernel flushes the objects through it (no message),
    // the routes through them go, groups keep their other members.
    r.apply([nh(7, E0, "10.0.0.1"), group(11, &[(5, 1), (7, 1)]), nh_route("10.51.0.0/16", 11)]);
    assert_eq!(members(&r, &t, "10.51.0.1"), vec![a, b]);
    r.apply([KernelEvent::Link { ifindex: E4, name: "Ethernet4".into(), carrier: false }]);
    assert_eq!(lookup(&r, "10.50.0.1"), None);
    assert_eq!(members(&r, &t, "10.51.0.1"), vec![a]);
    r.apply([KernelEvent::LinkGone { ifindex: E0 }]);
    assert_eq!(lookup(&r, "10.51.0.1"), None);
    assert_eq!(r.nexthop_objects(), 1, "the blackhole (on no link) is left");
    assert_eq!(lookup(&r, "2001:db8::1"), None, "object 3 was through Ethernet0");
    r.apply([KernelEvent::Link { ifindex: E0, name: "Ethernet0".into(), carrier: true }]);
    r.apply([KernelEvent::Link { ifindex: E4, name: "Ethernet4".into(), carrier: true }]);
    r.apply([nh(5, E4, "10.0.0.3"), nh_route("10.50.0.0/16", 5)]);

    // A resync forgets the objects the dump no longer has, and their routes.
    r.resync([
        KernelEvent::Link { ifindex: E0, name: "Ethernet0".into(), carrier: true },
        KernelEvent::Link { ifindex: E4, name: "Ethernet4".into(), carrier: true },
        route("10.0.0.2/31", &[(E4, None)]),
        nh(6, E4, "10.0.0.3"),
        nh_route("10.50.0.0/16", 6),
    ]);
    assert_eq!(members(&r, &t, "10.50.0.1"), vec![b]);
    assert_eq!(lookup(&r, "2001:db8::1"), None);
    assert_eq!(lookup(&r, "198.51.100.1"), None);
    assert_eq!(r.nexthop_objects(), 1);
    // An unknown object: the expanded paths, if any (compat mode 1), else the kernel's.
    r.apply([nh_route("10.60.0.0/16", 99)]);
    assert_eq!(lookup(&r, "10.60.0.1"), Some(Target::Kernel));
    assert_eq!(r.stats().errors, 0);
}
