//! What the receive side counts per stream: frames, bytes, loss, reordering, duplicates,
//! ECN CE marks and latency (hdrhistogram, in TSC ticks). Pure; owned by the one lcore
//! that polls, nothing allocated per frame.
//!
//! Definitions (per stream, sequence numbers from 0):
//! * `reordered`: frames that arrived after a frame with a higher sequence number;
//! * `duplicates`: frames whose sequence number had already arrived, as far back as the
//!   last [`WINDOW`] numbers (an older repeat is counted as reordered);
//! * `lost`: frames sent (when this process sent them; else the highest number + 1) that
//!   never arrived (`sent − unique`), so tail loss counts too.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use super::payload;

/// How far back duplicates are told apart from late frames.
pub const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

/// Receive counters of one stream.
#[derive(Debug, Clone)]
pub struct RxStream {
    pub frames: u64,
    pub bytes: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub ce: u64,
    /// TSC of the first and the last arrival.
    pub first_rx: u64,
    pub last_rx: u64,
    /// Highest sequence number seen + 1 (0: none yet).
    next: u64,
    seen: [u64; WORDS],
    latency: Histogram<u64>,
}

impl RxStream {
    /// Latency up to a minute at any TSC rate; two significant digits (1 %).
    pub fn new(tsc_hz: u64) -> RxStream {
        RxStream {
            frames: 0,
            bytes: 0,
            duplicates: 0,
            reordered: 0,
            ce: 0,
            first_rx: 0,
            last_rx: 0,
            next: 0,
            seen: [0; WORDS],
            latency: Histogram::new_with_bounds(1, tsc_hz.max(1_000_000) * 60, 2).expect("histogram bounds"),
        }
    }

    #[inline]
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let i = (seq % WINDOW) as usize;
        (&mut self.seen[i / 64], 1u64 << (i % 64))
    }

    /// A frame of this stream arrived at `now`: its 32-bit sequence number, its latency in
    /// ticks, whether it carries CE, its length (FCS included).
    #[inline]
    pub fn on_frame(&mut self, seq32: u32, now: u64, latency_ticks: u64, ce: bool, bytes: u64) {
        if self.frames == 0 {
            self.first_rx = now;
        }
        self.last_rx = now;
        self.frames += 1;
        self.bytes += bytes;
        self.ce += u64::from(ce);
        self.latency.saturating_record(latency_ticks.max(1));
        let seq = payload::extend_seq(seq32, self.next.saturating_sub(1));
        if seq >= self.next {
            if seq - self.next >= WINDOW {
                self.seen = [0; WORDS];
            } else {
                for s in self.next..seq {
                    let (w, b) = self.bit(s);
                    *w &= !b;
                }
            }
            let (w, b) = self.bit(seq);
            *w |= b;
            self.next = seq + 1;
        } else if self.next - seq <= WINDOW {
            let (w, b) = self.bit(seq);
            if *w & b != 0 {
                self.duplicates += 1;
            } else {
                *w |= b;
                self.reordered += 1;
            }
        } else {
            self.reordered += 1;
        }
    }

    /// Distinct frames received.
    pub fn unique(&self) -> u64 {
        self.frames - self.duplicates
    }

    /// Highest sequence number + 1 (0 if nothing arrived).
    pub fn highest_plus_one(&self) -> u64 {
        self.next
    }

    /// Frames lost: of `sent` if known, else of every number up to the highest seen.
    pub fn lost(&self, sent: Option<u64>) -> u64 {
        sent.unwrap_or(self.next).saturating_sub(self.unique())
    }

    /// The stream's receive summary; latency in ns.
    pub fn to_json(&self, sent: Option<u64>, tsc_hz: u64) -> Value {
        let ns = |t: u64| (u128::from(t) * 1_000_000_000 / u128::from(tsc_hz.max(1))) as u64;
        let h = &self.latency;
        let latency = if h.is_empty() {
            json!({})
        } else {
            json!({
                "count": h.len(), "min_ns": ns(h.min()), "mean_ns": ns(h.mean() as u64),
                "p50_ns": ns(h.value_at_quantile(0.5)), "p99_ns": ns(h.value_at_quantile(0.99)),
                "p999_ns": ns(h.value_at_quantile(0.999)), "max_ns": ns(h.max()),
            })
        };
        // Wire bits ((size + 20) · 8) between the first and the last arrival: N frames
        // span N − 1 intervals, so the rate leaves one (average) frame out.
        let span = self.last_rx.saturating_sub(self.first_rx) as f64 / tsc_hz.max(1) as f64;
        let bits = (self.bytes + 20 * self.frames) as f64 * 8.0;
        let bps = if span > 0.0 && self.frames > 1 {
            bits * (self.frames - 1) as f64 / self.frames as f64 / span
        } else {
            0.0
        };
        json!({
            "rx_packets": self.frames, "rx_bytes": self.bytes, "unique": self.unique(),
            "rx_seconds": span, "rx_wire_bps": bps.round(),
            "lost": if self.frames == 0 { Value::Null } else { json!(self.lost(sent)) }, "reordered": self.reordered, "duplicates": self.duplicates,
            "ecn_ce": self.ce, "latency": latency,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed(seqs: &[u64]) -> RxStream {
        let mut r = RxStream::new(1_000_000_000);
        for &s in seqs {
            r.on_frame(s as u32, s, 1000, s % 10 == 0, 100);
        }
        r
    }

    #[test]
    fn in_order_lossless() {
        let r = feed(&(0..10_000).collect::<Vec<_>>());
        assert_eq!((r.unique(), r.lost(Some(10_000)), r.reordered, r.duplicates, r.ce), (10_000, 0, 0, 0, 1000));
        let p50 = r.to_json(Some(10_000), 1_000_000_000)["latency"]["p50_ns"].as_u64().unwrap();
        assert!((1000..=1010).contains(&p50), "{p50} (two significant digits)");
    }

    #[test]
    fn loss_reorder_duplicates() {
        // 0 1 3 2 2 5 (4 lost), then 6..9 never arrive (tail loss, known from `sent`).
        let r = feed(&[0, 1, 3, 2, 2, 5]);
        assert_eq!((r.frames, r.unique(), r.reordered, r.duplicates), (6, 5, 1, 1));
        assert_eq!(r.lost(None), 1);
        assert_eq!(r.lost(Some(10)), 5);
        // A gap wider than the window, then a frame from before it: late, and not told
        // apart from a first arrival (so it counts as received).
        let r = feed(&[0, 1, 10_000, 1]);
        assert_eq!((r.reordered, r.duplicates, r.lost(None)), (1, 0, 9997));
    }

    #[test]
    fn sequence_wraps_past_32_bits() {
        let mut r = RxStream::new(1_000_000_000);
        let base = (1u64 << 32) - 3;
        r.next = base; // as if 2^32 - 3 frames had arrived
        for s in base..base + 6 {
            r.on_frame(s as u32, s, 1, false, 64);
        }
        assert_eq!((r.highest_plus_one(), r.reordered, r.duplicates), (base + 6, 0, 0));
    }

    proptest! {
        /// Against a model: a random permutation of a prefix with some frames dropped and
        /// some repeated, displaced by less than the window.
        #[test]
        fn counts_match_a_model(n in 1u64..3000, drops in proptest::collection::vec(any::<u16>(), 0..50),
                                dups in proptest::collection::vec(any::<u16>(), 0..50),
                                swaps in proptest::collection::vec((any::<u16>(), 1u64..100), 0..50)) {
            let mut order: Vec<u64> = (0..n).filter(|s| !drops.iter().any(|d| u64::from(*d) % n == *s)).collect();
            for d in &dups {
                if !order.is_empty() {
                    let i = usize::from(*d) % order.len();
                    order.insert(i + 1, order[i]);
                }
            }
            for (i, k) in &swaps {
                if order.len() > 1 {
                    let a = usize::from(*i) % order.len();
                    let b = (a + *k as usize).min(order.len() - 1);
                    order.swap(a, b);
                }
            }
            let r = feed(&order);
            let mut seen = std::collections::HashSet::new();
            let (mut max, mut reord, mut dup) = (None::<u64>, 0, 0);
            for &s in &order {
                if !seen.insert(s) { dup += 1; }
                else if max.is_some_and(|m| s < m) { reord += 1; }
                max = max.max(Some(s));
            }
            prop_assert_eq!(r.duplicates, dup);
            prop_assert_eq!(r.reordered, reord);
            prop_assert_eq!(r.unique(), seen.len() as u64);
            prop_assert_eq!(r.lost(Some(n)), n - seen.len() as u64);
        }
    }
}
