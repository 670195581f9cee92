//! State every lcore sees: per-port runtime state, the egress ports, the per-lcore
//! counters, the MMU, and the edge rings to the control lcore; and the two things every
//! lcore does with it after admission (hand an MMU edge over, drop an admitted packet).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;

use crate::counters::{DropReason, LcoreCounters};
use crate::dpdk::Mempool;
use crate::mmu::{Edge, Mmu};
use crate::pfc::{PauseDeadlines, PfcRxCounters};
use crate::plan::PortPlan;
use crate::wire::MacAddr;

use super::egress::{EgressPort, Queued};
use super::latency;
use super::pause_handoff::PauseSlot;

/// An MMU edge on its way to the control lcore, with the TSC of the admission or
/// release that caused it.
#[derive(Debug, Clone, Copy)]
pub struct EdgeMsg {
    pub edge: Edge,
    pub tsc: u64,
}

/// Per port, what every lcore may read.
pub struct PortRt {
    pub name: String,
    pub plan: PortPlan,
    pub speed_bps: u64,
    /// The port's MAC (source of its PFC frames).
    pub mac: MacAddr,
    /// Pause deadlines set by received PFC frames (written by the RX lcore).
    pub rx_pause: Arc<PauseDeadlines>,
    pub pfc_rx_counters: Arc<PfcRxCounters>,
    /// Data transmission allowed (test knob `tx_enable`; SIGUSR1 turns it on).
    pub tx_enable: AtomicBool,
    /// While `tx_enable` is false: data packets that may still leave, one by one
    /// (`/pfcswitch/tx_release`, what `pfcswitch probe` drains with).
    pub tx_credit: AtomicU64,
    /// Link up, as read at start and then by the control lcore every millisecond (a link
    /// that never came up is down).
    pub link_up: AtomicBool,
    /// The DPDK port id of this port's kernel representor (a router interface): its
    /// netdev is taken down with the link, so the kernel withdraws what it routed there.
    pub representor_id: Option<u16>,
    /// A physical or kernel link whose reported speed is real (not a vdev's nominal one).
    pub real_link: bool,
    /// PFC frames leave on TX queue 1 (`control_tx_queue`).
    pub control_txq: bool,
    pub latency: latency::PortLatency,
    /// PFC watchdog state of this port's priorities (None = watchdog off).
    pub pfcwd: Option<Arc<crate::pfcwd::PfcwdPortState>>,
    /// PFC priorities and lossless PGs in force (`config pfc` may replace them).
    pub pfc: super::pfc_live::PfcLive,
    /// 802.3x PAUSE obeyed here (the watchdog then watches every priority).
    pub obey_8023x: bool,
    /// WRED profiles and watchdog settings a live change may replace.
    pub tx_live: super::tx_live::TxLive,
    /// Per PG: the worker → control lcore PAUSE hand-off ([`super::pause_handoff`]).
    pub pause: [PauseSlot; 8],
    /// PFC/PAUSE frames received on an RX queue other than the one whose lcore owns this
    /// port's receive-side PFC state (queue 0), with their RX TSC: the owner applies them.
    pub pfc_inbox: ArrayQueue<(crate::wire::MacControl, u64)>,
    /// Refresh interval of a PAUSE on this port, TSC ticks (as the control lcore's).
    pub refresh_ticks: u64,
}

/// State every lcore sees.
pub struct Shared {
    /// Output for the I/O thread (printing and file writing never happen on an lcore).
    pub io: Arc<super::io::IoSink>,
    pub running: AtomicBool,
    /// Workers that have left their loop (none enqueues any more once all have).
    pub workers_stopped: AtomicUsize,
    /// Workers that were launched (the ones `workers_stopped` waits for at stop).
    pub workers_launched: AtomicUsize,
    /// Stopping: workers stop receiving (no new admissions, no new PAUSE) but keep
    /// transmitting, so the control lcore's last RESUMEs leave before the ports stop.
    pub rx_stopped: AtomicBool,
    /// Workers that have seen `rx_stopped`.
    pub workers_rx_stopped: AtomicUsize,
    pub egress: Vec<EgressPort>,
    /// One per worker, indexed by the worker's index (not its lcore id).
    pub counters: Vec<CachePadded<LcoreCounters>>,
    pub pool: Arc<Mempool>,
    pub mmu: Mmu,
    /// The learning table every worker reads and writes (aged by the control lcore).
    pub fdb: crate::fdb::SharedFdb,
    /// The VLANs: each frame's bridging domain, flood sets and egress tags.
    pub vlans: crate::vlan::Vlans,
    pub ports: Vec<PortRt>,
    /// One single-producer ring per worker to the control lcore.
    pub edges: Vec<ArrayQueue<EdgeMsg>>,
    /// Mbufs for PFC frames, apart so that data can never starve them.
    pub ctl_pool: Arc<Mempool>,
    /// Time carried by PAUSE frames.
    pub pause_quanta: u16,
    /// Per port: the worker that owns its TX (None: no worker does).
    pub tx_owner: Vec<Option<usize>>,
    /// Per worker: its doorbell — set while it naps (adaptive idle), and its thread, to
    /// wake it when a PFC frame is queued for a port it transmits.
    pub doorbells: Vec<Doorbell>,
    /// LLDP: received frames on their way to the control lcore, and the agent's view.
    pub lldp: super::lldp_shared::LldpShared,
    /// Live reconfiguration: changes validated by the telemetry thread, installed by the
    /// control lcore.
    pub reconfig: super::reconfig_shared::ReconfigShared,
    /// The control lcore's doorbell: an edge queued for it ends its nap, so a RESUME
    /// never waits for the end of one.
    pub control_bell: Doorbell,
    /// Bit p: port p's link is down (ports 0..64; kept with `PortRt::link_up` by the
    /// control lcore). Read once a burst by the router, which skips dead ECMP members
    /// before the kernel's withdrawals arrive.
    pub link_down_mask: AtomicU64,
}

/// A worker's doorbell: whoever queues a PFC frame for one of its ports wakes it if it
/// naps, so another worker's PAUSE never waits for the end of a nap (up to 1 ms).
#[derive(Default)]
pub struct Doorbell {
    napping: CachePadded<AtomicBool>,
    thread: std::sync::OnceLock<std::thread::Thread>,
}

impl Doorbell {
    /// The worker, on its own thread, before its first nap.
    pub fn register(&self) {
        let _ = self.thread.set(std::thread::current());
    }

    /// Nap up to `d` unless `still_idle()` says otherwise once the doorbell is armed; a
    /// ring during the nap ends it. (The flag is published before the check, and a ring
    /// checks the flag after queueing: one of the two sees the other.)
    pub fn nap(&self, d: std::time::Duration, still_idle: impl FnOnce() -> bool) -> bool {
        self.napping.store(true, Ordering::SeqCst);
        let napped = still_idle();
        if napped {
            std::thread::park_timeout(d);
        }
        self.napping.store(false, Ordering::SeqCst);
        napped
    }

    /// Wake the worker if it naps (a futex wake: only when a PFC frame was just queued
    /// for a napping owner, never on a packet's way).
    #[inline]
    pub fn ring(&self) {
        if self.napping.load(Ordering::SeqCst) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }
}

impl Shared {
    /// Hand an MMU edge to the control lcore through `worker`'s single-producer ring.
    #[inline]
    pub fn push_edge(&self, worker: usize, edge: Option<Edge>, now: u64, c: &LcoreCounters) {
        if let Some(edge) = edge {
            if self.edges[worker].push(EdgeMsg { edge, tsc: now }).is_err() {
                c.worker.edge_overflow.inc();
            }
            self.control_bell.ring();
        }
    }

    /// A packet admitted by the MMU that will not be sent after all: give back its charge
    /// and count it where it would have been counted.
    pub fn drop_admitted(&self, worker: usize, q: Queued, why: DropReason, now: u64, c: &LcoreCounters) {
        self.push_edge(worker, self.mmu.release(q.charge), now, c);
        c.count_drop(q.drop_site(), why, 1);
    }

    /// Queue a PFC PAUSE for `prios` on `port`'s control queue. `edge_tsc`: the Xoff
    /// crossing it reacts to, 0 for a refresh.
    pub fn queue_pause(&self, port: usize, prios: u8, edge_tsc: u64) -> bool {
        let f = crate::wire::MacControl::pfc_pause(prios, self.pause_quanta);
        self.queue_control(port, &f, edge_tsc)
    }

    /// Queue a frame of the switch's own other than PFC (LLDP) on `port`'s control queue,
    /// in an mbuf of the packet mempool (the control mempool's hold a PFC frame only), and
    /// wake the port's TX owner if it naps. False when there was no room (mbuf or queue).
    pub fn queue_frame(&self, port: usize, frame: &[u8]) -> bool {
        let ok = self.egress[port].queue_frame(&self.pool, frame);
        if ok {
            if let Some(w) = self.tx_owner[port] {
                self.doorbells[w].ring();
            }
        }
        ok
    }

    /// Queue MAC-control frame `f` on `port`'s control queue and wake the port's TX
    /// owner if it naps. False when there was no room (mbuf or queue).
    pub fn queue_control(&self, port: usize, f: &crate::wire::MacControl, edge_tsc: u64) -> bool {
        let ok = self.egress[port].queue_control(&self.ctl_pool, self.ports[port].mac, f, edge_tsc);
        if ok {
            if let Some(w) = self.tx_owner[port] {
                self.doorbells[w].ring();
            }
        }
        ok
    }
}
