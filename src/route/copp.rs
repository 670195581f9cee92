//! The punt rate limit (SONiC's COPP idea: control-plane policing): per class of
//! [`PuntReason`], a token bucket in packets, so that a flood to the switch's address cannot
//! starve ARP/ND, and neither can starve the dataplane. One limiter per worker lcore (no
//! sharing, no atomics): each polices its share of the configured rate. Pure: time is the
//! caller's TSC.

use super::decide::PuntReason;

/// The classes, in `rates` order: ARP/ND, to the switch, exceptions.
pub const CLASSES: [&str; 3] = ["arp_nd", "to_us", "exceptions"];

impl PuntReason {
    /// The rate-limit class of the reason (index into [`CLASSES`]).
    #[inline]
    pub const fn class(self) -> usize {
        match self {
            PuntReason::Arp | PuntReason::Nd => 0,
            PuntReason::ToUs => 1,
            PuntReason::TtlExpired
            | PuntReason::NoRoute
            | PuntReason::NeighbourMiss
            | PuntReason::MtuExceeded
            | PuntReason::IpOptions => 2,
        }
    }
}

/// One token bucket. Tokens are counted in packet·ticks (one packet = `hz` units), so a
/// rate in packets per second adds `rate` units per TSC tick with integers only.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Packets per second (0: nothing passes).
    rate: u64,
    /// Bucket size in units (burst × hz).
    depth: u128,
    tokens: u128,
    last: u64,
}

impl Bucket {
    fn new(rate: u64, burst: u64, hz: u64, now: u64) -> Bucket {
        let depth = u128::from(burst) * u128::from(hz);
        Bucket { rate, depth, tokens: depth, last: now }
    }

    #[inline]
    fn admit(&mut self, now: u64, hz: u64) -> bool {
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

/// A worker's punt limiter: one bucket per class.
#[derive(Debug, Clone)]
pub struct PuntLimiter {
    buckets: [Bucket; 3],
    hz: u64,
}

impl PuntLimiter {
    /// `rates[c]`: packets per second of class `c` for the whole switch, of which this
    /// limiter polices `1/share` (rounded up: `share` workers never pass less than the rate).
    /// Each bucket holds a tenth of a second of its rate (at least 8 packets): a burst of ARP
    /// after a link flap passes, a flood is held to the rate within 100 ms.
    pub fn new(rates: [u32; 3], share: u32, tsc_hz: u64, now: u64) -> PuntLimiter {
        let share = u64::from(share.max(1));
        let hz = tsc_hz.max(1);
        let buckets = rates.map(|r| {
            let rate = u64::from(r).div_ceil(share);
            let burst = if rate == 0 { 0 } else { (rate / 10).max(8) };
            Bucket::new(rate, burst, hz, now)
        });
        PuntLimiter { buckets, hz }
    }

    /// May a packet punted for `why` go up at `now` (TSC)? Takes a token if so.
    #[inline]
    pub fn admit(&mut self, why: PuntReason, now: u64) -> bool {
        self.buckets[why.class()].admit(now, self.hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HZ: u64 = 2_000_000_000;

    #[test]
    fn classes_cover_every_reason() {
        for r in PuntReason::ALL {
            assert!(r.class() < CLASSES.len());
        }
        assert_eq!(PuntReason::Arp.class(), PuntReason::Nd.class());
        assert_ne!(PuntReason::ToUs.class(), PuntReason::NoRoute.class());
    }

    #[test]
    fn zero_rate_passes_nothing_and_classes_are_apart() {
        let mut l = PuntLimiter::new([0, 100, 100], 1, HZ, 0);
        assert!(!l.admit(PuntReason::Arp, 0));
        assert!(!l.admit(PuntReason::Nd, HZ));
        // Exhaust to_us: the exceptions' bucket is untouched.
        let passed = (0..1000).filter(|_| l.admit(PuntReason::ToUs, 10)).count();
        assert_eq!(passed, 10, "a bucket of a tenth of a second (min 8)");
        assert!(l.admit(PuntReason::TtlExpired, 10));
    }

    proptest! {
        /// Offered far more than the rate for a few seconds at random times, a bucket
        /// passes the rate × time plus at most its depth, and no less than the rate × time
        /// less one packet (it never starves a class that is within its rate).
        #[test]
        fn flood_is_held_to_the_rate(rate in 1u32..4_000, share in 1u32..4, steps in 200usize..2000, seed: u64) {
            let mut l = PuntLimiter::new([0, rate, 0], share, HZ, 0);
            let per = u64::from(rate).div_ceil(u64::from(share));
            let mut x = seed | 1;
            let mut now = 0u64;
            let mut passed = 0u64;
            for _ in 0..steps {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                now += x % (HZ / 500);
                // Ten packets offered at every step: far above any rate tried here.
                for _ in 0..10 { passed += u64::from(l.admit(PuntReason::ToUs, now)); }
            }
            let depth = (per / 10).max(8);
            let allowed = (u128::from(now) * u128::from(per) / u128::from(HZ)) as u64;
            prop_assert!(passed <= allowed + depth, "passed {} > {} + {}", passed, allowed, depth);
            // A step lasts up to 2 ms: at most 8 tokens at these rates, 10 offered.
            prop_assert!(passed + 1 >= allowed, "passed {} < {}", passed, allowed);
        }
    }
}
