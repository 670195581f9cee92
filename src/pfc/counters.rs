//! Per-(port, priority) PFC counters, SAI style. Each struct has exactly one writer (the
//! TX half: control lcore; the RX half: the port's RX worker), so they are the switch's
//! single-writer [`Counter`]s; any thread may read.

use crate::counters::Counter;

/// One priority, transmit side.
#[derive(Debug, Default)]
pub struct PrioTx {
    /// PFC frames sent with a non-zero time for this priority (PAUSE and refreshes).
    pub pause_frames: Counter,
    /// PFC frames sent with time 0 for this priority (RESUME).
    pub resume_frames: Counter,
    /// TSC ticks this priority spent asserted OFF by us (TxWait).
    pub pause_ticks: Counter,
    /// ON→OFF transitions (PAUSE edges).
    pub on2off: Counter,
    /// Refreshes sent more than the pause time after the previous PAUSE: the peer was
    /// free to send into a PG still OFF in between (the control lcore came late).
    pub late_refreshes: Counter,
}

/// One priority, receive side.
#[derive(Debug, Default)]
pub struct PrioRx {
    /// PFC frames received with this class enabled and a non-zero time.
    pub pause_frames: Counter,
    /// PFC frames received with this class enabled and time 0.
    pub resume_frames: Counter,
    /// TSC ticks this priority was paused by the peer (RxWait).
    pub pause_ticks: Counter,
    /// Frames that paused a running priority (SAI `PFC_n_ON2OFF_RX_PKTS`).
    pub on2off: Counter,
}

/// Transmit counters of one port.
#[derive(Debug, Default)]
pub struct PfcTxCounters {
    /// Per priority.
    pub prio: [PrioTx; 8],
}

/// Receive counters of one port.
#[derive(Debug, Default)]
pub struct PfcRxCounters {
    /// Per priority.
    pub prio: [PrioRx; 8],
    /// 802.3x PAUSE frames with a non-zero time (they pause every priority).
    pub link_pause_frames: Counter,
    /// 802.3x PAUSE frames with time 0.
    pub link_resume_frames: Counter,
    /// PFC frames whose class-enable bits were all for priorities without PFC enabled.
    pub ignored_frames: Counter,
    /// 802.3x PAUSE frames ignored (a port with PFC, `pause_8023x = "ignore"`).
    pub link_pause_ignored: Counter,
}

/// A consistent-enough snapshot of one priority. SAI mapping:
/// `rx_pkts()` = `SAI_PORT_STAT_PFC_n_RX_PKTS`, `tx_pkts()` = `..._TX_PKTS`,
/// `rx_pause_duration_us` = `..._RX_PAUSE_DURATION_US`, `tx_pause_duration_us` =
/// `..._TX_PAUSE_DURATION_US`, `rx_on2off` = `..._ON2OFF_RX_PKTS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PfcPrioStats {
    /// PAUSE frames received.
    pub rx_pause: u64,
    /// RESUME frames received.
    pub rx_resume: u64,
    /// PAUSE frames (incl. refreshes) sent.
    pub tx_pause: u64,
    /// RESUME frames sent.
    pub tx_resume: u64,
    /// Time paused by the peer, µs.
    pub rx_pause_duration_us: u64,
    /// Time we asserted pause, µs.
    pub tx_pause_duration_us: u64,
    /// Running → paused transitions caused by received frames.
    pub rx_on2off: u64,
    /// Our PAUSE edges.
    pub tx_on2off: u64,
    /// Our refreshes sent after the previous PAUSE had expired ([`PrioTx::late_refreshes`]).
    pub tx_late_refresh: u64,
}

impl PfcPrioStats {
    /// All PFC frames received for this priority.
    pub fn rx_pkts(&self) -> u64 {
        self.rx_pause + self.rx_resume
    }
    /// All PFC frames sent for this priority.
    pub fn tx_pkts(&self) -> u64 {
        self.tx_pause + self.tx_resume
    }

    /// Combines both halves of a port into 8 snapshots.
    pub fn snapshot(tx: &PfcTxCounters, rx: &PfcRxCounters, tsc_hz: u64) -> [PfcPrioStats; 8] {
        let mut out = [PfcPrioStats::default(); 8];
        for ((o, t), r) in out.iter_mut().zip(&tx.prio).zip(&rx.prio) {
            *o = PfcPrioStats {
                rx_pause: r.pause_frames.get(),
                rx_resume: r.resume_frames.get(),
                tx_pause: t.pause_frames.get(),
                tx_resume: t.resume_frames.get(),
                rx_pause_duration_us: super::ticks_to_us(r.pause_ticks.get(), tsc_hz),
                tx_pause_duration_us: super::ticks_to_us(t.pause_ticks.get(), tsc_hz),
                rx_on2off: r.on2off.get(),
                tx_on2off: t.on2off.get(),
                tx_late_refresh: t.late_refreshes.get(),
            };
        }
        out
    }
}
