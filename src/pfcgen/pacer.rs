//! When a stream may send its next frame, in TSC ticks. Pure: the caller passes `now`.
//!
//! Frame k may leave once the frames before it have "left" at the stream's rate:
//! `now ≥ anchor + cost(0..k) / rate`, with cost in wire bits (`(size + 20) · 8`, size
//! with FCS) for bit rates or 1 per frame for pps. The sum is exact integer arithmetic from
//! the anchor, so there is no drift: a 3 Mbit/s stream is within one frame of 3 Mbit/s
//! at any poll, however irregular the polls (a late poll sends the frames that are due,
//! back to back). The anchor moves (`rebase`) only when the stream resumes after a PAUSE
//! (paused time is not made up: a paused NIC queue does not send faster afterwards) and
//! at the start of each on-period of an on/off pattern.

/// Wire overhead per frame on top of its size with FCS: preamble + SFD (8) and the
/// inter-frame gap (12).
pub const WIRE_OVERHEAD: u64 = 20;

/// The stream's rate as the pacer counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaceRate {
    /// No pacing.
    Max,
    /// Frames per 1000 s.
    FramesMilli(u64),
    /// Wire bits per 1000 s.
    BitsMilli(u64),
}

impl PaceRate {
    /// From a resolved rate: `pps` frames/s or `bps` wire bits/s.
    pub fn pps(pps: f64) -> PaceRate {
        PaceRate::FramesMilli((pps * 1000.0).round().max(1.0) as u64)
    }
    pub fn bps(bps: f64) -> PaceRate {
        PaceRate::BitsMilli((bps * 1000.0).round().max(1.0) as u64)
    }
}

/// Cost of a frame of `size` bytes (FCS included) under `rate`.
#[inline]
pub fn cost(rate: PaceRate, size: u16) -> u64 {
    match rate {
        PaceRate::BitsMilli(_) => (u64::from(size) + WIRE_OVERHEAD) * 8,
        _ => 1,
    }
}

/// One stream's pacer.
#[derive(Debug, Clone)]
pub struct Pacer {
    rate: PaceRate,
    hz: u64,
    anchor: u64,
    /// Cost sent since `anchor`.
    sent: u64,
    /// On/off pattern in ticks (on, period) from `start`, if any.
    burst: Option<(u64, u64)>,
    start: u64,
    /// The on-period the anchor belongs to.
    window: u64,
}

impl Pacer {
    /// A pacer whose first frame may leave at `start` (TSC), with an optional on/off
    /// pattern `(on, off)` in ticks starting there.
    pub fn new(rate: PaceRate, hz: u64, start: u64, burst: Option<(u64, u64)>) -> Pacer {
        Pacer {
            rate,
            hz,
            anchor: start,
            sent: 0,
            burst: burst.filter(|b| b.0 > 0).map(|(on, off)| (on, on.saturating_add(off))),
            start,
            window: 0,
        }
    }

    /// Move the start (and the on/off pattern with it) to `start`, as if just created.
    pub fn restart_at(&mut self, start: u64) {
        self.start = start;
        self.anchor = start;
        self.sent = 0;
        self.window = 0;
    }

    pub fn rate(&self) -> PaceRate {
        self.rate
    }

    /// Earliest TSC at which the next frame may leave (ignoring the on/off pattern).
    #[inline]
    pub fn due(&self) -> u64 {
        let per_1000s = match self.rate {
            PaceRate::Max => return self.anchor,
            PaceRate::FramesMilli(r) | PaceRate::BitsMilli(r) => r,
        };
        let t = u128::from(self.sent) * 1000 * u128::from(self.hz) / u128::from(per_1000s);
        self.anchor.saturating_add(u64::try_from(t).unwrap_or(u64::MAX))
    }

    /// May the next frame leave at `now`? Moves to a new on-period when one has begun.
    #[inline]
    pub fn ready(&mut self, now: u64) -> bool {
        if now < self.start {
            return false;
        }
        if let Some((on, period)) = self.burst {
            let since = now - self.start;
            let (w, phase) = (since / period, since % period);
            if phase >= on {
                return false;
            }
            if w != self.window {
                self.window = w;
                self.anchor = self.start + w * period;
                self.sent = 0;
            }
        }
        now >= self.due()
    }

    /// A frame of cost `c` was handed to the device.
    #[inline]
    pub fn sent(&mut self, c: u64) {
        self.sent += c;
    }

    /// The device refused a frame counted by `sent`: as if it had not been built.
    #[inline]
    pub fn unsent(&mut self, c: u64) {
        self.sent = self.sent.saturating_sub(c);
    }

    /// Change the rate at `now` (DCQCN): the next frame is due when it was under the old
    /// rate, frames after it go at the new one. A backlog (a late poll) is kept up to
    /// `max_lag` ticks, not more: a rate change is no licence for a burst.
    #[inline]
    pub fn set_rate(&mut self, rate: PaceRate, now: u64, max_lag: u64) {
        let due = self.due();
        self.anchor = due.max(now.saturating_sub(max_lag));
        self.sent = 0;
        self.rate = rate;
    }

    /// Restart the schedule at `now` (after a pause): the next frame may leave now.
    #[inline]
    pub fn rebase(&mut self, now: u64) {
        if now > self.anchor {
            self.anchor = now;
            self.sent = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Poll `p` from 0 to `end` at steps from `steps` (cycled), sending every frame that
    /// is ready; returns the cost sent.
    fn run(p: &mut Pacer, size: u16, end: u64, steps: &[u64]) -> u64 {
        let (mut now, mut total, mut i) = (0u64, 0u64, 0usize);
        while now <= end {
            while p.ready(now) {
                let c = cost(p.rate(), size);
                p.sent(c);
                total += c;
            }
            now += steps[i % steps.len()].max(1);
            i += 1;
        }
        total
    }

    #[test]
    fn three_mbit_within_one_percent_over_ten_seconds() {
        // 2.6 GHz TSC, 1000-byte frames, polls every 0.3 µs to 2 ms (a loaded lcore).
        let hz = 2_600_000_000;
        let mut p = Pacer::new(PaceRate::bps(3e6), hz, 0, None);
        let steps = [780, 5_200_000, 13_000, 1_300_000, 260];
        let bits = run(&mut p, 1000, 10 * hz, &steps);
        let want = 3e6 * 10.0;
        assert!(((bits as f64) - want).abs() / want < 0.001, "{bits} wire bits, want {want}");
    }

    #[test]
    fn pps_and_max() {
        let hz = 1_000_000_000;
        let mut p = Pacer::new(PaceRate::pps(1000.0), hz, 0, None);
        assert_eq!(run(&mut p, 64, hz - 1, &[1000]), 1000);
        let mut m = Pacer::new(PaceRate::Max, hz, 50, None);
        assert!(!m.ready(49) && m.ready(50));
        m.sent(1);
        assert!(m.ready(50));
    }

    #[test]
    fn rebase_drops_paused_time_and_unsent_rolls_back() {
        let hz = 1_000_000;
        let mut p = Pacer::new(PaceRate::pps(1000.0), hz, 0, None); // one frame per 1000 ticks
        assert!(p.ready(0));
        p.sent(1);
        assert!(!p.ready(999) && p.ready(1000));
        p.sent(1);
        p.unsent(1);
        assert!(p.ready(1000), "the refused frame is due again");
        // Paused from 1000 to 50_000: no burst of 49 frames afterwards.
        p.rebase(50_000);
        assert!(p.ready(50_000));
        p.sent(1);
        assert!(!p.ready(50_999) && p.ready(51_000));
        // Restarted (before its first frame, by the engine): from the new start only.
        p.restart_at(90_000);
        assert!(!p.ready(89_999) && p.ready(90_000));
    }

    #[test]
    fn set_rate_keeps_the_next_due_time() {
        let hz = 1_000_000;
        let mut p = Pacer::new(PaceRate::pps(1000.0), hz, 0, None);
        p.sent(1);
        p.set_rate(PaceRate::pps(100.0), 500, 2000);
        assert!(!p.ready(999) && p.ready(1000), "frame 1 is due at 1000 as before");
        p.sent(1);
        assert!(!p.ready(10_999) && p.ready(11_000), "then at 100 pps");
        // Late by 50 000 ticks: at most 2000 of backlog survive a change.
        p.set_rate(PaceRate::pps(1000.0), 61_000, 2000);
        let mut n = 0;
        while p.ready(61_000) {
            p.sent(1);
            n += 1;
        }
        assert_eq!(n, 3, "frames due at 59 000, 60 000 and 61 000");
    }

    #[test]
    fn on_off_pattern() {
        let hz = 1_000_000;
        // 1000 pps, 10 ms on, 30 ms off, from t = 5000.
        let mut p = Pacer::new(PaceRate::pps(1000.0), hz, 5000, Some((10_000, 30_000)));
        let mut sent_at = Vec::new();
        for now in 0..200_000u64 {
            if p.ready(now) {
                p.sent(1);
                sent_at.push(now);
            }
        }
        // Five on-periods of ten frames each, nothing in an off-period.
        assert_eq!(sent_at.len(), 50);
        assert!(sent_at.iter().all(|&t| (t - 5000) % 40_000 < 10_000), "{sent_at:?}");
        assert_eq!(sent_at[10], 45_000, "each on-period starts on time");
    }

    proptest! {
        #[test]
        fn rate_is_exact_within_a_frame_and_a_poll(
            bps in 10_000.0f64..1e10,
            size in 64u16..9000,
            hz in 1_000_000_000u64..4_000_000_000,
            steps in proptest::collection::vec(1u64..2_000_000, 1..8),
        ) {
            let mut p = Pacer::new(PaceRate::bps(bps), hz, 0, None);
            let end = hz; // one second
            let bits = run(&mut p, size, end, &steps) as f64;
            let frame = ((size as u64 + WIRE_OVERHEAD) * 8) as f64;
            let max_gap = *steps.iter().max().unwrap() as f64 / hz as f64;
            // Never ahead of the rate by more than one frame; behind by at most what was
            // due in the last poll gap.
            prop_assert!(bits <= bps + frame + 1.0, "{} > {}", bits, bps);
            prop_assert!(bits >= bps * (1.0 - max_gap) - frame, "{} < {}", bits, bps);
        }

        #[test]
        fn frames_in_order_never_early(pps in 1.0f64..1e6, polls in proptest::collection::vec(1u64..100_000, 1..200)) {
            let hz = 1_000_000_000u64;
            let mut p = Pacer::new(PaceRate::pps(pps), hz, 0, None);
            let (mut now, mut n) = (0u64, 0u64);
            for d in polls {
                while p.ready(now) {
                    // Frame n may not leave before n / pps seconds.
                    let earliest = (n as f64 / pps * hz as f64).floor() as u64;
                    prop_assert!(now + 1 >= earliest);
                    p.sent(1);
                    n += 1;
                }
                now += d;
            }
        }
    }
}
