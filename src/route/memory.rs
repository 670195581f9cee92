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

/// Bytes of EAL memory the FIBs take: the active and the standby copy of each family.
pub fn tables_bytes(v4_routes: u32) -> u64 {
    let v4 = TBL24 + TBL8_GROUP * (u64::from(V4_TBL8) + 1) + RIB_NODE * u64::from(v4_routes);
    let v6 = TBL24 + TBL8_GROUP * (u64::from(V6_TBL8) + 1) + RIB_NODE * u64::from(V6_ROUTES);
    2 * (v4 + v6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_near_what_dpdk_took() {
        let mib = |n| tables_bytes(n) >> 20;
        // Measured: 333 MiB at the default size, 228 MiB at 1024 (a representor included).
        assert!((320..=340).contains(&mib(DEFAULT_V4_ROUTES)), "{}", mib(DEFAULT_V4_ROUTES));
        assert!((215..=235).contains(&mib(1024)), "{}", mib(1024));
        assert!(mib(262_144) > mib(DEFAULT_V4_ROUTES) + 100);
    }
}
