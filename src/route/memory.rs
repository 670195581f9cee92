//! What the routing tables take from EAL's memory, from their sizes: `check-config` and
//! `run` compare it with `-m` before EAL starts (docs/routing.md, "Memory").

/// IPv4 FIB size without `[control_plane] max_ipv4_routes`: 128 Ki prefixes.
pub const DEFAULT_V4_ROUTES: u32 = 131_072;
/// IPv4 tbl8 groups (/24s that hold longer prefixes).
pub const V4_TBL8: u32 = 8192;
/// IPv6 prefixes.
pub const V6_ROUTES: u32 = 65_536;
/// IPv6 tbl8 groups (the most 2-byte entries can index).
pub const V6_TBL8: u32 = 32_767;

/// `rte_fib`'s DIR24_8 and `rte_fib6`'s TRIE each have a 2^24-entry first level of 2-byte
/// entries, and tbl8 groups of 256 (one more group than asked).
const TBL24: u64 = (1 << 24) * 2;
const TBL8_GROUP: u64 = 256 * 2;
/// One `rte_rib`/`rte_rib6` node with its mempool's overhead, as DPDK 22.11 allocates them
/// (measured with `/eal/heap_info`: a routed switch took 228 MiB more than the same switch
/// without routing at 1024 IPv4 routes, 333 MiB at 131 072).
const RIB_NODE: u64 = 424;

/// tbl8 groups DPDK 22.11's trie reserves for a /48 with no covering prefix longer than
/// /24 (`rsvd_tbl8s` in lib/fib/trie.c: one per byte past the covering prefix's, 48 − 24
/// bits = 3), however many groups its neighbours already use; an add past the pool's
/// size is refused (ENOSPC) even when most groups are free. A /64 reserves 5, a /128
/// under its /64 8 (docs/routing.md "IPv6 table size").
pub const V6_TBL8_PER_ROUTE: u32 = 3;

/// IPv6 tbl8 groups for `[control_plane] max_ipv6_routes` = `routes`: each a /48 at worst
/// ([`V6_TBL8_PER_ROUTE`]), and one more (DPDK refuses an add that would fill the pool
/// exactly).
pub fn v6_tbl8_for(routes: u32) -> u32 {
    routes.saturating_mul(V6_TBL8_PER_ROUTE).saturating_add(1)
}

/// Bytes of EAL memory the FIBs take: the active and the standby copy of each family, the
/// IPv6 table sized by `max_ipv6_routes` when set (4-byte entries past 32 767 groups).
pub fn tables_bytes(v4_routes: u32, v6_routes: Option<u32>) -> u64 {
    let v4 = TBL24 + TBL8_GROUP * (u64::from(V4_TBL8) + 1) + RIB_NODE * u64::from(v4_routes);
    let (routes, tbl8) = v6_routes.map_or((V6_ROUTES, V6_TBL8), |n| (n, v6_tbl8_for(n)));
    let wide = if tbl8 > V6_TBL8 { 2 } else { 1 };
    let v6 = wide * (TBL24 + TBL8_GROUP * (u64::from(tbl8) + 1)) + RIB_NODE * u64::from(routes);
    2 * (v4 + v6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_near_what_dpdk_took() {
        let mib = |n| tables_bytes(n, None) >> 20;
        // Measured: 333 MiB at the default size, 228 MiB at 1024 (a representor included).
        assert!((320..=340).contains(&mib(DEFAULT_V4_ROUTES)), "{}", mib(DEFAULT_V4_ROUTES));
        assert!((215..=235).contains(&mib(1024)), "{}", mib(1024));
        assert!(mib(262_144) > mib(DEFAULT_V4_ROUTES) + 100);
        // max_ipv6_routes = 65 536 (the scale bench): both IPv6 copies measured 566 MiB from
        // DPDK's heap; the default's two are ~149 MiB.
        let extra = (tables_bytes(DEFAULT_V4_ROUTES, Some(65_536)) - tables_bytes(DEFAULT_V4_ROUTES, None)) >> 20;
        assert!((400..=430).contains(&extra), "{extra}");
    }
}
