//! The router's per-packet decision, in two pure steps around the LPM lookup (which the
//! worker does, one packet or a whole burst at a time, in DPDK's table):
//!
//! 1. [`ingress`]: is this frame routed, bridged as today, or for the kernel (ARP, ND,
//!    link-scope multicast, the switch's own link-local addresses)? If routed, the L3
//!    header to look up.
//! 2. [`forward`]: from the lookup's value, the next hop (ECMP member by flow hash) and the
//!    checks the kernel must handle instead: the switch's own address, TTL ≤ 1, no route,
//!    unresolved neighbour, larger than the egress MTU.
//!
//! Both allocate nothing and take everything they read as arguments.

use super::hash::flow_hash;
use super::tables::{NextHopTables, Resolved};
use super::target::Target;
use crate::wire::{parse_l3, IpPair, L3Header, MacAddr, Parsed};

/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;

/// Why a packet goes to the kernel (each a counter, and a class of the punt rate limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PuntReason {
    /// ARP request or reply on a router interface.
    Arp,
    /// IPv6 Neighbour Discovery (ICMPv6 133..=137).
    Nd,
    /// To one of the switch's addresses (ping, BGP), its link-local addresses, or
    /// link-scope multicast (224.0.0.0/24, ff02::/16).
    ToUs,
    /// TTL or hop limit ≤ 1: the kernel answers ICMP time exceeded.
    TtlExpired,
    /// No route the dataplane can forward on: the kernel answers ICMP unreachable, or
    /// forwards it itself through an interface that is not a switch port.
    NoRoute,
    /// The next hop's neighbour is not resolved, or the destination is in a connected
    /// subnet with no neighbour entry: the kernel forwards it and resolves the neighbour.
    NeighbourMiss,
    /// Longer than the egress port's MTU: the kernel fragments it or answers ICMP
    /// fragmentation needed / packet too big.
    MtuExceeded,
    /// An IPv4 packet with options (IHL > 5): the kernel processes the options it
    /// forwards (Record Route, Timestamp), as RFC 1812 5.2.4 asks of a router.
    IpOptions,
}

impl PuntReason {
    /// Every reason, in counter order.
    pub const ALL: [PuntReason; 8] = [
        PuntReason::Arp,
        PuntReason::Nd,
        PuntReason::ToUs,
        PuntReason::TtlExpired,
        PuntReason::NoRoute,
        PuntReason::NeighbourMiss,
        PuntReason::MtuExceeded,
        PuntReason::IpOptions,
    ];

    /// Counter index (position in [`PuntReason::ALL`]).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The counter's name in JSON and `show`.
    pub const fn name(self) -> &'static str {
        match self {
            PuntReason::Arp => "arp",
            PuntReason::Nd => "nd",
            PuntReason::ToUs => "to_us",
            PuntReason::TtlExpired => "ttl_expired",
            PuntReason::NoRoute => "no_route",
            PuntReason::NeighbourMiss => "neighbour_miss",
            PuntReason::MtuExceeded => "mtu_exceeded",
            PuntReason::IpOptions => "ip_options",
        }
    }
}

/// Why the router drops a packet itself (docs/routing.md, "A router's contract").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteDrop {
    /// A kernel blackhole route.
    Blackhole,
    /// A route only through interfaces that are not switch ports ([`Target::NonPort`]).
    NonPort,
    /// An IP header whose length fields overrun the frame, sent to the router MAC.
    Malformed,
    /// On a routed port: unicast to a MAC that is not the router's (a routed port is no
    /// bridge port: nothing is relayed at L2).
    NotRouterMac,
    /// On a routed port: a broadcast or multicast the kernel does not take (not ARP, ND,
    /// link-scope or limited broadcast), or a frame to the router MAC that is neither IP
    /// nor ARP. Nothing is flooded from a router interface.
    NotRouted,
    /// On a routed port: 802.1Q-tagged with a VID other than 0 (no VLAN sub-interfaces:
    /// SONiC's ASIC drops them the same way). Priority-tagged frames (VID 0) are routed.
    Tagged,
    /// IPv4 header checksum wrong (RFC 1812 5.2.2: verify, silently discard).
    BadChecksum,
    /// A source no router forwards: IPv4 0/8, 127/8, 224/4, 240/4 and 255.255.255.255
    /// (RFC 1812 5.3.7); IPv6 ::, ::1, ff00::/8, fe80::/10 (RFC 4291 2.5.2, 2.5.3, 2.5.6, 2.7).
    MartianSource,
    /// A destination no router forwards: IPv4 0/8 and 127/8 (RFC 1812 5.3.7, 4.2.2.11);
    /// IPv6 :: and ::1 (RFC 4291 2.5.2, 2.5.3).
    MartianDestination,
}

/// Where a routed packet goes: the egress port (switch port index) and the neighbour's MAC.
/// The source MAC is the egress port's router MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteTo {
    pub port: u16,
    pub dst_mac: MacAddr,
}

/// What the worker does with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Not routed: the L2 path as today (FDB, flood).
    Bridge,
    /// Rewrite ([`crate::wire::route_rewrite`]) and send to `port`, in the class the frame
    /// was classified in (DSCP unchanged).
    Route(RouteTo),
    /// Up the ingress port's kernel representor.
    Punt(PuntReason),
    /// Larger than the egress port's IP MTU (this value): the router answers ICMP
    /// fragmentation needed (IPv4 with DF) or packet too big (IPv6) itself, or punts
    /// `mtu_exceeded` for the kernel to fragment (IPv4 without DF).
    TooBig(u16),
    /// Dropped and counted.
    Drop(RouteDrop),
}

/// What the worker knows of the ingress port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterPort {
    /// The port has an `[interface]` entry (a router interface), or is a VLAN
    /// interface's representor.
    pub routed: bool,
    /// Its MAC: the router MAC on this port.
    pub mac: MacAddr,
    /// A VLAN interface: what is not for the router is bridged in the VLAN. A routed port
    /// (false) has no L2 domain: such frames are dropped.
    pub bridges: bool,
    /// `[interface] accept_martian_sources`: IPv4 martian sources are routed (RFC 1812
    /// 5.3.7 is a SHOULD NOT, checking on by default). IPv6's are MUSTs, always checked.
    pub accept_martian_v4: bool,
    /// The interface's first configured IPv4 / IPv6 address: the source of the router's
    /// own ICMP errors sent from the dataplane (packet too big). None: the kernel answers.
    pub src4: Option<[u8; 4]>,
    pub src6: Option<[u8; 16]>,
}

impl RouterPort {
    /// Not a router interface.
    pub const NONE: RouterPort = RouterPort {
        routed: false,
        mac: MacAddr([0; 6]),
        bridges: false,
        accept_martian_v4: false,
        src4: None,
        src6: None,
    };

    /// A routed port with router MAC `mac`.
    pub const fn port(mac: MacAddr) -> RouterPort {
        RouterPort { routed: true, mac, bridges: false, ..RouterPort::NONE }
    }

    /// A VLAN interface with router MAC `mac`.
    pub const fn vlan(mac: MacAddr) -> RouterPort {
        RouterPort { routed: true, mac, bridges: true, ..RouterPort::NONE }
    }
}

/// The first step's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress {
    /// Decided without a lookup.
    Done(Decision),
    /// Look up the destination of the header [`ingress`] wrote, then call [`forward`].
    Lookup,
}

fn link_scope_multicast(a: &IpPair) -> bool {
    match a {
        IpPair::V4 { dst, .. } => dst[0] == 224 && dst[1] == 0 && dst[2] == 0,
        IpPair::V6 { dst, .. } => dst[0] == 0xff && dst[1] & 0x0f == 0x02,
    }
}

/// Destinations a router never forwards and the kernel owns: IPv6 link-local and
/// multicast, IPv4 multicast and limited broadcast.
fn kernel_only(a: &IpPair) -> bool {
    match a {
        IpPair::V4 { dst, .. } => dst[0] >= 224,
        IpPair::V6 { dst, .. } => dst[0] == 0xff || (dst[0] == 0xfe && dst[1] & 0xc0 == 0x80),
    }
}

/// IPv4 limited broadcast (DHCP, and what the kernel may want on a link).
fn limited_broadcast(a: &IpPair) -> bool {
    matches!(a, IpPair::V4 { dst: [255, 255, 255, 255], .. })
}

/// RFC 1812 5.3.7 / RFC 4291: a source no router forwards (`v4`: check IPv4's too).
#[inline]
pub fn martian_source(a: &IpPair, v4: bool) -> bool {
    match a {
        IpPair::V4 { src, .. } => v4 && (src[0] == 0 || src[0] == 127 || src[0] >= 224),
        IpPair::V6 { src, .. } => {
            let hi = u64::from_be_bytes([src[0], src[1], src[2], src[3], src[4], src[5], src[6], src[7]]);
            let lo = u64::from_be_bytes([src[8], src[9], src[10], src[11], src[12], src[13], src[14], src[15]]);
            (hi == 0 && lo <= 1) || src[0] == 0xff || (src[0] == 0xfe && src[1] & 0xc0 == 0x80)
        }
    }
}

/// RFC 1812 5.3.7 / RFC 4291: a destination no router forwards.
#[inline]
pub fn martian_destination(a: &IpPair) -> bool {
    match a {
        IpPair::V4 { dst, .. } => dst[0] == 0 || dst[0] == 127,
        IpPair::V6 { dst, .. } => dst[..15].iter().all(|&b| b == 0) && dst[15] <= 1,
    }
}

/// Step 1: a frame that parsed as `p` arrived on `port`.
///
/// On a router interface: ARP to the router MAC or broadcast and IPv6 ND are punted;
/// link-scope IP multicast and IPv4 limited broadcast are punted (`to_us`); IP to the
/// router MAC is checked (header checksum, martian destination) and looked up (or punted
/// `to_us` for the kernel-only destinations, `ip_options` with IPv4 options). Anything
/// else is not for the router: bridged on a VLAN interface, dropped on a routed port
/// (docs/routing.md, "A router's contract").
/// The L3 header is parsed into `l3` (the router's slot for the burst's lookup, so that
/// it is written once, not copied between the passes); it is meaningful on `Lookup`.
#[inline]
pub fn ingress(p: &Parsed, frame: &[u8], port: &RouterPort, l3: &mut L3Header) -> Ingress {
    if !port.routed {
        return Ingress::Done(Decision::Bridge);
    }
    // Not the router's: the VLAN bridges it; a routed port has no L2 domain.
    let not_ours = |why: RouteDrop| Ingress::Done(if port.bridges { Decision::Bridge } else { Decision::Drop(why) });
    if !port.bridges && p.vlan.is_some_and(|t| t.vid != 0) {
        return Ingress::Done(Decision::Drop(RouteDrop::Tagged));
    }
    let to_router = p.dst == port.mac;
    let other = if p.dst.is_multicast() { RouteDrop::NotRouted } else { RouteDrop::NotRouterMac };
    if p.ethertype == ETHERTYPE_ARP {
        return if to_router || p.dst.is_broadcast() {
            Ingress::Done(Decision::Punt(PuntReason::Arp))
        } else {
            not_ours(other)
        };
    }
    if !p.is_ip() {
        return not_ours(if to_router { RouteDrop::NotRouted } else { other });
    }
    if !(to_router || p.dst.is_multicast()) {
        return not_ours(RouteDrop::NotRouterMac);
    }
    *l3 = match parse_l3(frame, p) {
        Ok(h) => h,
        Err(_) if to_router => return Ingress::Done(Decision::Drop(RouteDrop::Malformed)),
        Err(_) => return not_ours(RouteDrop::NotRouted),
    };
    if l3.is_nd() {
        return Ingress::Done(Decision::Punt(PuntReason::Nd));
    }
    if !to_router {
        return if link_scope_multicast(&l3.addrs) || limited_broadcast(&l3.addrs) {
            Ingress::Done(Decision::Punt(PuntReason::ToUs))
        } else {
            not_ours(RouteDrop::NotRouted)
        };
    }
    if !l3.checksum_ok {
        return Ingress::Done(Decision::Drop(RouteDrop::BadChecksum));
    }
    if kernel_only(&l3.addrs) {
        return Ingress::Done(Decision::Punt(PuntReason::ToUs));
    }
    if martian_destination(&l3.addrs) {
        return Ingress::Done(Decision::Drop(RouteDrop::MartianDestination));
    }
    Ingress::Lookup
}

/// Step 2: `value` is what the LPM lookup of `l3`'s destination returned
/// ([`super::NO_ROUTE`] for none); `seed` the switch's ECMP seed; `mtu[p]` port `p`'s IP
/// MTU; `v4_sources`: check IPv4 martian sources (the ingress interface does not accept
/// them); `down`: ports whose link is down (bit p), skipped among ECMP members. The order
/// is the kernel's: own address, then the source, TTL, options, the route.
#[inline]
pub fn forward(
    l3: &L3Header,
    value: u32,
    tables: &NextHopTables,
    seed: u32,
    mtu: &[u16],
    v4_sources: bool,
    down: u64,
) -> Decision {
    let target = Target::decode(value);
    if target == Some(Target::Local) {
        return Decision::Punt(PuntReason::ToUs);
    }
    if martian_source(&l3.addrs, v4_sources) {
        return Decision::Drop(RouteDrop::MartianSource);
    }
    if l3.ttl <= 1 {
        return Decision::Punt(PuntReason::TtlExpired);
    }
    if l3.options {
        return Decision::Punt(PuntReason::IpOptions);
    }
    let Some(t) = target else { return Decision::Punt(PuntReason::NoRoute) };
    let hash = if matches!(t, Target::Group(_)) { flow_hash(l3, seed) } else { 0 };
    match tables.resolve_live(t, hash, down) {
        Resolved::Forward { port, mac } => match mtu.get(usize::from(port)) {
            Some(&m) if l3.len <= m => Decision::Route(RouteTo { port, dst_mac: mac }),
            Some(&m) => Decision::TooBig(m),
            None => Decision::Punt(PuntReason::NoRoute),
        },
        Resolved::Unresolved { .. } | Resolved::Special(Target::Glean) => Decision::Punt(PuntReason::NeighbourMiss),
        Resolved::Special(Target::Blackhole) => Decision::Drop(RouteDrop::Blackhole),
        Resolved::Special(Target::NonPort) => Decision::Drop(RouteDrop::NonPort),
        Resolved::Special(Target::Local) => Decision::Punt(PuntReason::ToUs),
        Resolved::Special(_) | Resolved::Empty => Decision::Punt(PuntReason::NoRoute),
    }
}

/// Both steps with a lookup function (one packet at a time): `lookup(&l3)` returns the LPM
/// value for `l3`'s destination.
#[inline]
pub fn decide(
    p: &Parsed,
    frame: &[u8],
    port: &RouterPort,
    lookup: impl FnOnce(&L3Header) -> u32,
    tables: &NextHopTables,
    seed: u32,
    mtu: &[u16],
) -> Decision {
    let mut l3 = L3Header::EMPTY;
    match ingress(p, frame, port, &mut l3) {
        Ingress::Done(d) => d,
        Ingress::Lookup => forward(&l3, lookup(&l3), tables, seed, mtu, !port.accept_martian_v4, 0),
    }
}
