//! Control-plane policing (SONiC's CoPP): every packet for the kernel belongs to a trap
//! group, and each (ingress port, group) has its own token bucket in packets, so that a
//! flood on one port cannot starve another port's ARP, ND or BGP, and no group can starve
//! another (docs/routing.md, "CoPP"). One limiter per worker lcore (no sharing, no
//! atomics): each polices its share of the configured rates. Pure: time is the caller's TSC.

use super::decide::PuntReason;
use crate::wire::{proto, L3Header};

/// SONiC's trap groups as pfcswitch punts them, in rate order (`[control_plane.copp]` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrapGroup {
    /// ARP, IPv6 neighbour discovery (SONiC `queue4_group2`: arp_req, arp_resp, neigh_discovery).
    ArpNd,
    /// BGP (TCP 179) and BFD (UDP 3784, 3785, 4784) to the switch (SONiC `queue4_group1`).
    BgpBfd,
    /// Anything else to the switch's addresses, link-scope multicast, limited broadcast
    /// (SONiC `queue1_group1`, ip2me).
    Ip2me,
    /// TTL or hop limit expired (the kernel answers time exceeded).
    TtlError,
    /// Unresolved neighbour (SONiC's neighbour miss / glean).
    NeighMiss,
    /// Larger than the egress MTU (the kernel fragments or answers).
    Mtu,
    /// No route, IPv4 options, and the rest (SONiC `default`).
    Default,
}

impl TrapGroup {
    /// Every group, in `[control_plane.copp]` and counter order.
    pub const ALL: [TrapGroup; 7] = [
        TrapGroup::ArpNd,
        TrapGroup::BgpBfd,
        TrapGroup::Ip2me,
        TrapGroup::TtlError,
        TrapGroup::NeighMiss,
        TrapGroup::Mtu,
        TrapGroup::Default,
    ];

    /// Counter index.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name in `[control_plane.copp]`, the stats JSON and telemetry.
    pub const fn name(self) -> &'static str {
        match self {
            TrapGroup::ArpNd => "arp_nd",
            TrapGroup::BgpBfd => "bgp_bfd",
            TrapGroup::Ip2me => "ip2me",
            TrapGroup::TtlError => "ttl_error",
            TrapGroup::NeighMiss => "neigh_miss",
            TrapGroup::Mtu => "mtu",
            TrapGroup::Default => "default",
        }
    }

    /// The group of a packet punted for `why` whose L3 header is `l3` (read for `to_us`
    /// only: BGP and BFD have a group of their own).
    #[inline]
    pub fn of(why: PuntReason, l3: &L3Header) -> TrapGroup {
        match why {
            PuntReason::Arp | PuntReason::Nd => TrapGroup::ArpNd,
            PuntReason::ToUs if bgp_or_bfd(l3) => TrapGroup::BgpBfd,
            PuntReason::ToUs => TrapGroup::Ip2me,
            PuntReason::TtlExpired => TrapGroup::TtlError,
            PuntReason::NeighbourMiss => TrapGroup::NeighMiss,
            PuntReason::MtuExceeded => TrapGroup::Mtu,
            PuntReason::NoRoute | PuntReason::IpOptions => TrapGroup::Default,
        }
    }
}

/// BGP (TCP port 179 either way) or BFD (UDP to 3784 single-hop, 3785 echo, 4784 multihop).
#[inline]
fn bgp_or_bfd(l3: &L3Header) -> bool {
    l3.has_ports()
        && match l3.proto {
            proto::TCP => l3.l4_a == 179 || l3.l4_b == 179,
            proto::UDP => matches!(l3.l4_b, 3784 | 3785 | 4784),
            _ => false,
        }
}

/// One token bucket. Tokens are counted in packet·ticks (one packet = `hz` units), so a
/// rate in packets per second adds `rate` units per TSC tick with integers only.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    /// Packets per second (0: nothing passes).
    rate: u64,
    /// Bucket size in units (burst × hz).
    depth: u128,
    tokens: u128,
    last: u64,
}

impl Bucket {
    /// `rate` packets per second, up to `burst` at once, on a TSC of `hz`.
    pub fn new(rate: u64, burst: u64, hz: u64, now: u64) -> Bucket {
        let depth = u128::from(burst) * u128::from(hz);
        Bucket { rate, depth, tokens: depth, last: now }
    }

    /// May a packet pass at `now` (TSC)? Takes a token if so.
    #[inline]
    pub fn admit(&mut self, now: u64, hz: u64) -> bool {
        if self.rate == 0 {
            return false;
        }
        let dt = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        self.tokens = (self.tokens + u128::from(dt) * u128::from(self.rate)).min(self.depth);
        let one = u128::from(hz);
        if self.tokens >= one {
            self.tokens -= one;
            true
        } else {
            false
        }
    }
}

/// A worker's punt limiter: one bucket per (ingress port, trap group).
#[derive(Debug, Clone)]
pub struct PuntLimiter {
    buckets: Vec<[Bucket; TrapGroup::ALL.len()]>,
    hz: u64,
}

impl PuntLimiter {
    /// `rates[g]`: packets per second of group `g` per ingress port, of which this limiter
    /// polices `1/share` (rounded up: `share` workers never pass less than the rate), for
    /// `nports` ports. Each bucket holds a tenth of a second of its rate (at least 8
    /// packets): a burst of ARP after a link flap passes, a flood is held to the rate within
    /// 100 ms.
    pub fn new(rates: [u32; TrapGroup::ALL.len()], share: u32, nports: usize, tsc_hz: u64, now: u64) -> PuntLimiter {
        let share = u64::from(share.max(1));
        let hz = tsc_hz.max(1);
        let one = rates.map(|r| {
            let rate = u64::from(r).div_ceil(share);
            let burst = if rate == 0 { 0 } else { (rate / 10).max(8) };
            Bucket::new(rate, burst, hz, now)
        });
        PuntLimiter { buckets: vec![one; nports.max(1)], hz }
    }

    /// May a packet of `group` received on `port` go up at `now` (TSC)? Takes a token if so.
    #[inline]
    pub fn admit(&mut self, port: usize, group: TrapGroup, now: u64) -> bool {
        match self.buckets.get_mut(port) {
            Some(b) => b[group.index()].admit(now, self.hz),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HZ: u64 = 2_000_000_000;

    fn l3(proto: u8, sport: u16, dport: u16) -> L3Header {
        L3Header { proto, l4_a: sport, l4_b: dport, ..L3Header::EMPTY }
    }

    #[test]
    fn groups_cover_every_reason() {
        let any = L3Header::EMPTY;
        for r in PuntReason::ALL {
            assert!(TrapGroup::of(r, &any).index() < TrapGroup::ALL.len());
        }
        assert_eq!(TrapGroup::of(PuntReason::Arp, &any), TrapGroup::of(PuntReason::Nd, &any));
        assert_eq!(TrapGroup::of(PuntReason::ToUs, &l3(proto::TCP, 40000, 179)), TrapGroup::BgpBfd);
        assert_eq!(TrapGroup::of(PuntReason::ToUs, &l3(proto::TCP, 179, 40000)), TrapGroup::BgpBfd);
        assert_eq!(TrapGroup::of(PuntReason::ToUs, &l3(proto::UDP, 49152, 3784)), TrapGroup::BgpBfd);
        assert_eq!(TrapGroup::of(PuntReason::ToUs, &l3(proto::UDP, 49152, 4784)), TrapGroup::BgpBfd);
        assert_eq!(TrapGroup::of(PuntReason::ToUs, &l3(proto::ICMP, 0x0800, 0)), TrapGroup::Ip2me);
        assert_eq!(TrapGroup::of(PuntReason::TtlExpired, &any), TrapGroup::TtlError);
        assert_eq!(TrapGroup::of(PuntReason::NeighbourMiss, &any), TrapGroup::NeighMiss);
        assert_eq!(TrapGroup::of(PuntReason::MtuExceeded, &any), TrapGroup::Mtu);
        assert_eq!(TrapGroup::of(PuntReason::NoRoute, &any), TrapGroup::Default);
    }

    #[test]
    fn zero_rate_passes_nothing_and_groups_and_ports_are_apart() {
        let mut l = PuntLimiter::new([0, 100, 100, 100, 100, 100, 100], 1, 2, HZ, 0);
        assert!(!l.admit(0, TrapGroup::ArpNd, 0));
        assert!(!l.admit(1, TrapGroup::ArpNd, HZ));
        // Exhaust port 0's ip2me: its other groups, and port 1's ip2me, are untouched.
        let passed = (0..1000).filter(|_| l.admit(0, TrapGroup::Ip2me, 10)).count();
        assert_eq!(passed, 10, "a bucket of a tenth of a second (min 8)");
        assert!(l.admit(0, TrapGroup::BgpBfd, 10));
        assert!(l.admit(0, TrapGroup::TtlError, 10));
        assert_eq!((0..1000).filter(|_| l.admit(1, TrapGroup::Ip2me, 10)).count(), 10);
        assert!(!l.admit(2, TrapGroup::Ip2me, 10), "no such port");
    }

    proptest! {
        /// Offered far more than the rate for a few seconds at random times, a bucket
        /// passes the rate × time plus at most its depth, and no less than the rate × time
        /// less one packet (it never starves a group that is within its rate).
        #[test]
        fn flood_is_held_to_the_rate(rate in 1u32..4_000, share in 1u32..4, steps in 200usize..2000, seed: u64) {
            let mut rates = [0; TrapGroup::ALL.len()];
            rates[TrapGroup::Ip2me.index()] = rate;
            let mut l = PuntLimiter::new(rates, share, 1, HZ, 0);
            let per = u64::from(rate).div_ceil(u64::from(share));
            let mut x = seed | 1;
            let mut now = 0u64;
            let mut passed = 0u64;
            for _ in 0..steps {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                now += x % (HZ / 500);
                // Ten packets offered at every step: far above any rate tried here.
                for _ in 0..10 { passed += u64::from(l.admit(0, TrapGroup::Ip2me, now)); }
            }
            let depth = (per / 10).max(8);
            let allowed = (u128::from(now) * u128::from(per) / u128::from(HZ)) as u64;
            prop_assert!(passed <= allowed + depth, "passed {} > {} + {}", passed, allowed, depth);
            // A step lasts up to 2 ms: at most 8 tokens at these rates, 10 offered.
            prop_assert!(passed + 1 >= allowed, "passed {} < {}", passed, allowed);
        }
    }
}
