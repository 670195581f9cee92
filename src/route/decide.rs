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
}

impl PuntReason {
    /// Every reason, in counter order.
    pub const ALL: [PuntReason; 7] = [
        PuntReason::Arp,
        PuntReason::Nd,
        PuntReason::ToUs,
        PuntReason::TtlExpired,
        PuntReason::NoRoute,
        PuntReason::NeighbourMiss,
        PuntReason::MtuExceeded,
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
        }
    }
}

/// Why the router drops a packet itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteDrop {
    /// A kernel blackhole route.
    Blackhole,
    /// An IP header whose length fields overrun the frame, sent to the router MAC.
    Malformed,
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
    /// Dropped and counted.
    Drop(RouteDrop),
}

/// What the worker knows of the ingress port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterPort {
    /// The port has an `[interface]` entry (a router interface).
    pub routed: bool,
    /// Its MAC: the router MAC on this port.
    pub mac: MacAddr,
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

/// Step 1: a frame that parsed as `p` arrived on `port`.
///
/// On a router interface: ARP to the router MAC or broadcast and IPv6 ND are punted;
/// link-scope IP multicast is punted (`to_us`); IP to the router MAC is looked up (or
/// punted `to_us` for the kernel-only destinations); everything else is bridged as today.
/// The L3 header is parsed into `l3` (the router's slot for the burst's lookup, so that
/// it is written once, not copied between the passes); it is meaningful on `Lookup`.
#[inline]
pub fn ingress(p: &Parsed, frame: &[u8], port: &RouterPort, l3: &mut L3Header) -> Ingress {
    if !port.routed {
        return Ingress::Done(Decision::Bridge);
    }
    let to_router = p.dst == port.mac;
    if p.ethertype == ETHERTYPE_ARP {
        let punt = to_router || p.dst.is_broadcast();
        return Ingress::Done(if punt { Decision::Punt(PuntReason::Arp) } else { Decision::Bridge });
    }
    if !p.is_ip() || !(to_router || p.dst.is_multicast()) {
        return Ingress::Done(Decision::Bridge);
    }
    *l3 = match parse_l3(frame, p) {
        Ok(h) => h,
        Err(_) if to_router => return Ingress::Done(Decision::Drop(RouteDrop::Malformed)),
        Err(_) => return Ingress::Done(Decision::Bridge),
    };
    if l3.is_nd() {
        return Ingress::Done(Decision::Punt(PuntReason::Nd));
    }
    if !to_router {
        let d = if link_scope_multicast(&l3.addrs) { Decision::Punt(PuntReason::ToUs) } else { Decision::Bridge };
        return Ingress::Done(d);
    }
    if kernel_only(&l3.addrs) {
        return Ingress::Done(Decision::Punt(PuntReason::ToUs));
    }
    Ingress::Lookup
}

/// Step 2: `value` is what the LPM lookup of `l3`'s destination returned
/// ([`super::NO_ROUTE`] for none); `seed` the switch's ECMP seed; `mtu[p]` port `p`'s IP
/// MTU. The order is the kernel's: own address, then TTL, then the route.
#[inline]
pub fn forward(l3: &L3Header, value: u32, tables: &NextHopTables, seed: u32, mtu: &[u16]) -> Decision {
    let target = Target::decode(value);
    if target == Some(Target::Local) {
        return Decision::Punt(PuntReason::ToUs);
    }
    if l3.ttl <= 1 {
        return Decision::Punt(PuntReason::TtlExpired);
    }
    let Some(t) = target else { return Decision::Punt(PuntReason::NoRoute) };
    let hash = if matches!(t, Target::Group(_)) { flow_hash(l3, seed) } else { 0 };
    match tables.resolve(t, hash) {
        Resolved::Forward { port, mac } => match mtu.get(usize::from(port)) {
            Some(&m) if l3.len <= m => Decision::Route(RouteTo { port, dst_mac: mac }),
            Some(_) => Decision::Punt(PuntReason::MtuExceeded),
            None => Decision::Punt(PuntReason::NoRoute),
        },
        Resolved::Unresolved { .. } | Resolved::Special(Target::Glean) => Decision::Punt(PuntReason::NeighbourMiss),
        Resolved::Special(Target::Blackhole) => Decision::Drop(RouteDrop::Blackhole),
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
        Ingress::Lookup => forward(&l3, lookup(&l3), tables, seed, mtu),
    }
}
