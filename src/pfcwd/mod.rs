//! PFC watchdog (storm / deadlock detection), SONiC semantics. Pure: every function takes
//! `now` in TSC ticks; nothing reads a clock.
//!
//! Per (port, lossless priority) the watchdog runs this state machine:
//!
//! * **Operational → stormed.** The priority is *stalled* at a poll when the peer has it
//!   paused (its PFC pause deadline is in the future), its egress queue holds packets, and
//!   the queue sent nothing since the previous poll. A priority that stays stalled at every
//!   poll for `detection_time` is declared stormed. The clock starts at the first poll that
//!   sees the stall, or later: if the peer's pause lapsed and began again in between (an
//!   ON→OFF edge on the RX side, [`PfcwdRxStamps::note_rx`]), it starts at that edge. A
//!   storm is therefore never declared before `detection_time` of continuous pause and
//!   is declared at most one poll interval after it.
//!
//!   A paused but **empty** queue is not stalled (as SONiC's Broadcom detection, which
//!   requires queue occupancy > 0, and Junos): nothing is stuck, so nothing deadlocks; the
//!   clock starts once packets are queued and do not drain. A paused queue that still
//!   transmits (PFC frames with short times, gaps) is not stalled either.
//!
//! * **Stormed → operational.** Restored once no PAUSE frame (non-zero time) was received
//!   for the priority during `restoration_time`, counted from the later of the storm's
//!   detection and the last PAUSE. XON frames (time 0) never extend a storm — they are not
//!   PAUSE frames — and a stream of XONs alone never starts one (they clear the pause).
//!   While stormed with action `drop` or `forward` the datapath *ignores* the peer's PFC
//!   frames for pausing that priority, but the RX path still processes them and stamps
//!   [`PfcwdRxStamps`], so the watchdog still *sees* the storm go on. After restoration the
//!   priority obeys PFC again and a storm needs a full `detection_time` to be declared anew.
//!
//! Actions while stormed ([`Action`], SONiC `PFC_WD|<port>|action`):
//!
//! | action    | [`Pfcwd::ignore_pfc_mask`] | [`Pfcwd::drop_mask`] | datapath                                          |
//! |-----------|----------------------------|----------------------|---------------------------------------------------|
//! | `drop`    | set                        | set                  | flush the queue, drop arrivals, transmit nothing of that priority (`tx_dropped`); SONiC also drops packets *received* on the stormed port with that priority (`rx_dropped`) |
//! | `forward` | set                        | —                    | transmit as if not paused (`tx_ok` counts them)   |
//! | `alert`   | —                          | —                    | count and report only; PFC still obeyed           |
//!
//! # Threads
//!
//! * [`Pfcwd`]: one per port, owned by the lcore that owns the port's TX (it knows the
//!   queue depths and what was sent). It writes [`PfcwdPortState`].
//! * [`PfcwdRxStamps`]: one per port, written by the lcore that owns the port's
//!   [`crate::pfc::PfcRx`] (single writer), read by the [`Pfcwd`] owner.
//! * [`PfcwdPortState`]: per-priority `stormed` flags, the current masks (for workers that
//!   enqueue to the port) and counters, readable by any thread (telemetry). `stormed`, the
//!   masks and `storms_detected`/`storms_restored` have one writer (the [`Pfcwd`] owner).
//!   The packet counters (`tx_ok`, `tx_dropped`, `rx_ok`, `rx_dropped`) may be bumped by
//!   several lcores (any worker may enqueue to a port, a port's RX queues may be polled by
//!   several workers), so they use `fetch_add`; they are only bumped while a storm is on.
//!
//! # How the dataplane calls it
//!
//! ```text
//! // setup, per port with PFC enabled (pfc_mask = PortPlan::pfc_mask):
//! let wd = Pfcwd::new(&cfg.pfcwd, tsc_hz, pfc_mask);   // moved to the TX owner
//! let stamps = wd.rx_stamps();                          // to the PfcRx owner
//! let state = wd.state();                               // to workers + telemetry
//!
//! // RX lcore, after each MAC Control frame:
//! let out = pfc_rx.on_frame(&frame, now, tsc_hz);
//! stamps.note_rx(&out, now);
//!
//! // TX lcore, every loop:
//! let paused = deadlines.paused_mask(now);            // raw, from the peer
//! let obey = paused & !wd.ignore_pfc_mask();           // what the scheduler honours
//! // ... schedule; progress |= priorities that sent >= 1 packet ...
//! if wd.due(now) {
//!     let t = wd.poll(now, paused, nonempty_prios, progress);
//!     progress = 0;
//!     // t.detected & wd.drop_mask(): flush those queues, state.count_tx_dropped(p, n)
//! }
//! // every enqueue to a priority in state.drop_mask(): drop, count_tx_dropped(p, 1)
//! ```
//!
//! Masks are by *priority* (bit n = priority n). Queue masks map to priorities through
//! `PortPlan::priority_queue`: [`prio_mask_from_queues`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::*};
use std::sync::Arc;

use crate::pfc::RxOutcome;

/// SONiC `DEFAULT_DETECTION_TIME` (ms).
pub const DEFAULT_DETECTION_TIME_MS: u32 = 200;
/// SONiC `DEFAULT_RESTORATION_TIME` (ms).
pub const DEFAULT_RESTORATION_TIME_MS: u32 = 200;
/// Our default poll interval (ms). SONiC's `DEFAULT_POLL_INTERVAL` is 200 ms, bounded by
/// the cost of polling ASIC counters; here a poll is a few loads on the TX lcore, so we
/// poll often and detect within `detection_time + 10 ms`. Set 200 for SONiC timing.
pub const DEFAULT_POLL_INTERVAL_MS: u32 = 10;
/// SONiC CLI range of `detection_time` (`pfcwd start ... DETECTION_TIME`), ms.
pub const DETECTION_TIME_RANGE_MS: (u32, u32) = (100, 5000);
/// SONiC CLI range of `restoration_time`, ms.
pub const RESTORATION_TIME_RANGE_MS: (u32, u32) = (100, 60000);
/// Accepted poll intervals, ms (SONiC: 100..=1000; we allow faster).
pub const POLL_INTERVAL_RANGE_MS: (u32, u32) = (1, 1000);

/// What to do with a stormed priority (SONiC `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Action {
    /// Ignore PFC on the priority, flush its queue and drop its arrivals (SONiC default).
    #[default]
    Drop,
    /// Ignore PFC on the priority: transmit as if not paused.
    Forward,
    /// Report and count only.
    Alert,
}

impl Action {
    /// The SONiC name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Drop => "drop",
            Action::Forward => "forward",
            Action::Alert => "alert",
        }
    }

    /// Parses a SONiC name (`drop`, `forward`, `alert`).
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "drop" => Some(Action::Drop),
            "forward" => Some(Action::Forward),
            "alert" => Some(Action::Alert),
            _ => None,
        }
    }

    /// Does a storm with this action make the datapath ignore PFC?
    pub fn ignores_pfc(self) -> bool {
        !matches!(self, Action::Alert)
    }

    /// Does a storm with this action drop the priority's packets?
    pub fn drops(self) -> bool {
        matches!(self, Action::Drop)
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Watchdog configuration of a port (SONiC `PFC_WD|<port>` + `PFC_WD|GLOBAL|POLL_INTERVAL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcwdConfig {
    pub action: Action,
    pub detection_time_ms: u32,
    pub restoration_time_ms: u32,
    pub poll_interval_ms: u32,
}

impl Default for PfcwdConfig {
    /// SONiC defaults: drop, 200 ms, 200 ms; poll every [`DEFAULT_POLL_INTERVAL_MS`].
    fn default() -> Self {
        PfcwdConfig {
            action: Action::Drop,
            detection_time_ms: DEFAULT_DETECTION_TIME_MS,
            restoration_time_ms: DEFAULT_RESTORATION_TIME_MS,
            poll_interval_ms: DEFAULT_POLL_INTERVAL_MS,
        }
    }
}

impl PfcwdConfig {
    /// Checks the SONiC ranges and that the poll interval is not longer than either time
    /// (SONiC refuses such an interval too). `Err` is `(field, one-line message)`, for
    /// the config module to wrap as `<file>: <section>.<field>: <message>`.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let range = |field, v: u32, (lo, hi): (u32, u32)| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err((field, format!("{v} ms out of range {lo}..={hi} ms")))
            }
        };
        range("detection_time", self.detection_time_ms, DETECTION_TIME_RANGE_MS)?;
        range("restoration_time", self.restoration_time_ms, RESTORATION_TIME_RANGE_MS)?;
        range("poll_interval", self.poll_interval_ms, POLL_INTERVAL_RANGE_MS)?;
        let min = self.detection_time_ms.min(self.restoration_time_ms);
        if self.poll_interval_ms > min {
            return Err((
                "poll_interval",
                format!("{} ms is longer than detection_time/restoration_time ({min} ms)", self.poll_interval_ms),
            ));
        }
        Ok(())
    }
}

/// `ms` milliseconds in TSC ticks (exact in u128, saturating).
pub fn ms_to_ticks(ms: u32, tsc_hz: u64) -> u64 {
    u64::try_from(u128::from(ms) * u128::from(tsc_hz) / 1000).unwrap_or(u64::MAX)
}

/// Priorities whose egress queue is in `queue_mask`, given `priority_queue[p]` = the queue
/// priority `p` maps to (`PortPlan::priority_queue`).
pub fn prio_mask_from_queues(queue_mask: u8, priority_queue: &[u8; 8]) -> u8 {
    priority_queue.iter().enumerate().fold(
        0,
        |m, (p, &q)| {
            if q < 8 && queue_mask & (1 << q) != 0 {
                m | 1 << p
            } else {
                m
            }
        },
    )
}

/// Receive-side stamps of one port: when the last PAUSE (non-zero time) was received per
/// priority, and when the current pause began (the last ON→OFF edge). One writer: the
/// lcore that owns the port's [`crate::pfc::PfcRx`]; read by the [`Pfcwd`] owner.
#[derive(Debug, Default)]
pub struct PfcwdRxStamps {
    last_pause: [AtomicU64; 8],
    began: [AtomicU64; 8],
}

impl PfcwdRxStamps {
    /// A PAUSE with a non-zero time was received at `now` for priorities `prio_mask`.
    /// Never call it for XON (time 0) frames.
    #[inline]
    pub fn note_pause(&self, prio_mask: u8, now: u64) {
        for i in 0..8 {
            if prio_mask & (1 << i) != 0 {
                self.last_pause[i].store(now, Release);
            }
        }
    }

    /// A pause of priorities `prio_mask` began at `now` (they were running before).
    #[inline]
    pub fn note_pause_began(&self, prio_mask: u8, now: u64) {
        for i in 0..8 {
            if prio_mask & (1 << i) != 0 {
                self.began[i].store(now, Release);
            }
        }
    }

    /// Everything at once from what [`crate::pfc::PfcRx::on_frame`] reported: `paused`
    /// are PAUSEs (XON frames appear only in `resumed`), `on2off` the edges.
    #[inline]
    pub fn note_rx(&self, out: &RxOutcome, now: u64) {
        if out.paused != 0 {
            self.note_pause(out.paused, now);
            self.note_pause_began(out.on2off, now);
        }
    }

    /// TSC of the last PAUSE received for `prio` (0 = none yet).
    pub fn last_pause(&self, prio: u8) -> u64 {
        self.last_pause.get(usize::from(prio)).map_or(0, |a| a.load(Acquire))
    }

    /// TSC of the last ON→OFF edge of `prio` (0 = none yet).
    pub fn pause_began(&self, prio: u8) -> u64 {
        self.began.get(usize::from(prio)).map_or(0, |a| a.load(Acquire))
    }
}

/// Telemetry and datapath-visible state of one priority.
#[derive(Debug, Default)]
pub struct PfcwdPrioState {
    /// Currently stormed (SONiC `PFC_WD_STATUS` = `stormed`, else `operational`).
    pub stormed: AtomicBool,
    /// `PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED`.
    pub storms_detected: AtomicU64,
    /// `PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED`.
    pub storms_restored: AtomicU64,
    /// Packets of this priority transmitted while stormed (`forward`).
    pub tx_ok: AtomicU64,
    /// Packets of this priority dropped at egress by the watchdog (flush + arrivals).
    pub tx_dropped: AtomicU64,
    /// Packets received on this port with this priority while stormed and passed.
    pub rx_ok: AtomicU64,
    /// Packets received on this port with this priority dropped while stormed (`drop`).
    pub rx_dropped: AtomicU64,
    /// TSC of the last detection (0 = never).
    pub last_detected_tsc: AtomicU64,
    /// TSC of the last restoration (0 = never).
    pub last_restored_tsc: AtomicU64,
}

/// Plain copy of one priority's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PfcwdPrioSnapshot {
    pub stormed: bool,
    pub storms_detected: u64,
    pub storms_restored: u64,
    pub tx_ok: u64,
    pub tx_dropped: u64,
    pub rx_ok: u64,
    pub rx_dropped: u64,
}

impl PfcwdPrioSnapshot {
    /// SONiC `PFC_WD_STATUS`.
    pub fn status(&self) -> &'static str {
        if self.stormed {
            "stormed"
        } else {
            "operational"
        }
    }
}

/// Shared state of one port's watchdog.
#[derive(Debug, Default)]
pub struct PfcwdPortState {
    pub prio: [PfcwdPrioState; 8],
    watch: AtomicU8,
    ignore: AtomicU8,
    drop: AtomicU8,
}

impl PfcwdPortState {
    /// Priorities the watchdog monitors.
    pub fn watch_mask(&self) -> u8 {
        self.watch.load(Relaxed)
    }
    /// Priorities whose PFC is ignored now (stormed, action drop/forward).
    #[inline]
    pub fn ignore_pfc_mask(&self) -> u8 {
        self.ignore.load(Acquire)
    }
    /// Priorities whose packets are dropped now (stormed, action drop).
    #[inline]
    pub fn drop_mask(&self) -> u8 {
        self.drop.load(Acquire)
    }
    /// Stormed priorities (any action).
    pub fn stormed_mask(&self) -> u8 {
        self.prio.iter().enumerate().fold(0, |m, (i, p)| if p.stormed.load(Acquire) { m | 1 << i } else { m })
    }
    #[inline]
    fn add(&self, prio: u8, n: u64, f: impl Fn(&PfcwdPrioState) -> &AtomicU64) {
        if let Some(p) = self.prio.get(usize::from(prio)) {
            f(p).fetch_add(n, Relaxed);
        }
    }
    /// `n` packets of `prio` dropped at egress by the watchdog (any lcore).
    #[inline]
    pub fn count_tx_dropped(&self, prio: u8, n: u64) {
        self.add(prio, n, |p| &p.tx_dropped)
    }
    /// `n` packets of stormed `prio` transmitted (any lcore).
    #[inline]
    pub fn count_tx_ok(&self, prio: u8, n: u64) {
        self.add(prio, n, |p| &p.tx_ok)
    }
    /// `n` packets received with stormed `prio` dropped (any lcore).
    #[inline]
    pub fn count_rx_dropped(&self, prio: u8, n: u64) {
        self.add(prio, n, |p| &p.rx_dropped)
    }
    /// `n` packets received with stormed `prio` passed (any lcore).
    #[inline]
    pub fn count_rx_ok(&self, prio: u8, n: u64) {
        self.add(prio, n, |p| &p.rx_ok)
    }
    /// Snapshot of `prio` (priorities ≥ 8 read as zero).
    pub fn snapshot(&self, prio: u8) -> PfcwdPrioSnapshot {
        self.prio.get(usize::from(prio)).map_or_else(PfcwdPrioSnapshot::default, |p| PfcwdPrioSnapshot {
            stormed: p.stormed.load(Acquire),
            storms_detected: p.storms_detected.load(Relaxed),
            storms_restored: p.storms_restored.load(Relaxed),
            tx_ok: p.tx_ok.load(Relaxed),
            tx_dropped: p.tx_dropped.load(Relaxed),
            rx_ok: p.rx_ok.load(Relaxed),
            rx_dropped: p.rx_dropped.load(Relaxed),
        })
    }
    /// The keys `show pfcwd stats` renders (`prio<n>_status`, `prio<n>_storms_detected`,
    /// `prio<n>_storms_restored`, `prio<n>_tx_ok`, `prio<n>_tx_dropped`, `prio<n>_rx_ok`,
    /// `prio<n>_rx_dropped`) for every watched priority, into a port's telemetry object.
    pub fn write_telemetry(&self, o: &mut serde_json::Map<String, serde_json::Value>) {
        let watch = self.watch_mask();
        for n in 0..8u8 {
            if watch & (1 << n) == 0 {
                continue;
            }
            let s = self.snapshot(n);
            o.insert(format!("prio{n}_status"), s.status().into());
            for (k, v) in [
                ("storms_detected", s.storms_detected),
                ("storms_restored", s.storms_restored),
                ("tx_ok", s.tx_ok),
                ("tx_dropped", s.tx_dropped),
                ("rx_ok", s.rx_ok),
                ("rx_dropped", s.rx_dropped),
            ] {
                o.insert(format!("prio{n}_{k}"), v.into());
            }
        }
    }
}

/// What one [`Pfcwd::poll`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Transitions {
    /// Priorities declared stormed at this poll.
    pub detected: u8,
    /// Priorities restored at this poll.
    pub restored: u8,
}

impl Transitions {
    pub fn is_empty(&self) -> bool {
        self.detected == 0 && self.restored == 0
    }
}

const NONE: u64 = u64::MAX;

#[derive(Debug, Clone, Copy)]
struct Prio {
    /// Start of the current stall (NONE = not stalled).
    stall_since: u64,
    /// Detection time of the current storm (NONE = operational).
    stormed_at: u64,
}

/// The watchdog of one port. Owned by the port's TX lcore.
#[derive(Debug)]
pub struct Pfcwd {
    action: Action,
    detection: u64,
    restoration: u64,
    interval: u64,
    watch: u8,
    next_poll: u64,
    ignore: u8,
    drop: u8,
    prio: [Prio; 8],
    stamps: Arc<PfcwdRxStamps>,
    state: Arc<PfcwdPortState>,
}

impl Pfcwd {
    /// Watchdog for priorities `watch_mask` (normally the port's `pfc_enable`); times in
    /// ms converted with `tsc_hz`. Does not validate `cfg` (see [`PfcwdConfig::validate`]).
    pub fn new(cfg: &PfcwdConfig, tsc_hz: u64, watch_mask: u8) -> Pfcwd {
        Pfcwd::with_ticks(
            cfg.action,
            ms_to_ticks(cfg.detection_time_ms, tsc_hz),
            ms_to_ticks(cfg.restoration_time_ms, tsc_hz),
            ms_to_ticks(cfg.poll_interval_ms, tsc_hz),
            watch_mask,
        )
    }

    /// Same with times in ticks.
    pub fn with_ticks(
        action: Action,
        detection_ticks: u64,
        restoration_ticks: u64,
        poll_interval_ticks: u64,
        watch_mask: u8,
    ) -> Pfcwd {
        let state = Arc::new(PfcwdPortState::default());
        state.watch.store(watch_mask, Relaxed);
        Pfcwd {
            action,
            detection: detection_ticks,
            restoration: restoration_ticks,
            interval: poll_interval_ticks,
            watch: watch_mask,
            next_poll: 0,
            ignore: 0,
            drop: 0,
            prio: [Prio { stall_since: NONE, stormed_at: NONE }; 8],
            stamps: Arc::default(),
            state,
        }
    }

    /// The stamps to hand to the port's RX (PfcRx owner) lcore.
    pub fn rx_stamps(&self) -> Arc<PfcwdRxStamps> {
        Arc::clone(&self.stamps)
    }

    /// The shared state, for workers (masks) and telemetry.
    pub fn state(&self) -> Arc<PfcwdPortState> {
        Arc::clone(&self.state)
    }

    pub fn action(&self) -> Action {
        self.action
    }

    /// Priorities watched.
    pub fn watch_mask(&self) -> u8 {
        self.watch
    }

    /// Priorities whose PFC the scheduler must ignore now.
    #[inline]
    pub fn ignore_pfc_mask(&self) -> u8 {
        self.ignore
    }

    /// Priorities whose queue must be flushed and arrivals dropped now.
    #[inline]
    pub fn drop_mask(&self) -> u8 {
        self.drop
    }

    /// Stormed priorities (any action).
    pub fn stormed_mask(&self) -> u8 {
        self.prio.iter().enumerate().fold(0, |m, (i, p)| if p.stormed_at != NONE { m | 1 << i } else { m })
    }

    /// True when a poll is due (one poll interval after the previous one). Calling
    /// [`poll`](Self::poll) more often is correct too, only costlier.
    #[inline]
    pub fn due(&self, now: u64) -> bool {
        now >= self.next_poll
    }

    /// One watchdog step at `now`. Masks by priority: `paused` = the peer's pause is in
    /// force (raw [`crate::pfc::PauseDeadlines::paused_mask`], *not* reduced by
    /// [`ignore_pfc_mask`](Self::ignore_pfc_mask)); `nonempty` = the priority's egress
    /// queue holds packets; `progress` = it sent ≥ 1 packet since the previous poll.
    pub fn poll(&mut self, now: u64, paused: u8, nonempty: u8, progress: u8) -> Transitions {
        self.next_poll = now.saturating_add(self.interval.max(1));
        let mut t = Transitions::default();
        if self.watch == 0 {
            return t;
        }
        let stalled = paused & nonempty & !progress & self.watch;
        for i in 0..8u8 {
            let bit = 1u8 << i;
            if self.watch & bit == 0 {
                continue;
            }
            let p = &mut self.prio[usize::from(i)];
            if p.stormed_at == NONE {
                if stalled & bit == 0 {
                    p.stall_since = NONE;
                    continue;
                }
                // A pause that began after the stall was first seen restarts the clock
                // (the pause lapsed in between, unseen by the polls).
                let began = self.stamps.pause_began(i);
                let since = if p.stall_since == NONE { now } else { p.stall_since };
                p.stall_since = since.max(began.min(now));
                if now - p.stall_since >= self.detection {
                    p.stormed_at = now;
                    p.stall_since = NONE;
                    t.detected |= bit;
                }
            } else {
                let quiet_since = self.stamps.last_pause(i).max(p.stormed_at);
                if now.saturating_sub(quiet_since) >= self.restoration {
                    p.stormed_at = NONE;
                    p.stall_since = NONE;
                    t.restored |= bit;
                }
            }
        }
        if !t.is_empty() {
            self.publish(now, t);
        }
        t
    }

    /// A new action and new times (`pfcswitch config pfcwd`), keeping what the watchdog
    /// has seen: a stall being timed keeps its start, a storm stays a storm until the new
    /// restoration time, and the stormed priorities' masks follow the new action at once.
    /// The next poll comes no later than one new interval after the last. Does not
    /// validate `cfg`.
    pub fn reconfigure(&mut self, cfg: &PfcwdConfig, tsc_hz: u64) {
        let interval = ms_to_ticks(cfg.poll_interval_ms, tsc_hz);
        let last_poll = self.next_poll.saturating_sub(self.interval.max(1));
        self.next_poll = self.next_poll.min(last_poll.saturating_add(interval.max(1)));
        self.interval = interval;
        self.action = cfg.action;
        self.detection = ms_to_ticks(cfg.detection_time_ms, tsc_hz);
        self.restoration = ms_to_ticks(cfg.restoration_time_ms, tsc_hz);
        self.set_masks();
    }

    /// Priorities watched from now (`config pfc` changed the port's PFC set): one no
    /// longer watched is restored at once if stormed, and forgotten.
    pub fn set_watch(&mut self, watch_mask: u8) {
        for (i, p) in self.prio.iter_mut().enumerate() {
            if watch_mask & (1 << i) == 0 {
                p.stall_since = NONE;
                p.stormed_at = NONE;
                self.state.prio[i].stormed.store(false, Release);
            }
        }
        self.watch = watch_mask;
        self.state.watch.store(watch_mask, Relaxed);
        self.set_masks();
    }

    /// What the stormed priorities' action asks of the scheduler, here and shared.
    fn set_masks(&mut self) {
        let stormed = self.stormed_mask();
        self.ignore = if self.action.ignores_pfc() { stormed } else { 0 };
        self.drop = if self.action.drops() { stormed } else { 0 };
        self.state.ignore.store(self.ignore, Release);
        self.state.drop.store(self.drop, Release);
    }

    fn publish(&mut self, now: u64, t: Transitions) {
        let s = &*self.state;
        for i in 0..8 {
            let bit = 1u8 << i;
            let p = &s.prio[i];
            if t.detected & bit != 0 {
                p.storms_detected.store(p.storms_detected.load(Relaxed) + 1, Relaxed);
                p.last_detected_tsc.store(now, Relaxed);
                p.stormed.store(true, Release);
            }
            if t.restored & bit != 0 {
                p.storms_restored.store(p.storms_restored.load(Relaxed) + 1, Relaxed);
                p.last_restored_tsc.store(now, Relaxed);
                p.stormed.store(false, Release);
            }
        }
        self.set_masks();
    }
}

#[cfg(test)]
mod tests;
