//! The ECMP hash: a seeded hash of the 5-tuple (addresses, protocol, L4 ports), so one flow
//! always takes one path (RoCEv2 flows differ in their UDP source port) and two switches
//! with different seeds split the same flows independently (no polarisation across tiers).
//!
//! The mixing is MurmurHash3's 32-bit body and finaliser (public domain, Austin Appleby):
//! 4 words for IPv4, 10 for IPv6, a few ns, full avalanche.

use crate::wire::{IpPair, L3Header, MacAddr};

#[inline(always)]
fn mix(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593);
    (h ^ k).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

#[inline(always)]
fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[inline(always)]
fn words(h: u32, b: &[u8]) -> u32 {
    b.chunks_exact(4).fold(h, |h, c| mix(h, u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
}

/// The flow hash of a packet: addresses, protocol and (TCP/UDP/SCTP, not a later fragment)
/// the two ports, mixed with `seed`.
#[inline]
pub fn flow_hash(l3: &L3Header, seed: u32) -> u32 {
    let ports = if l3.has_ports() { (u32::from(l3.l4_a) << 16) | u32::from(l3.l4_b) } else { 0 };
    let h = match &l3.addrs {
        IpPair::V4 { src, dst } => words(words(seed, src), dst),
        IpPair::V6 { src, dst } => words(words(seed, src), dst),
    };
    fmix(mix(mix(h, u32::from(l3.proto)), ports))
}

/// Member `0..n` for `hash` (multiply-shift: no division, uniform for a uniform hash).
#[inline]
pub fn pick(hash: u32, n: u32) -> u32 {
    ((u64::from(hash) * u64::from(n)) >> 32) as u32
}

/// The default `[switch] ecmp_seed`: derived from a MAC of the switch (the first port's),
/// so two switches differ without anyone choosing seeds.
pub fn seed_from_mac(mac: MacAddr) -> u32 {
    let m = mac.0;
    fmix(words(0x5eed_0001, &[m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> L3Header {
        L3Header {
            addrs: IpPair::V4 { src, dst },
            proto: crate::wire::proto::UDP,
            ttl: 64,
            len: 100,
            l4_a: sport,
            l4_b: dport,
            fragment: false,
            checksum_ok: true,
            options: false,
        }
    }

    proptest! {
        /// A flow always picks the same member: the hash depends on the 5-tuple and the
        /// seed only (not on TTL, length, or anything else that changes along a flow).
        #[test]
        fn a_flow_keeps_its_member(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, seed: u32,
                                   ttl: u8, len: u16, n in 1u32..=64) {
            let a = v4(src, dst, sport, dport);
            let b = L3Header { ttl, len, ..a };
            prop_assert_eq!(pick(flow_hash(&a, seed), n), pick(flow_hash(&b, seed), n));
            prop_assert!(pick(flow_hash(&a, seed), n) < n);
        }
    }

    /// RoCEv2 flows between two hosts differ only in the UDP source port: 4096 of them over
    /// n members put every member within 25 % of the mean (n ≤ 16), for several seeds.
    #[test]
    fn members_spread_within_a_bound() {
        for seed in [0u32, 1, 0xdead_beef, seed_from_mac(MacAddr([2, 0, 0, 0, 0, 1]))] {
            for n in [2u32, 3, 4, 8, 16] {
                let mut count = vec![0u32; n as usize];
                for sport in 0..4096u16 {
                    let l3 = v4([10, 0, 0, 1], [10, 0, 1, 1], 49152 + sport, 4791);
                    count[pick(flow_hash(&l3, seed), n) as usize] += 1;
                }
                let mean = 4096.0 / f64::from(n);
                for c in &count {
                    let dev = (f64::from(*c) - mean).abs() / mean;
                    assert!(dev < 0.25, "seed {seed:#x} n {n}: {count:?}");
                }
            }
        }
    }

    /// Two tiers, two-way ECMP each: the flows the first switch sends to member 0 are split
    /// about evenly by the second (seeds from different MACs). With equal seeds they all
    /// land on one member: the polarisation the seed prevents.
    #[test]
    fn different_seeds_do_not_polarise() {
        let (s1, s2) = (seed_from_mac(MacAddr([2, 0, 0, 0, 1, 0])), seed_from_mac(MacAddr([2, 0, 0, 0, 2, 0])));
        let flows: Vec<L3Header> = (0..4096u16).map(|p| v4([10, 0, 0, 1], [10, 0, 1, 1], p, 4791)).collect();
        let tier1: Vec<&L3Header> = flows.iter().filter(|f| pick(flow_hash(f, s1), 2) == 0).collect();
        let second = tier1.iter().filter(|f| pick(flow_hash(f, s2), 2) == 0).count() as f64;
        let share = second / tier1.len() as f64;
        assert!((0.4..0.6).contains(&share), "share {share}");
        let same = tier1.iter().filter(|f| pick(flow_hash(f, s1), 2) == 0).count();
        assert_eq!(same, tier1.len());
    }

    #[test]
    fn v6_and_fragments() {
        let a = L3Header {
            addrs: IpPair::V6 { src: [1; 16], dst: [2; 16] },
            proto: crate::wire::proto::UDP,
            ttl: 64,
            len: 100,
            l4_a: 1,
            l4_b: 2,
            fragment: false,
            checksum_ok: true,
            options: false,
        };
        let b = L3Header { l4_a: 3, ..a };
        assert_ne!(flow_hash(&a, 7), flow_hash(&b, 7));
        // Fragments of one datagram hash alike whatever their first bytes.
        let f1 = L3Header { fragment: true, ..v4([1; 4], [2; 4], 5, 6) };
        let f2 = L3Header { fragment: true, l4_a: 0, l4_b: 0, ..f1 };
        assert_eq!(flow_hash(&f1, 9), flow_hash(&f2, 9));
    }
}
