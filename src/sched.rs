//! Egress scheduling for one port: strict priority and DWRR (ETS) over the traffic classes
//! that are eligible (non-empty and not paused at `now`), within a token-bucket shaper
//! whose clock is the TSC. Pure code: the caller says which TCs are eligible and how long
//! their head packets are; the scheduler says which TC goes next.

/// How a traffic class is scheduled (SONiC `SCHEDULER|type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcSched {
    /// Served before every DWRR class; among strict classes the higher TC wins
    /// (802.1Q: priority 7 is the highest).
    Strict,
    /// Deficit weighted round robin with this weight (1..=100), in bytes.
    Dwrr(u32),
}

#[derive(Debug, Clone)]
pub struct Scheduler {
    kinds: [TcSched; 8],
    quantum: [u32; 8],
    deficit: [u32; 8],
    /// DWRR round pointer and whether its quantum was already granted on this visit.
    cur: usize,
    granted: bool,
    strict_mask: u8,
    dwrr_mask: u8,
}

impl Scheduler {
    /// `max_frame`: the longest frame that can reach the port (bytes, as `head_len`
    /// counts them). A DWRR class's quantum is that frame × its weight over the lightest
    /// DWRR class's weight: every visit can send at least the head packet (DRR's O(1)
    /// condition), and classes interleave at frame granularity (equal weights: frame by
    /// frame) rather than in runs of weight × 9 KB, so a lossless class does not wait
    /// ~100 KB behind a lossy one.
    pub fn new(kinds: [TcSched; 8], max_frame: u32) -> Scheduler {
        let unit = u64::from(max_frame.max(crate::wire::MIN_FRAME_LEN as u32));
        // The lightest DWRR class gets one frame a visit, the others in proportion.
        let w_min =
            kinds.iter().filter_map(|k| if let TcSched::Dwrr(w) = *k { Some(w.clamp(1, 100)) } else { None }).min();
        let mut quantum = [0; 8];
        let mut strict_mask = 0u8;
        let mut dwrr_mask = 0u8;
        for (tc, k) in kinds.iter().enumerate() {
            match *k {
                TcSched::Strict => strict_mask |= 1 << tc,
                TcSched::Dwrr(w) => {
                    dwrr_mask |= 1 << tc;
                    quantum[tc] = (u64::from(w.clamp(1, 100)) * unit).div_ceil(u64::from(w_min.unwrap_or(1))) as u32;
                }
            }
        }
        Scheduler { kinds, quantum, deficit: [0; 8], cur: 0, granted: false, strict_mask, dwrr_mask }
    }

    /// All TCs DWRR with equal weight, jumbo frames.
    pub fn equal() -> Scheduler {
        Scheduler::new([TcSched::Dwrr(1); 8], crate::wire::max_frame_len(9216))
    }

    pub fn kinds(&self) -> &[TcSched; 8] {
        &self.kinds
    }

    /// The next TC to send from, or None when nothing is eligible. `eligible` bit n = TC n
    /// has a packet and is not paused; `head_len(n)` is the length of its head packet.
    /// The caller must send that packet (or call again with the TC marked ineligible).
    #[inline]
    pub fn pick(&mut self, eligible: u8, head_len: impl Fn(usize) -> u32) -> Option<usize> {
        let strict = eligible & self.strict_mask;
        if strict != 0 {
            return Some(7 - strict.leading_zeros() as usize);
        }
        let dwrr = eligible & self.dwrr_mask;
        if dwrr == 0 {
            // Idle classes keep no credit (DRR: deficit resets when a queue empties).
            self.deficit = [0; 8];
            return None;
        }
        // At most two passes: the quantum is at least one maximum frame.
        for _ in 0..17 {
            let tc = self.cur;
            if dwrr & (1 << tc) != 0 {
                if !self.granted {
                    self.deficit[tc] = self.deficit[tc].saturating_add(self.quantum[tc]);
                    self.granted = true;
                }
                let len = head_len(tc);
                if len <= self.deficit[tc] {
                    self.deficit[tc] -= len;
                    return Some(tc);
                }
            } else {
                self.deficit[tc] = 0;
            }
            self.cur = (self.cur + 1) & 7;
            self.granted = false;
        }
        // Unreachable with sane lengths; serve the first eligible class rather than stall.
        Some(dwrr.trailing_zeros() as usize)
    }
}

impl Scheduler {
    /// After `pick` chose `tc` and its head packet went: how many more bytes of `tc`'s
    /// next packets `pick` would choose `tc` for, one after the other, with the eligible
    /// set unchanged or smaller by other classes. Packets go while their running sum fits
    /// (then [`Scheduler::spend`] that sum): the TX side sends a run of one class without
    /// a pick per packet, with exactly `pick`'s choices. Unbounded for a strict class (the
    /// highest eligible stays the highest while the set only shrinks), the deficit for the
    /// DWRR class being served, else nothing.
    #[inline]
    pub fn grant(&self, tc: usize) -> u64 {
        let bit = 1u8 << (tc & 7);
        if self.strict_mask & bit != 0 {
            u64::MAX
        } else if self.dwrr_mask & bit != 0 && self.cur == tc && self.granted {
            u64::from(self.deficit[tc & 7])
        } else {
            0
        }
    }

    /// Charge `bytes` sent under [`Scheduler::grant`].
    #[inline]
    pub fn spend(&mut self, tc: usize, bytes: u64) {
        if self.dwrr_mask & (1 << (tc & 7)) != 0 {
            self.deficit[tc & 7] -= bytes.min(u64::from(self.deficit[tc & 7])) as u32;
        }
    }

    /// Give back the credit of a packet `pick` chose that could not be sent (e.g. the
    /// shaper had no tokens), so the weights hold however the loop is timed.
    #[inline]
    pub fn refund(&mut self, tc: usize, len: u32) {
        if self.dwrr_mask & (1 << (tc & 7)) != 0 {
            self.deficit[tc & 7] = self.deficit[tc & 7].saturating_add(len);
        }
    }
}

/// A token-bucket shaper in TSC ticks. Tokens are bytes in 16.16 fixed point.
#[derive(Debug, Clone)]
pub struct Shaper {
    rate_bps: u64,
    tsc_hz: u64,
    tokens_fp: u64,
    burst_fp: u64,
    last: u64,
}

const FP: u32 = 16;

impl Shaper {
    /// `rate_bps` with a bucket of `burst_bytes`, full at `now`.
    pub fn new(rate_bps: u64, burst_bytes: u32, tsc_hz: u64, now: u64) -> Shaper {
        let burst_fp = (burst_bytes.max(1) as u64) << FP;
        Shaper { rate_bps: rate_bps.max(1), tsc_hz: tsc_hz.max(1), tokens_fp: burst_fp, burst_fp, last: now }
    }

    /// A default bucket: 2 maximum frames or 2 ms at the rate, whichever is larger (capped
    /// at 4 MiB). The time term keeps the long-run rate exact when the polling lcore is
    /// descheduled for a few milliseconds (oversubscribed cores, virtual machines).
    pub fn default_burst(rate_bps: u64, max_frame: u32) -> u32 {
        let t2ms = rate_bps / 8 / 500;
        (2 * max_frame as u64).max(t2ms.min(4 << 20)).min(u32::MAX as u64) as u32
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Add the tokens earned since the last refill.
    #[inline]
    pub fn refill(&mut self, now: u64) {
        let elapsed = now.saturating_sub(self.last);
        if elapsed == 0 {
            return;
        }
        let add = (elapsed as u128 * self.rate_bps as u128 * (1u128 << FP)) / (8 * self.tsc_hz as u128);
        if add == 0 {
            // Too early to earn a whole fixed-point token: keep `last` so time accrues.
            return;
        }
        self.last = now;
        self.tokens_fp = (self.tokens_fp as u128 + add).min(self.burst_fp as u128) as u64;
    }

    /// Tokens now, in the 16.16 fixed point of [`Shaper::fixed`]: `try_consume` succeeds
    /// for packets while the sum of their `fixed(len)` fits (then `consume_fixed` it).
    #[inline]
    pub fn available_fixed(&self) -> u64 {
        self.tokens_fp
    }

    /// `len` bytes in the bucket's fixed point.
    #[inline]
    pub const fn fixed(len: u32) -> u64 {
        (len as u64) << FP
    }

    /// Take tokens that [`Shaper::available_fixed`] showed.
    #[inline]
    pub fn consume_fixed(&mut self, fp: u64) {
        self.tokens_fp -= fp.min(self.tokens_fp);
    }

    /// Take `len` bytes of tokens if there are enough.
    #[inline]
    pub fn try_consume(&mut self, len: u32) -> bool {
        let need = (len as u64) << FP;
        if self.tokens_fp >= need {
            self.tokens_fp -= need;
            true
        } else {
            false
        }
    }

    /// Whole bytes of tokens available.
    pub fn tokens(&self) -> u64 {
        self.tokens_fp >> FP
    }
}

/// The data a device holds in its TX ring, modelled as drained at the link speed: the
/// device sends at line rate once its own PAUSE handling is off (setup turns NIC flow
/// control off), so bytes handed over minus speed × elapsed is what still waits there.
/// Linux's byte queue limits do the same with completion interrupts; DPDK vdevs and
/// kernel sockets have none that say when a byte left the wire. Data is handed over only
/// while the ring holds at most `limit` bytes (what a PFC frame on the same queue would
/// wait behind); a control frame is counted but never held back.
#[derive(Debug, Clone)]
pub struct InflightLimit {
    line: Shaper,
}

impl InflightLimit {
    /// An empty ring of a link at `speed_bps` that may hold `limit_bytes`.
    pub fn new(speed_bps: u64, limit_bytes: u64, tsc_hz: u64, now: u64) -> InflightLimit {
        InflightLimit { line: Shaper::new(speed_bps, limit_bytes.min(u32::MAX as u64) as u32, tsc_hz, now) }
    }

    /// Let the ring drain until `now`.
    #[inline]
    pub fn drain(&mut self, now: u64) {
        self.line.refill(now);
    }

    /// Whether `len` more bytes of data fit under the limit. An empty ring always takes
    /// one frame, so a limit below the largest frame that reaches the port slows it but
    /// never wedges it.
    #[inline]
    pub fn admits(&self, len: u32) -> bool {
        self.line.tokens_fp >= (len as u64) << FP || self.line.tokens_fp == self.line.burst_fp
    }

    /// `len` bytes handed to the device (data after [`InflightLimit::admits`], or a
    /// control frame, which may exceed the limit by its own size).
    #[inline]
    pub fn sent(&mut self, len: u32) {
        self.line.tokens_fp = self.line.tokens_fp.saturating_sub((len as u64) << FP);
    }

    /// Bytes the model says are still in the ring.
    pub fn inflight(&self) -> u64 {
        (self.line.burst_fp - self.line.tokens_fp) >> FP
    }

    pub fn limit(&self) -> u64 {
        self.line.burst_fp >> FP
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 9216-MTU frame with its 802.1Q header.
    const JUMBO: u32 = 9234;

    /// Two equal DWRR classes (SONiC's default weight 14) loaded with 1000 B frames on a
    /// 1500-MTU port interleave frame by frame (runs of at most two), not in runs of ~130.
    #[test]
    fn equal_dwrr_classes_interleave_at_frame_granularity() {
        let mut s = Scheduler::new([TcSched::Dwrr(14); 8], crate::wire::max_frame_len(1500));
        let (mut last, mut run, mut longest) = (usize::MAX, 0, 0);
        let mut n = [0u32; 8];
        for _ in 0..10_000 {
            let tc = s.pick(0b0001_1000, |_| 1000).unwrap();
            n[tc] += 1;
            run = if tc == last { run + 1 } else { 1 };
            last = tc;
            longest = longest.max(run);
        }
        assert!(longest <= 2, "runs of {longest} frames of one class");
        assert!(n[3].abs_diff(n[4]) <= 2, "{n:?}");
    }

    /// A limit below one frame (1522 B for 1514 B frames, which take 1538 B on the line)
    /// sends one frame whenever the ring is empty: slow, never wedged.
    #[test]
    fn inflight_limit_below_a_frame_sends_one_when_empty() {
        let hz = 1_000_000_000;
        let mut l = InflightLimit::new(10_000_000_000, 1522, hz, 0);
        assert!(l.admits(1538));
        l.sent(1538);
        assert!(!l.admits(1538), "one at a time");
        l.drain(2_000); // 2 µs at 10G: 2500 B left the ring
        assert!(l.admits(1538));
    }

    #[test]
    fn strict_beats_dwrr_and_higher_strict_wins() {
        let mut k = [TcSched::Dwrr(10); 8];
        k[5] = TcSched::Strict;
        k[6] = TcSched::Strict;
        let mut s = Scheduler::new(k, JUMBO);
        assert_eq!(s.pick(0b0110_1001, |_| 64), Some(6));
        assert_eq!(s.pick(0b0010_1001, |_| 64), Some(5));
        assert_eq!(s.pick(0b0000_1001, |_| 64).map(|t| t == 0 || t == 3), Some(true));
        assert_eq!(s.pick(0, |_| 64), None);
    }

    #[test]
    fn dwrr_shares_bytes_by_weight() {
        let mut k = [TcSched::Dwrr(1); 8];
        k[3] = TcSched::Dwrr(30);
        k[4] = TcSched::Dwrr(10);
        let mut s = Scheduler::new(k, JUMBO);
        let mut bytes = [0u64; 8];
        for _ in 0..400_000 {
            let tc = s.pick(0b0001_1000, |tc| if tc == 3 { 1500 } else { 64 }).unwrap();
            bytes[tc] += if tc == 3 { 1500 } else { 64 };
        }
        let ratio = bytes[3] as f64 / bytes[4] as f64;
        assert!((ratio - 3.0).abs() < 0.05, "ratio {ratio}");
    }

    #[test]
    fn refund_keeps_weights_when_sends_are_refused() {
        let mut k = [TcSched::Dwrr(1); 8];
        k[3] = TcSched::Dwrr(3);
        let mut s = Scheduler::new(k, JUMBO);
        let mut bytes = [0u64; 8];
        for i in 0..200_000 {
            let tc = s.pick(0b0001_1001, |_| 1000).unwrap();
            if i % 3 == 0 {
                // Refused (shaper empty): nothing sent, credit given back.
                s.refund(tc, 1000);
                continue;
            }
            bytes[tc] += 1000;
        }
        let r = bytes[3] as f64 / bytes[0] as f64;
        assert!((r - 3.0).abs() < 0.1, "ratio {r}");
    }

    #[test]
    fn ineligible_class_is_skipped() {
        let mut s = Scheduler::equal();
        for _ in 0..100 {
            assert_eq!(s.pick(0b1000_0000, |_| 9000), Some(7));
        }
    }

    #[test]
    fn shaper_holds_rate() {
        let hz = 2_000_000_000u64;
        // 5 Mb/s: 625 000 bytes per second.
        let mut sh = Shaper::new(5_000_000, 3000, hz, 0);
        let mut sent = 0u64;
        let mut now = 0u64;
        while now < hz * 10 {
            sh.refill(now);
            while sh.try_consume(1000) {
                sent += 1000;
            }
            now += 20_000; // 10 µs poll period
        }
        let expected = 625_000 * 10 + 3000;
        assert!((sent as i64 - expected as i64).abs() <= 2000, "sent {sent}, expected about {expected}");
    }

    #[test]
    fn shaper_bucket_caps_burst() {
        let mut sh = Shaper::new(1_000_000_000, 4000, 1_000_000_000, 0);
        sh.refill(1_000_000_000);
        assert_eq!(sh.tokens(), 4000);
    }

    #[test]
    fn inflight_limit_holds_and_drains_at_line_rate() {
        // 10 Gb/s, 1 tick = 1 ns: 1250 bytes drain per µs.
        let hz = 1_000_000_000;
        let mut l = InflightLimit::new(10_000_000_000, 6000, hz, 0);
        let mut handed = 0u64;
        let mut t = 0u64;
        for step in 0..10_000u64 {
            l.drain(t);
            while l.admits(1538) {
                l.sent(1538);
                handed += 1538;
                assert!(l.inflight() <= l.limit(), "step {step}: {} > {}", l.inflight(), l.limit());
            }
            t += 97;
        }
        // Over ~970 µs the ring passed line rate (±1 limit).
        let line = t * 10 / 8;
        assert!(handed <= line + 6000 && handed + 6000 + 1538 >= line, "{handed} vs {line}");
        // A control frame is never held back, and may overshoot by itself.
        let before = l.inflight();
        l.sent(64);
        assert_eq!(l.inflight(), (before + 64).min(l.limit()));
    }

    proptest::proptest! {
        /// A TX side that sends a class's packets while their sum fits its `grant` (then
        /// `spend`s it) chooses exactly what one calling `pick` for every packet chooses.
        /// Rounds are serve calls: packets arrive between them (the eligible set may
        /// grow), within one it only shrinks as queues empty.
        #[test]
        fn grant_chooses_what_pick_chooses(
            kinds in proptest::collection::vec(proptest::option::of(1u32..100), 8),
            arrivals in proptest::collection::vec(proptest::collection::vec((0usize..8, 60u32..1600, 1usize..6), 0..6), 1..40),
            budget in 1usize..40,
        ) {
            let k: [TcSched; 8] = std::array::from_fn(|i| kinds[i].map_or(TcSched::Strict, TcSched::Dwrr));
            let (mut a, mut b) = (Scheduler::new(k, JUMBO), Scheduler::new(k, JUMBO));
            let mut qa: [std::collections::VecDeque<u32>; 8] = Default::default();
            for round in arrivals {
                for (tc, len, n) in round {
                    for i in 0..n { qa[tc].push_back(len + i as u32); }
                }
                let mut qb = qa.clone();
                // A: pick per packet.
                let mut seq_a = vec![];
                while seq_a.len() < budget {
                    let el = (0..8).filter(|&t| !qa[t].is_empty()).fold(0u8, |m, t| m | 1 << t);
                    let Some(tc) = a.pick(el, |t| qa[t].front().copied().unwrap_or(0)) else { break };
                    seq_a.push((tc, qa[tc].pop_front().unwrap()));
                }
                // B: pick, then the class's next packets while their sum fits its grant.
                let mut seq_b = vec![];
                while seq_b.len() < budget {
                    let el = (0..8).filter(|&t| !qb[t].is_empty()).fold(0u8, |m, t| m | 1 << t);
                    let Some(tc) = b.pick(el, |t| qb[t].front().copied().unwrap_or(0)) else { break };
                    seq_b.push((tc, qb[tc].pop_front().unwrap()));
                    let (grant, mut spent) = (b.grant(tc), 0u64);
                    while let Some(&len) = qb[tc].front() {
                        if seq_b.len() >= budget || spent + u64::from(len) > grant { break; }
                        spent += u64::from(len);
                        seq_b.push((tc, qb[tc].pop_front().unwrap()));
                    }
                    b.spend(tc, spent);
                }
                proptest::prop_assert_eq!(&seq_a, &seq_b);
                proptest::prop_assert_eq!(&qa, &qb);
            }
        }
    }
}
