//! What a prefix in the LPM table points at, encoded in the table's value (≤ 15 bits, so
//! every DPDK table fits it: `rte_fib6` with 2-byte entries keeps 15).

/// Next-hop ids are `0..MAX_NEXTHOPS`: as many as 15-bit values leave beside the groups
/// (every mirrored neighbour is one, [`crate::route::NeighbourLimits`]: 16 Ki of them and
/// 12 Ki gateways).
pub const MAX_NEXTHOPS: usize = 28_656;
/// ECMP group ids are `0..MAX_GROUPS`.
pub const MAX_GROUPS: usize = 4096;
/// Most members an ECMP group has (weights are expanded into repeated members up to this).
pub const MAX_PATHS: usize = 64;

/// The table value that means "no route" (every DPDK table here reports a miss as 0).
pub const NO_ROUTE: u32 = 0;
const FIRST_NH: u32 = 16;
const FIRST_GROUP: u32 = FIRST_NH + MAX_NEXTHOPS as u32;
/// The largest value [`Target::encode`] produces.
pub const MAX_VALUE: u32 = FIRST_GROUP + MAX_GROUPS as u32 - 1;

/// Where a prefix leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// One of the switch's own addresses: punted `to_us`.
    Local,
    /// A connected subnet whose host has no resolved neighbour entry: punted
    /// `neighbour_miss` (the kernel resolves it and the host route follows).
    Glean,
    /// A kernel blackhole route: dropped.
    Blackhole,
    /// The kernel answers (unreachable/prohibit routes): punted `no_route`.
    Kernel,
    /// A route whose every next hop leaves through an interface that is not a switch port
    /// (the management interface, a dummy, `lo`): dropped, counted `route_non_port`. Punted,
    /// the kernel would forward it there, off the fabric (onto the management network).
    NonPort,
    /// One next hop (id into the next-hop table).
    NextHop(u16),
    /// An ECMP group (id into the group table).
    Group(u16),
}

impl Target {
    /// The LPM value (1..=[`MAX_VALUE`]).
    pub const fn encode(self) -> u32 {
        match self {
            Target::Local => 1,
            Target::Glean => 2,
            Target::Blackhole => 3,
            Target::Kernel => 4,
            Target::NonPort => 5,
            Target::NextHop(n) => FIRST_NH + n as u32,
            Target::Group(g) => FIRST_GROUP + g as u32,
        }
    }

    /// Back from an LPM value; `None` for [`NO_ROUTE`] and values no target encodes to.
    #[inline]
    pub const fn decode(v: u32) -> Option<Target> {
        match v {
            1 => Some(Target::Local),
            2 => Some(Target::Glean),
            3 => Some(Target::Blackhole),
            4 => Some(Target::Kernel),
            5 => Some(Target::NonPort),
            v if v >= FIRST_NH && v < FIRST_GROUP => Some(Target::NextHop((v - FIRST_NH) as u16)),
            v if v >= FIRST_GROUP && v <= MAX_VALUE => Some(Target::Group((v - FIRST_GROUP) as u16)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_range() {
        let all = [
            Target::Local,
            Target::Glean,
            Target::Blackhole,
            Target::Kernel,
            Target::NonPort,
            Target::NextHop(0),
            Target::NextHop(MAX_NEXTHOPS as u16 - 1),
            Target::Group(0),
            Target::Group(MAX_GROUPS as u16 - 1),
        ];
        for t in all {
            let v = t.encode();
            assert!(v > NO_ROUTE && v <= MAX_VALUE && v < 1 << 15, "{t:?} -> {v}");
            assert_eq!(Target::decode(v), Some(t));
        }
        assert_eq!(Target::decode(NO_ROUTE), None);
        assert_eq!(Target::decode(6), None);
        assert_eq!(Target::decode(MAX_VALUE + 1), None);
    }
}
