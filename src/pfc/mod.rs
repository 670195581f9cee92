//! PFC state machines and timers. Pure: every function takes `now` in TSC ticks and the
//! TSC frequency; nothing reads a clock. One pause quantum = 512 bit-times at the port's
//! link speed.
//!
//! * [`tx`]: what to send when (PAUSE on an Xoff edge, refresh before expiry, one
//!   RESUME on the Xon edge), owned by the control lcore.
//! * [`rx`]: received PAUSE/PFC → per-priority pause deadlines readable by the TX lcore.
//! * [`settle`]: which frames a port's pending PGs need, from the MMU's PG states, and
//!   retrying those that could not be queued.
//! * [`counters`]: SAI-style per-priority counters, single writer, readable anywhere.

pub mod counters;
pub mod rx;
pub mod settle;
pub mod tx;

pub use counters::{PfcPrioStats, PfcRxCounters, PfcTxCounters};
pub use rx::{PauseDeadlines, PfcRx, RxOutcome};
pub use settle::{send_refresh, PendingPgs, Unsent};
pub use tx::{refresh_ticks, PfcAttempt, PfcPortTx, PfcTx, PfcTxConfig, Send};

/// Bit-times per quantum.
pub const QUANTUM_BITS: u128 = 512;

/// TSC ticks for `quanta` pause quanta at `speed_bps`:
/// `ceil(quanta · 512 · tsc_hz / speed_bps)`, exact in u128. Rounded *up* so a pause we
/// obey (or time) is never shorter than the standard's quanta. `speed_bps == 0` (link
/// down/unknown) gives 0: no time passes on a link without a rate.
#[inline]
pub fn quanta_to_ticks(quanta: u16, speed_bps: u64, tsc_hz: u64) -> u64 {
    if speed_bps == 0 {
        return 0;
    }
    let num = u128::from(quanta) * QUANTUM_BITS * u128::from(tsc_hz);
    u64::try_from(num.div_ceil(u128::from(speed_bps))).unwrap_or(u64::MAX)
}

/// Whole microseconds in `ticks` (floor); 0 if `tsc_hz == 0`.
#[inline]
pub fn ticks_to_us(ticks: u64, tsc_hz: u64) -> u64 {
    if tsc_hz == 0 {
        return 0;
    }
    u64::try_from(u128::from(ticks) * 1_000_000 / u128::from(tsc_hz)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quanta_examples_from_design() {
        // 65535 quanta = 3.355 ms at 10G, 0.335 ms at 100G (1 GHz TSC: ticks = ns).
        assert_eq!(quanta_to_ticks(65535, 10_000_000_000, 1_000_000_000), 3_355_392);
        assert_eq!(quanta_to_ticks(65535, 100_000_000_000, 1_000_000_000), 335_540); // 335539.2 ↑
        assert_eq!(quanta_to_ticks(0, 100_000_000_000, 1_000_000_000), 0);
        assert_eq!(quanta_to_ticks(1, 0, 1_000_000_000), 0);
        assert_eq!(ticks_to_us(3_355_392, 1_000_000_000), 3355);
        assert_eq!(ticks_to_us(5, 0), 0);
    }
}
