//! Transmit side: turns MMU Xoff/Xon edges into "send this PFC time now" decisions and
//! refresh deadlines. Owned by the control lcore (`&mut self`); it decides, the caller
//! sends.

use super::counters::PfcTxCounters;
use super::quanta_to_ticks;
use crate::mmu::EdgeKind;
use crate::wire::MacControl;
use std::sync::Arc;

/// Sender policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcTxConfig {
    /// Time in PAUSE frames (default 0xFFFF, the common production value).
    pub pause_quanta: u16,
    /// Refresh after this percentage of the pause time (default 50; clamped to 1..=99).
    pub refresh_percent: u8,
    /// [`PfcPortTx`] also refreshes OFF priorities due within this many ticks when it
    /// sends a frame anyway, so several priorities share one frame (default 0).
    pub coalesce_ticks: u64,
}

impl Default for PfcTxConfig {
    fn default() -> Self {
        PfcTxConfig { pause_quanta: 0xffff, refresh_percent: 50, coalesce_ticks: 0 }
    }
}

/// What to put on the wire for one priority now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Send {
    /// Pause time; 0 = RESUME.
    pub quanta: u16,
}

impl Send {
    /// Time 0.
    pub fn is_resume(&self) -> bool {
        self.quanta == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    On,
    /// `last_sent`: when the last PAUSE for this priority was sent, if this sender knows
    /// (not after a worker's refreshes it took over, whose times it is not told).
    Off {
        next_refresh: u64,
        accrued_to: u64,
        last_sent: Option<u64>,
    },
}

/// The refresh interval of a PAUSE at `speed_bps`:
/// `floor(ticks(pause_quanta) · refresh_percent / 100)`, at least 1 tick (floor, so the
/// refresh is never later than the configured fraction).
pub fn refresh_ticks(cfg: &PfcTxConfig, speed_bps: u64, tsc_hz: u64) -> u64 {
    let pct = u128::from(cfg.refresh_percent.clamp(1, 99));
    let full = u128::from(quanta_to_ticks(cfg.pause_quanta.max(1), speed_bps, tsc_hz));
    u64::try_from(full * pct / 100).unwrap_or(u64::MAX).max(1)
}

/// One (port, priority) sender.
///
/// ON --Pause edge--> send PAUSE(q), OFF; OFF --poll at refresh deadline--> send PAUSE(q)
/// again (deadline = send time + refresh interval); OFF --Resume edge--> send RESUME
/// once, ON. Duplicate edges (Pause while OFF, Resume while ON) send nothing.
#[derive(Debug, Clone)]
pub struct PfcTx {
    pause_quanta: u16,
    refresh_ticks: u64,
    /// How long a PAUSE holds the peer: a refresh later than this after the previous
    /// PAUSE is late (the peer resumed in between).
    pause_ticks: u64,
    state: State,
}

impl PfcTx {
    /// A sender in state ON for a link of `speed_bps`.
    pub fn new(cfg: &PfcTxConfig, speed_bps: u64, tsc_hz: u64) -> Self {
        let mut t = PfcTx { pause_quanta: cfg.pause_quanta.max(1), refresh_ticks: 1, pause_ticks: 0, state: State::On };
        t.set_speed(cfg, speed_bps, tsc_hz);
        t
    }

    /// Recomputes the refresh interval after a speed change ([`refresh_ticks`]).
    pub fn set_speed(&mut self, cfg: &PfcTxConfig, speed_bps: u64, tsc_hz: u64) {
        self.refresh_ticks = refresh_ticks(cfg, speed_bps, tsc_hz);
        self.pause_ticks = quanta_to_ticks(cfg.pause_quanta.max(1), speed_bps, tsc_hz);
    }

    /// Refresh interval in ticks.
    pub fn refresh_ticks(&self) -> u64 {
        self.refresh_ticks
    }

    /// True between a PAUSE edge and the RESUME edge.
    pub fn is_off(&self) -> bool {
        matches!(self.state, State::Off { .. })
    }

    /// Reacts to an MMU edge at `now`.
    pub fn on_edge(&mut self, kind: EdgeKind, now: u64) -> Option<Send> {
        match (kind, self.state) {
            (EdgeKind::Pause, State::On) => {
                self.state = State::Off {
                    next_refresh: now.saturating_add(self.refresh_ticks),
                    accrued_to: now,
                    last_sent: Some(now),
                };
                Some(Send { quanta: self.pause_quanta })
            }
            (EdgeKind::Resume, State::Off { .. }) => {
                self.state = State::On;
                Some(Send { quanta: 0 })
            }
            _ => None,
        }
    }

    /// The refresh due at `now`, if any.
    pub fn poll(&mut self, now: u64) -> Option<Send> {
        match self.state {
            State::Off { next_refresh, accrued_to, .. } if now >= next_refresh => {
                self.state = State::Off {
                    next_refresh: now.saturating_add(self.refresh_ticks),
                    accrued_to,
                    last_sent: Some(now),
                };
                Some(Send { quanta: self.pause_quanta })
            }
            _ => None,
        }
    }

    /// A refresh sent at `now` would be late: the previous PAUSE (whose time this sender
    /// knows) expired before it (more than the pause time ago): the peer was free to send in between.
    pub fn refresh_late(&self, now: u64) -> bool {
        matches!(self.state, State::Off { last_sent: Some(t), .. } if now.saturating_sub(t) > self.pause_ticks)
    }

    /// A PAUSE for this priority was sent at `at` by someone else (a worker), after
    /// `frames - 1` refreshes of its own whose times are unknown here.
    fn noted_elsewhere(&mut self, at: u64, frames: u64) {
        if let State::Off { last_sent, .. } = &mut self.state {
            *last_sent = if frames <= 1 { last_sent.map(|t| t.max(at)).or(Some(at)) } else { None };
        }
    }

    /// When `poll` next has something to say.
    pub fn next_deadline(&self) -> Option<u64> {
        match self.state {
            State::Off { next_refresh, .. } => Some(next_refresh),
            State::On => None,
        }
    }

    /// Ticks spent OFF since the last call (for TxWait), closing at `now`.
    fn take_off_ticks(&mut self, now: u64, was_off_since: Option<u64>) -> u64 {
        match (&mut self.state, was_off_since) {
            (State::Off { accrued_to, .. }, _) => {
                let d = now.saturating_sub(*accrued_to);
                *accrued_to = now;
                d
            }
            (State::On, Some(since)) => now.saturating_sub(since),
            (State::On, None) => 0,
        }
    }

    fn accrued_to(&self) -> Option<u64> {
        match self.state {
            State::Off { accrued_to, .. } => Some(accrued_to),
            State::On => None,
        }
    }
}

/// Counter increments a decision implies; applied only when the frame is committed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Delta {
    pause_frames: u64,
    resume_frames: u64,
    pause_ticks: u64,
    on2off: u64,
    late_refreshes: u64,
}

/// A decision worked out on a copy of the eight senders, so that nothing changes until
/// the caller knows the frame was queued.
#[derive(Debug, Clone)]
struct Draft {
    prio: [PfcTx; 8],
    delta: [Delta; 8],
}

impl Draft {
    fn new(prio: &[PfcTx; 8]) -> Draft {
        Draft { prio: prio.clone(), delta: [Delta::default(); 8] }
    }

    /// See [`PfcPortTx::prepare_edge`].
    fn edge(&mut self, cfg: &PfcTxConfig, priorities: u8, kind: EdgeKind, now: u64) -> Option<MacControl> {
        let mut class_enable = 0u8;
        let mut quanta = [0u16; 8];
        for (i, p) in self.prio.iter_mut().enumerate() {
            if priorities & (1 << i) == 0 {
                continue;
            }
            let since = p.accrued_to();
            if let Some(s) = p.on_edge(kind, now) {
                let d = &mut self.delta[i];
                if s.is_resume() {
                    d.pause_ticks += p.take_off_ticks(now, since);
                    d.resume_frames += 1;
                } else {
                    d.on2off += 1;
                    d.pause_frames += 1;
                }
                class_enable |= 1 << i;
                quanta[i] = s.quanta;
            }
        }
        if class_enable == 0 {
            return None;
        }
        let (more, q) = self.refreshes(now, now.saturating_add(cfg.coalesce_ticks), !class_enable);
        for (i, slot) in quanta.iter_mut().enumerate() {
            if more & (1 << i) != 0 {
                *slot = q;
            }
        }
        Some(MacControl::Pfc { class_enable: class_enable | more, quanta })
    }

    /// See [`PfcPortTx::prepare_poll`].
    fn poll(&mut self, cfg: &PfcTxConfig, now: u64) -> Option<MacControl> {
        let due = self.prio.iter().filter_map(PfcTx::next_deadline).any(|d| d <= now);
        if !due {
            return None;
        }
        let (mask, q) = self.refreshes(now, now.saturating_add(cfg.coalesce_ticks), 0xff);
        (mask != 0).then(|| MacControl::pfc_pause(mask, q))
    }

    /// Refreshes every OFF priority in `among` whose deadline is ≤ `horizon`.
    fn refreshes(&mut self, now: u64, horizon: u64, among: u8) -> (u8, u16) {
        let mut mask = 0u8;
        let mut q = 0;
        for (i, p) in self.prio.iter_mut().enumerate() {
            if among & (1 << i) == 0 || p.next_deadline().is_none_or(|d| d > horizon) {
                continue;
            }
            let late = p.refresh_late(now);
            // Due (or nearly): refresh now, early rather than late.
            if let State::Off { next_refresh, .. } = &mut p.state {
                *next_refresh = now;
            }
            if let Some(s) = p.poll(now) {
                let d = &mut self.delta[i];
                d.late_refreshes += u64::from(late);
                d.pause_ticks += p.take_off_ticks(now, None);
                d.pause_frames += 1;
                mask |= 1 << i;
                q = s.quanta;
            }
        }
        (mask, q)
    }
}

/// A PFC frame [`PfcPortTx`] wants sent, not yet taken into account.
///
/// [`commit`](Self::commit) it once the frame is queued: only then do the senders change
/// state and the counters move. Dropping it (no mbuf, control queue full) leaves the port
/// exactly as it was, so the same need shows up again at the next edge, poll or
/// reconciliation and the frame is retried instead of being counted as sent and lost.
#[must_use = "commit once the frame is queued; drop to retry later"]
#[derive(Debug)]
pub struct PfcAttempt<'a> {
    port: &'a mut PfcPortTx,
    draft: Draft,
    frame: MacControl,
}

impl PfcAttempt<'_> {
    /// The frame to queue.
    pub fn frame(&self) -> &MacControl {
        &self.frame
    }

    /// The frame was queued: apply the new sender states and counters.
    pub fn commit(self) -> MacControl {
        let PfcAttempt { port, draft, frame } = self;
        port.prio = draft.prio;
        for (c, d) in port.counters.prio.iter().zip(draft.delta) {
            c.pause_frames.add(d.pause_frames);
            c.resume_frames.add(d.resume_frames);
            c.pause_ticks.add(d.pause_ticks);
            c.on2off.add(d.on2off);
            c.late_refreshes.add(d.late_refreshes);
        }
        frame
    }
}

/// The eight senders of one port, producing one PFC frame for all priorities that
/// need one at the same time, and keeping that port's TX counters.
#[derive(Debug)]
pub struct PfcPortTx {
    prio: [PfcTx; 8],
    cfg: PfcTxConfig,
    counters: Arc<PfcTxCounters>,
}

impl PfcPortTx {
    /// All priorities ON.
    pub fn new(cfg: PfcTxConfig, speed_bps: u64, tsc_hz: u64) -> Self {
        let one = PfcTx::new(&cfg, speed_bps, tsc_hz);
        PfcPortTx { prio: std::array::from_fn(|_| one.clone()), cfg, counters: Arc::default() }
    }

    /// Shared handle on the counters (for stats readers).
    pub fn counters(&self) -> Arc<PfcTxCounters> {
        Arc::clone(&self.counters)
    }

    /// After a link speed change.
    pub fn set_speed(&mut self, speed_bps: u64, tsc_hz: u64) {
        for p in &mut self.prio {
            p.set_speed(&self.cfg, speed_bps, tsc_hz);
        }
    }

    /// Priorities currently asserted OFF (as far as committed frames go).
    pub fn off_mask(&self) -> u8 {
        self.prio.iter().enumerate().filter(|(_, p)| p.is_off()).fold(0, |m, (i, _)| m | 1 << i)
    }

    /// The frame an edge for the priorities in `priorities` (the PG's PFC priorities)
    /// calls for, also carrying refreshes due within `coalesce_ticks`; nothing changes
    /// until it is committed. None if the edge changes nothing (duplicate).
    pub fn prepare_edge(&mut self, priorities: u8, kind: EdgeKind, now: u64) -> Option<PfcAttempt<'_>> {
        let mut draft = Draft::new(&self.prio);
        let frame = draft.edge(&self.cfg, priorities, kind, now)?;
        Some(PfcAttempt { port: self, draft, frame })
    }

    /// The refresh frame due at `now` (with those due within `coalesce_ticks`), to be
    /// committed once queued. An uncommitted refresh stays due.
    pub fn prepare_poll(&mut self, now: u64) -> Option<PfcAttempt<'_>> {
        // Cheap test first: this runs on every control-loop pass.
        if self.next_deadline().is_none_or(|d| d > now) {
            return None;
        }
        let mut draft = Draft::new(&self.prio);
        let frame = draft.poll(&self.cfg, now)?;
        Some(PfcAttempt { port: self, draft, frame })
    }

    /// A PAUSE (`pause_quanta`) for `priorities` was put on the wire at `at` by another
    /// lcore (the worker that saw the Xoff crossing sends it at once, for the shortest
    /// reaction): take it into account as if this sender had sent it, so refreshes and
    /// the RESUME follow from it. A priority already OFF still counts the frame (it was
    /// sent). `frames`: the first PAUSE and the refreshes the worker sent before this
    /// sender took over (the OFF time still starts at `at`, the first one).
    pub fn note_sent_pause(&mut self, priorities: u8, at: u64, frames: u64) {
        let mut draft = Draft::new(&self.prio);
        for i in 0..8 {
            if priorities & (1 << i) == 0 {
                continue;
            }
            if draft.prio[i].on_edge(EdgeKind::Pause, at).is_some() {
                draft.delta[i].on2off += 1;
            }
            draft.prio[i].noted_elsewhere(at, frames);
            draft.delta[i].pause_frames += frames;
        }
        let frame = MacControl::pfc_pause(priorities, self.cfg.pause_quanta);
        let _ = PfcAttempt { port: self, draft, frame }.commit();
    }

    /// The quanta PAUSE frames carry.
    pub fn pause_quanta(&self) -> u16 {
        self.cfg.pause_quanta
    }

    /// [`prepare_edge`](Self::prepare_edge) and commit at once: for callers whose
    /// sending cannot fail.
    pub fn on_edge(&mut self, priorities: u8, kind: EdgeKind, now: u64) -> Option<MacControl> {
        self.prepare_edge(priorities, kind, now).map(PfcAttempt::commit)
    }

    /// [`prepare_poll`](Self::prepare_poll) and commit at once.
    pub fn poll(&mut self, now: u64) -> Option<MacControl> {
        self.prepare_poll(now).map(PfcAttempt::commit)
    }

    /// Earliest refresh deadline over all priorities.
    pub fn next_deadline(&self) -> Option<u64> {
        self.prio.iter().filter_map(PfcTx::next_deadline).min()
    }
}
