//! WRED and ECN marking at dequeue (SONiC `WRED_PROFILE`, docs/design.md §6).
//!
//! SONiC sets the WRED weight to 0, so the decision uses the instantaneous depth of the
//! egress queue in bytes, `q`, taken when the scheduler hands the packet to the TX ring
//! (dequeue marking, as sonic-mgmt's `test_dequeue_ecn` expects):
//!
//! ```text
//! q <  min          never selected
//! q >= max          always selected
//! min <= q < max    selected with probability (q − min)/(max − min) × P/100
//! ```
//!
//! A selected packet that is ECT(0)/ECT(1) is marked CE when the profile marks green
//! (`ecn` names green); an already-CE packet is left as it is (RFC 3168 §5). A selected
//! Not-ECT (or non-IP) packet, or any selected packet when the profile does not mark, is
//! dropped when `wred_green_enable` is set — but only on a lossy queue: a lossless queue
//! never drops for WRED (PFC protects it; dropping would defeat the lossless class), its
//! Not-ECT packets pass. Without a policer every packet is green, so only the green
//! fields act; the yellow/red ones are accepted and validated for compatibility.
//!
//! Pure code: the random number is an argument ([`Rng`] supplies it, one per lcore).

use crate::wire::{ecn, parse, Ipv4Packet, Ipv6Packet, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// A resolved WRED/ECN profile (green colour only: there is no policer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WredProfile {
    /// `green_min_threshold`, bytes.
    pub min_bytes: u64,
    /// `green_max_threshold`, bytes (≥ min).
    pub max_bytes: u64,
    /// `green_drop_probability`, percent 0..=100 (P at max).
    pub probability_pct: u8,
    /// `ecn` marks green packets (ecn_green, ecn_green_yellow, ecn_green_red, ecn_all).
    pub mark: bool,
    /// `wred_green_enable`: selected packets that are not marked are dropped (lossy only).
    pub drop: bool,
}

/// What to do with a packet at dequeue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WredAction {
    /// Unchanged.
    Pass,
    /// Marked CE (the frame was rewritten).
    Marked,
    /// Drop it (counted as `wred_dropped`).
    Drop,
}

impl WredProfile {
    /// Whether a packet at queue depth `depth` is selected, given a uniform `r`.
    #[inline]
    pub fn selected(&self, depth: u64, r: u32) -> bool {
        if depth < self.min_bytes {
            return false;
        }
        if depth >= self.max_bytes {
            return true;
        }
        // P(select) = (depth − min)/(max − min) · P/100, compared in 32-bit fixed point.
        let num = (u128::from(depth - self.min_bytes) * u128::from(self.probability_pct)) << 32;
        let den = u128::from(self.max_bytes - self.min_bytes) * 100;
        u128::from(r) < num / den
    }

    /// The decision for `frame` on a queue at `depth` bytes; marks the frame in place.
    /// `lossless`: the queue belongs to a lossless class (never dropped by WRED).
    pub fn apply(&self, frame: &mut [u8], depth: u64, lossless: bool, r: u32) -> WredAction {
        if !self.selected(depth, r) {
            return WredAction::Pass;
        }
        if self.mark {
            match mark_ce(frame) {
                Mark::Marked => return WredAction::Marked,
                // Already congestion-experienced: nothing to add, nothing to drop.
                Mark::AlreadyCe => return WredAction::Pass,
                Mark::NotEct => {}
            }
        }
        if self.drop && !lossless {
            WredAction::Drop
        } else {
            WredAction::Pass
        }
    }
}

/// The result of [`mark_ce`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// ECT(0)/ECT(1) rewritten to CE.
    Marked,
    /// It was CE already.
    AlreadyCe,
    /// Not-ECT, not IP, or unreadable: left alone.
    NotEct,
}

/// Sets CE on an ECN-capable IPv4/IPv6 packet (untagged or 802.1Q-tagged), keeping the
/// IPv4 header checksum valid (RFC 1624 incremental update); changes nothing else.
pub fn mark_ce(frame: &mut [u8]) -> Mark {
    let Ok(p) = parse(frame) else { return Mark::NotEct };
    match p.ecn {
        None | Some(ecn::NOT_ECT) => return Mark::NotEct,
        Some(ecn::CE) => return Mark::AlreadyCe,
        Some(_) => {}
    }
    let Some(l3) = frame.get_mut(p.l3_offset..) else { return Mark::NotEct };
    match p.ethertype {
        ETHERTYPE_IPV4 => match Ipv4Packet::new_checked(l3) {
            Ok(mut ip) => ip.set_ecn(ecn::CE),
            Err(_) => return Mark::NotEct,
        },
        ETHERTYPE_IPV6 => match Ipv6Packet::new_checked(l3) {
            Ok(mut ip) => ip.set_ecn(ecn::CE),
            Err(_) => return Mark::NotEct,
        },
        _ => return Mark::NotEct,
    }
    Mark::Marked
}

/// A per-lcore xorshift64* generator: a few instructions, no syscall, seeded from the TSC
/// (or from the config, for reproducible tests).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // xorshift must not start at 0; mix the seed so nearby seeds diverge at once.
        let s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        Rng(if s == 0 { 1 } else { s })
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4_checksum;
    use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest};

    fn profile(min: u64, max: u64, p: u8) -> WredProfile {
        WredProfile { min_bytes: min, max_bytes: max, probability_pct: p, mark: true, drop: true }
    }

    /// An untagged (or tagged) IPv4 frame with TOS `tos`, valid header checksum.
    fn v4(tos: u8, tagged: bool, len: usize) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
        if tagged {
            f.extend_from_slice(&[0x81, 0x00, 0x60, 0x0a]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let l3 = f.len();
        let total = (len.max(l3 + 20) - l3) as u16;
        let [t0, t1] = total.to_be_bytes();
        let mut h = [0x45, tos, t0, t1, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        let c = ipv4_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&h);
        f.resize(l3 + total as usize, 0xab);
        f
    }

    fn v6(tc: u8) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x86, 0xdd];
        f.extend_from_slice(&[0x60 | (tc >> 4), tc << 4, 0, 0, 0, 0, 17, 64]);
        f.resize(14 + 40 + 8, 0x11);
        f
    }

    #[test]
    fn below_min_never_at_max_always() {
        let p = profile(50_000, 51_000, 100);
        assert!(!p.selected(49_999, 0));
        assert!(p.selected(51_000, u32::MAX));
        assert!(p.selected(1 << 40, u32::MAX));
        // P = 0: in between never, at max still always (RED's hard limit).
        let z = profile(1000, 2000, 0);
        assert!(!z.selected(1999, 0));
        assert!(z.selected(2000, u32::MAX));
    }

    #[test]
    fn probability_is_linear_between_min_and_max() {
        let p = profile(0, 1000, 50);
        // depth 500: P = 0.5 · 0.5 = 0.25 → r < 2^30 selected.
        assert!(p.selected(500, (1 << 30) - 1));
        assert!(!p.selected(500, 1 << 30));
        let mut rng = Rng::new(7);
        let n = 200_000;
        let hits = (0..n).filter(|_| p.selected(800, rng.next_u32())).count() as f64 / n as f64;
        assert!((hits - 0.40).abs() < 0.01, "{hits}");
    }

    #[test]
    fn marks_ect_v4_tagged_and_v6_with_valid_checksum() {
        for tagged in [false, true] {
            let mut f = v4((46 << 2) | ecn::ECT0, tagged, 100);
            assert_eq!(mark_ce(&mut f), Mark::Marked);
            let l3 = if tagged { 18 } else { 14 };
            assert_eq!(f[l3 + 1], (46 << 2) | ecn::CE);
            assert_eq!(ipv4_checksum(&f[l3..l3 + 20]), 0, "checksum verifies");
            assert_eq!(mark_ce(&mut f), Mark::AlreadyCe);
        }
        let mut f = v6((26 << 2) | ecn::ECT1);
        assert_eq!(mark_ce(&mut f), Mark::Marked);
        assert_eq!(crate::wire::parse(&f).unwrap().ecn, Some(ecn::CE));
        assert_eq!(crate::wire::parse(&f).unwrap().dscp, Some(26));
        let mut n = v4(46 << 2, false, 64);
        assert_eq!(mark_ce(&mut n), Mark::NotEct);
        let mut arp = vec![0xff; 60];
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert_eq!(mark_ce(&mut arp), Mark::NotEct);
    }

    #[test]
    fn not_ect_dropped_on_lossy_never_on_lossless() {
        let p = profile(0, 1, 100);
        let mut f = v4(0, false, 64);
        assert_eq!(p.apply(&mut f, 10, false, 0), WredAction::Drop);
        assert_eq!(p.apply(&mut f, 10, true, 0), WredAction::Pass);
        let mut e = v4(ecn::ECT0, false, 64);
        assert_eq!(p.apply(&mut e, 10, true, 0), WredAction::Marked);
        // A profile that does not mark drops ECT packets too (lossy only).
        let nomark = WredProfile { mark: false, ..p };
        let mut e = v4(ecn::ECT0, false, 64);
        assert_eq!(nomark.apply(&mut e, 10, false, 0), WredAction::Drop);
        assert_eq!(e, v4(ecn::ECT0, false, 64));
        // Marking only (wred_green_enable false): Not-ECT passes even on lossy.
        let markonly = WredProfile { drop: false, ..p };
        assert_eq!(markonly.apply(&mut f, 10, false, 0), WredAction::Pass);
    }

    proptest! {
        /// Marking changes the ECN bits (to CE) and the IPv4 checksum, nothing else, and
        /// the checksum stays valid.
        #[test]
        fn marking_changes_only_ecn_and_checksum(
            dscp in 0u8..64, e in 0u8..4, tagged: bool, len in 60usize..200, v6_: bool,
            body in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut f = if v6_ { v6((dscp << 2) | e) } else { v4((dscp << 2) | e, tagged, len) };
            let n = f.len();
            for (i, b) in body.iter().enumerate() {
                // Payload bytes beyond the IP header are arbitrary.
                let at = n.saturating_sub(1 + i);
                if at >= 14 + 40 + 4 { f[at] = *b; }
            }
            let orig = f.clone();
            let r = mark_ce(&mut f);
            let before = crate::wire::parse(&orig).unwrap();
            let after = crate::wire::parse(&f).unwrap();
            prop_assert_eq!(after.dscp, before.dscp);
            let l3 = before.l3_offset;
            match r {
                Mark::Marked => prop_assert!(e == ecn::ECT0 || e == ecn::ECT1),
                Mark::AlreadyCe => prop_assert_eq!(e, ecn::CE),
                Mark::NotEct => prop_assert_eq!(e, ecn::NOT_ECT),
            }
            prop_assert_eq!(after.ecn, Some(if e == ecn::NOT_ECT { e } else { ecn::CE }));
            for i in 0..n {
                let ecn_byte = if v6_ { i == l3 || i == l3 + 1 } else { i == l3 + 1 };
                let csum = !v6_ && (i == l3 + 10 || i == l3 + 11);
                if !ecn_byte && !csum {
                    prop_assert_eq!(f[i], orig[i], "byte {} changed", i);
                }
            }
            if !v6_ {
                prop_assert_eq!(ipv4_checksum(&f[l3..l3 + 20]), 0);
            }
        }
    }
}
