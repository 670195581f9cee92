//! Receive side: PAUSE/PFC frames from the peer become per-priority pause deadlines in
//! TSC ticks. The RX worker owns [`PfcRx`]; the TX side reads [`PauseDeadlines`]
//! (atomics) concurrently with a single comparison per check.
//!
//! Rules: a PAUSE sets the deadline to `now + ticks(quanta)` (replacing any previous
//! one, even if shorter); time 0 clears it; only priorities in the port's `pfc_enable`
//! obey PFC frames (a lossy priority never stops). An 802.3x PAUSE, where obeyed, pauses
//! all eight priorities: it is a link-level PAUSE and 802.3 Annex 31B stops every data
//! frame (MAC Control frames are never paused). 802.1Qbb makes PAUSE and PFC exclusive on
//! a link, so a port with PFC ignores 802.3x PAUSE (counted) unless configured to obey.

use super::counters::PfcRxCounters;
use super::quanta_to_ticks;
use crate::wire::MacControl;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

/// Per-priority pause deadlines of one port (0 = not paused). One writer (the RX
/// worker), any number of readers.
#[derive(Debug, Default)]
pub struct PauseDeadlines {
    d: [AtomicU64; 8],
}

impl PauseDeadlines {
    /// True if `prio` may not transmit at `now`. Out-of-range priorities are never paused.
    #[inline]
    pub fn is_paused(&self, prio: u8, now: u64) -> bool {
        self.d.get(usize::from(prio)).is_some_and(|d| d.load(Acquire) > now)
    }

    /// Bit n set: priority n paused at `now`.
    #[inline]
    pub fn paused_mask(&self, now: u64) -> u8 {
        self.d.iter().enumerate().fold(0, |m, (i, d)| if d.load(Acquire) > now { m | 1 << i } else { m })
    }

    /// Raw deadline of `prio` (0 = none).
    pub fn deadline(&self, prio: u8) -> u64 {
        self.d.get(usize::from(prio)).map_or(0, |d| d.load(Acquire))
    }
}

/// What a received frame did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxOutcome {
    /// Priorities paused or re-paused (deadline set) by this frame.
    pub paused: u8,
    /// Priorities that were paused and were resumed by time 0.
    pub resumed: u8,
    /// Subset of `paused` that was running before (ON→OFF).
    pub on2off: u8,
    /// Class-enable bits for priorities without PFC enabled on this port: ignored.
    pub ignored: u8,
}

/// The receive state of one port.
#[derive(Debug)]
pub struct PfcRx {
    pfc_enable: u8,
    /// Obey 802.3x PAUSE (false on a port with PFC unless configured: 802.1Qbb makes
    /// them exclusive on a link).
    obey_8023x: bool,
    speed_bps: u64,
    since: [u64; 8],
    deadlines: Arc<PauseDeadlines>,
    counters: Arc<PfcRxCounters>,
}

impl PfcRx {
    /// Nothing paused. 802.3x PAUSE is obeyed only on a port without PFC; see
    /// [`PfcRx::obey_8023x`].
    pub fn new(pfc_enable: u8, speed_bps: u64) -> Self {
        PfcRx {
            pfc_enable,
            obey_8023x: pfc_enable == 0,
            speed_bps,
            since: [0; 8],
            deadlines: Arc::default(),
            counters: Arc::default(),
        }
    }

    /// Obey (or ignore) received 802.3x PAUSE frames (`pause_8023x`).
    pub fn obey_8023x(mut self, obey: bool) -> Self {
        self.obey_8023x = obey;
        self
    }

    /// The deadlines, to hand to the TX lcore.
    pub fn deadlines(&self) -> Arc<PauseDeadlines> {
        Arc::clone(&self.deadlines)
    }

    /// The counters, for stats readers.
    pub fn counters(&self) -> Arc<PfcRxCounters> {
        Arc::clone(&self.counters)
    }

    /// A new set of PFC priorities (`config pfc`) at `now`: a priority no longer enabled
    /// is no longer paused (its pause closed and counted), and later frames naming it are
    /// ignored; 802.3x obedience stays as configured.
    pub fn set_enable(&mut self, pfc_enable: u8, now: u64) {
        for i in 0..8 {
            if pfc_enable & (1 << i) == 0 && self.deadlines.d[i].load(Relaxed) != 0 {
                self.counters.prio[i].pause_ticks.add(now.saturating_sub(self.since[i]));
                self.deadlines.d[i].store(0, Release);
            }
        }
        self.pfc_enable = pfc_enable;
    }

    /// After a link speed change (quanta are bit-times).
    pub fn set_speed(&mut self, speed_bps: u64) {
        self.speed_bps = speed_bps;
    }

    /// See [`PauseDeadlines::is_paused`].
    #[inline]
    pub fn is_paused(&self, prio: u8, now: u64) -> bool {
        self.deadlines.is_paused(prio, now)
    }

    /// See [`PauseDeadlines::paused_mask`].
    #[inline]
    pub fn paused_mask(&self, now: u64) -> u8 {
        self.deadlines.paused_mask(now)
    }

    /// Closes a pause that expired on its own (accounting its RxWait). Returns true if
    /// `i` is still paused at `now`.
    fn settle(&mut self, i: usize, now: u64) -> bool {
        let d = self.deadlines.d[i].load(Relaxed);
        if d == 0 {
            return false;
        }
        if d > now {
            return true;
        }
        self.counters.prio[i].pause_ticks.add(d.saturating_sub(self.since[i]));
        self.deadlines.d[i].store(0, Release);
        false
    }

    /// Applies time `quanta` to priorities `mask`.
    fn apply(&mut self, mask: u8, quanta: u16, now: u64, tsc_hz: u64, out: &mut RxOutcome) {
        let ticks = quanta_to_ticks(quanta, self.speed_bps, tsc_hz);
        for i in 0..8 {
            if mask & (1 << i) == 0 {
                continue;
            }
            let running = !self.settle(i, now);
            if ticks == 0 {
                if !running {
                    self.counters.prio[i].pause_ticks.add(now.saturating_sub(self.since[i]));
                    self.deadlines.d[i].store(0, Release);
                    out.resumed |= 1 << i;
                }
                continue;
            }
            if running {
                self.since[i] = now;
                out.on2off |= 1 << i;
                self.counters.prio[i].on2off.add(1);
            }
            self.deadlines.d[i].store(now.saturating_add(ticks), Release);
            out.paused |= 1 << i;
        }
    }

    /// Applies a received MAC Control frame at `now`.
    pub fn on_frame(&mut self, f: &MacControl, now: u64, tsc_hz: u64) -> RxOutcome {
        let mut out = RxOutcome::default();
        match *f {
            MacControl::Pfc { class_enable, quanta } => {
                out.ignored = class_enable & !self.pfc_enable;
                if class_enable != 0 && out.ignored == class_enable {
                    self.counters.ignored_frames.add(1);
                }
                for (i, &q) in quanta.iter().enumerate() {
                    if class_enable & (1 << i) == 0 {
                        continue;
                    }
                    let c = &self.counters.prio[i];
                    if q == 0 { &c.resume_frames } else { &c.pause_frames }.inc();
                    if self.pfc_enable & (1 << i) != 0 {
                        self.apply(1 << i, q, now, tsc_hz, &mut out);
                    }
                }
            }
            MacControl::Pause { quanta } => {
                let c = &self.counters;
                if quanta == 0 { &c.link_resume_frames } else { &c.link_pause_frames }.inc();
                if self.obey_8023x {
                    self.apply(0xff, quanta, now, tsc_hz, &mut out);
                } else {
                    c.link_pause_ignored.inc();
                }
            }
        }
        out
    }

    /// Housekeeping: closes pauses that expired by `now` (so RxWait counters are
    /// current). Returns the priorities that expired since the last call.
    pub fn poll(&mut self, now: u64) -> u8 {
        let mut expired = 0;
        for i in 0..8 {
            if self.deadlines.d[i].load(Relaxed) != 0 && !self.settle(i, now) {
                expired |= 1 << i;
            }
        }
        expired
    }
}
