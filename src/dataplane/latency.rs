//! Per egress port and TC, the time from RX to `tx_burst` in TSC ticks, recorded into
//! hdrhistograms by the lcore that owns the port's TX (once per run of packets that
//! share an RX timestamp, i.e. came in one RX burst) and merged into the port's shared
//! histograms every 100 ms (with `try_lock`: the fast path never waits; if a reader holds
//! the lock, the merge happens next time). Readers get p50/p99/p99.9/max.

use std::sync::Mutex;

use hdrhistogram::Histogram;

/// Ticks up to an hour at any TSC rate fit; two significant digits (1 % resolution).
fn new_hist(tsc_hz: u64) -> Histogram<u64> {
    Histogram::new_with_bounds(1, tsc_hz.max(1_000_000) * 3600, 2).expect("histogram bounds")
}

pub struct PortLatency {
    pub tcs: Mutex<Vec<Histogram<u64>>>,
    pub tsc_hz: u64,
}

impl PortLatency {
    pub fn new(tsc_hz: u64) -> PortLatency {
        PortLatency { tcs: Mutex::new((0..8).map(|_| new_hist(tsc_hz)).collect()), tsc_hz }
    }

    /// Per TC with samples: (tc, count, p50, p99, p99.9, max) in ns.
    pub fn summary(&self) -> Vec<(u8, u64, u64, u64, u64, u64)> {
        let Ok(h) = self.tcs.lock() else { return Vec::new() };
        let ns = |t: u64| (t as u128 * 1_000_000_000 / self.tsc_hz.max(1) as u128) as u64;
        h.iter()
            .enumerate()
            .filter(|(_, x)| !x.is_empty())
            .map(|(tc, x)| {
                (
                    tc as u8,
                    x.len(),
                    ns(x.value_at_quantile(0.5)),
                    ns(x.value_at_quantile(0.99)),
                    ns(x.value_at_quantile(0.999)),
                    ns(x.max()),
                )
            })
            .collect()
    }

    pub fn reset(&self) {
        if let Ok(mut h) = self.tcs.lock() {
            h.iter_mut().for_each(|x| x.reset());
        }
    }
}

pub struct LatencyRecorder {
    local: Vec<Histogram<u64>>,
    dirty: bool,
    pub next_publish: u64,
    pub publish_every: u64,
}

impl LatencyRecorder {
    pub fn new(tsc_hz: u64, now: u64) -> LatencyRecorder {
        LatencyRecorder {
            local: (0..8).map(|_| new_hist(tsc_hz)).collect(),
            dirty: false,
            next_publish: now,
            publish_every: tsc_hz / 10,
        }
    }

    /// `count` packets of TC `tc` each took `ticks`.
    #[inline]
    pub fn record_n(&mut self, tc: u8, ticks: u64, count: u64) {
        if let Some(h) = self.local.get_mut(tc as usize & 7) {
            // Saturates instead of failing: the range covers an hour.
            h.saturating_record_n(ticks.max(1), count);
            self.dirty = true;
        }
    }

    /// Merge into the shared histograms; `wait` at stop, `try_lock` otherwise.
    pub fn publish(&mut self, to: &PortLatency, wait: bool) {
        if !self.dirty {
            return;
        }
        let guard = if wait { to.tcs.lock().ok() } else { to.tcs.try_lock().ok() };
        if let Some(mut shared) = guard {
            for (s, l) in shared.iter_mut().zip(self.local.iter_mut()) {
                if !l.is_empty() {
                    let _ = s.add(&*l);
                    l.reset();
                }
            }
            self.dirty = false;
        }
    }
}
