//! The control lcore (DPDK main lcore): turns MMU Xoff/Xon edges into 802.1Qbb frames on
//! the port's control queue (PAUSE, refresh before expiry while the PG stays OFF, one
//! RESUME), reconciles with the MMU's PG states so no edge is ever lost, and keeps the
//! PFC transmit counters. It never touches a data packet.
//!
//! The worker whose admission crosses Xoff queues that PAUSE itself and leaves a note
//! ([`super::pause_handoff`]); this lcore takes the note and commits that PAUSE to the
//! PG's PFC state as if it had sent it, and carries on with refresh and RESUME.
//!
//! Edges only mark a PG as pending; the frame is chosen from the MMU's PG state when the
//! PG is settled (so a backlog of stale edges costs one frame), and PFC state and
//! counters change only once the frame is on the control queue (so a frame that found no
//! mbuf or no room is retried, not counted as sent and lost).
//!
//! The main lcore's loop that drives it ([`super::main_loop`]) lives apart: this module
//! only sends PFC frames and watches links.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::dpdk::rdtsc;
use crate::mmu::EdgeKind;
use crate::pfc::{send_refresh, PendingPgs, PfcPortTx, PfcTxConfig};
use crate::wire::MacControl;

use super::io::IoMsg;
use super::link::LinkSource;
use super::shared::Shared;

/// How often at most the kernel's links (af_packet, af_xdp ports: one sysfs read each) are
/// read: the router skips a dead ECMP member from the reading on, so this (or the control
/// lcore's nap, whichever is longer) bounds how long a pulled link still gets traffic.
/// By time, not by pass: after a nap (10 ms by default) every pass reads them; a busy
/// control lcore (a pass every millisecond while PFC is active) reads them no more often
/// than before (two files every 16 passes then, one every 8 ms now).
pub const KERNEL_LINK_EVERY_NS: u64 = 8_000_000;

pub struct Control {
    shared: Arc<Shared>,
    pfc_tx: Vec<PfcPortTx>,
    /// Per port: PGs whose PFC state must be settled against the MMU.
    pending: Vec<PendingPgs>,
    /// Per port: no new attempt before this TSC after a frame found no room, so a port
    /// whose control queue is stuck is retried every `retry_every` ticks, not spun on.
    retry_at: Vec<u64>,
    next_reconcile: u64,
    reconcile_every: u64,
    retry_every: u64,
    /// Attempts to queue a PFC frame that found no mbuf or no room in the control queue.
    /// Each such frame was not counted as sent and is retried.
    pub ctl_failures: u64,
    /// The control lcore's longest pass, TSC cycles, naps left out: how long the OS kept
    /// it away (tests bound PFC timing by it on a loaded machine, docs/testing.md).
    pub max_loop_cycles: u64,
    /// Per port: where its link state is read.
    links: Vec<LinkSource>,
    /// Kernel links (two sysfs reads each) are read at most this often (TSC ticks,
    /// [`KERNEL_LINK_EVERY_NS`]), PMD links at every housekeeping pass.
    kernel_link_every: u64,
    /// TSC of the last kernel link reading.
    kernel_link_read_at: u64,
    /// PFC frames not queued (no room, or no mbuf on any lcore) when last reported, and
    /// when that was: a warning at most once a second while it keeps happening.
    warned: (u64, Option<Instant>),
    /// Per port: PGs whose MMU state differed from their PFC state, with no worker note,
    /// at the last reconcile pass. Acted on only when still so at the next pass: the
    /// worker whose admission flips a PG OFF claims its slot a few ns later, and a look
    /// in between would send a second PAUSE beside the worker's.
    suspect: Vec<u8>,
    /// Per port: priorities whose PFC a live change turned off while this sender held
    /// them OFF: one RESUME is owed (retried until queued), no refresh follows.
    owed_resume: Vec<u8>,
}

impl Control {
    /// `links`: per port, where its link status is read.
    pub fn new(shared: Arc<Shared>, tsc_hz: u64, links: Vec<LinkSource>) -> Control {
        let pfc_tx = shared.ports.iter().map(|p| PfcPortTx::new(PfcTxConfig::default(), p.speed_bps, tsc_hz)).collect();
        let n = shared.ports.len();
        Control {
            shared,
            pfc_tx,
            pending: vec![PendingPgs::default(); n],
            suspect: vec![0; n],
            owed_resume: vec![0; n],
            retry_at: vec![0; n],
            next_reconcile: 0,
            reconcile_every: tsc_hz / 10_000, // 100 µs
            retry_every: tsc_hz / 100_000,    // 10 µs
            ctl_failures: 0,
            max_loop_cycles: 0,
            links,
            kernel_link_every: tsc_hz / (1_000_000_000 / KERNEL_LINK_EVERY_NS),
            kernel_link_read_at: 0,
            warned: (0, None),
        }
    }

    /// Link status of every port at every housekeeping pass (every millisecond, or after
    /// a nap; kernel links at most every [`KERNEL_LINK_EVERY_NS`]): a link
    /// that goes down (or never came up: `Shared::link_up` starts from the link read at
    /// start) makes its TX owner drop what it holds for the port and admit nothing more for
    /// it, so a dead egress cannot hold an ingress PG OFF and pause a healthy upstream for
    /// ever, and the router skip it as an ECMP member (`link_down_mask`). Each transition
    /// is logged. `now` is the TSC.
    pub fn poll_links(&mut self, now: u64) {
        let shared = self.shared.clone();
        let kernel_too = now.wrapping_sub(self.kernel_link_read_at) >= self.kernel_link_every;
        if kernel_too {
            self.kernel_link_read_at = now;
        }
        for (p, src) in self.links.iter().enumerate() {
            if matches!(src, LinkSource::None) || (src.is_kernel() && !kernel_too) {
                continue;
            }
            let up = src.is_up();
            let rt = &shared.ports[p];
            let was = rt.link_up.load(Ordering::Relaxed);
            if up && !was {
                let link = src.read();
                rt.link_up.store(true, Ordering::Release);
                if p < 64 {
                    shared.link_down_mask.fetch_and(!(1u64 << p), Ordering::Release);
                }
                if let Some(rep) = rt.representor_id {
                    carrier(&shared, rep, &rt.name, true);
                }
                shared.io.send(IoMsg::Log(log::Level::Info, format!("link: {} up", rt.name)));
                let bps = u64::from(link.speed_mbps) * 1_000_000;
                if rt.real_link && link.speed_mbps != 0 && link.speed_mbps != u32::MAX && bps != rt.speed_bps {
                    shared.io.send(IoMsg::Log(
                        log::Level::Warn,
                        format!(
                            "link: {} up at {}; PFC timers and headroom keep {} until the switch restarts",
                            rt.name,
                            crate::units::format_speed(bps),
                            crate::units::format_speed(rt.speed_bps)
                        ),
                    ));
                }
            } else if !up && was {
                rt.link_up.store(false, Ordering::Release);
                if p < 64 {
                    shared.link_down_mask.fetch_or(1u64 << p, Ordering::Release);
                }
                if let Some(rep) = rt.representor_id {
                    carrier(&shared, rep, &rt.name, false);
                }
                shared.io.send(IoMsg::Log(
                    log::Level::Warn,
                    format!(
                        "link: {} down: its queues are flushed (drops.link_down), the PGs they held resume",
                        rt.name
                    ),
                ));
            }
        }
    }

    /// Warns (through the I/O thread) when PFC frames could not be queued since the last
    /// warning, at most once a second: each such frame was retried, but a PAUSE that waits
    /// is headroom spent, and a pool that stays dry stops PFC altogether.
    pub fn warn_failures(&mut self, now: Instant) {
        let no_mbuf: u64 = self.shared.egress.iter().map(|e| e.ctl_no_mbuf.load(Ordering::Relaxed)).sum();
        let total = no_mbuf + self.ctl_failures;
        if total == self.warned.0 || self.warned.1.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            return;
        }
        self.shared.io.send(IoMsg::Log(
            log::Level::Warn,
            format!(
                "PFC: {} frame(s) could not be queued since the last warning (control mempool empty: {no_mbuf} in all); retried after freeing completed TX descriptors",
                total - self.warned.0
            ),
        ));
        self.warned = (total, Some(now));
    }

    /// At stop, before the ports stop: the workers stop receiving (no new admission, no
    /// new PAUSE), then every PG whose PAUSE is in force gets its RESUME, and the workers
    /// are given up to `wait` to send them, so no peer stays paused for a full pause time
    /// after the switch is gone. Returns the RESUME frames queued.
    pub fn resume_all_at_stop(&mut self, wait: Duration) -> u64 {
        let shared = self.shared.clone();
        shared.rx_stopped.store(true, Ordering::SeqCst);
        let until = Instant::now() + wait;
        while shared.workers_rx_stopped.load(Ordering::SeqCst) < shared.workers_launched.load(Ordering::SeqCst)
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_micros(20));
        }
        self.take_worker_pauses(&shared);
        self.drain_edges(&shared);
        let before: u64 = self.tx_counters().iter().flat_map(|c| c.prio.iter()).map(|p| p.resume_frames.get()).sum();
        for (port, rt) in shared.ports.iter().enumerate() {
            let tx = &mut self.pfc_tx[port];
            let mut pgs = rt.pfc.lossless_pgs();
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as u8;
                pgs &= pgs - 1;
                if tx.off_mask() & rt.pfc.pg_priorities(pg) != 0 {
                    self.pending[port].mark(pg, None, 0);
                }
            }
            let mut send = |f: &MacControl, tsc: u64| shared.queue_control(port, f, tsc);
            // Every PG reads as ON: what is still buffered is about to be freed.
            let _ = self.pending[port].settle(tx, &rt.pfc.get().pg_priorities, |_| false, rdtsc(), &mut send);
        }
        let sent: u64 =
            self.tx_counters().iter().flat_map(|c| c.prio.iter()).map(|p| p.resume_frames.get()).sum::<u64>() - before;
        while shared.egress.iter().any(|e| !e.control.is_empty()) && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(50));
        }
        // The frames left the control queues for the TX rings; give tx_burst a moment.
        std::thread::sleep(Duration::from_millis(1));
        sent
    }

    /// What the lcores share (the main loop reads counters and the FDB through it).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// PFC transmit counters of each port, for reporting.
    pub fn tx_counters(&self) -> Vec<Arc<crate::pfc::PfcTxCounters>> {
        self.pfc_tx.iter().map(|t| t.counters()).collect()
    }

    /// A live change (`config pfc`) took PFC off `stopped` priorities of `port` and made
    /// its `lossy` PGs lossy: a priority held OFF gets its RESUME (at the next pass, and
    /// until it could be queued), and nothing is settled for those PGs any more.
    pub fn pfc_stopped(&mut self, port: usize, stopped: u8, lossy: u8) {
        self.owed_resume[port] |= stopped;
        self.pending[port].forget(lossy);
        self.suspect[port] &= !lossy;
    }

    /// The RESUMEs [`Control::pfc_stopped`] owes.
    fn pay_resumes(&mut self, shared: &Shared, now: u64) -> bool {
        let mut did = false;
        for port in 0..self.owed_resume.len() {
            let prios = self.owed_resume[port] & self.pfc_tx[port].off_mask();
            if prios == 0 {
                self.owed_resume[port] = 0;
                continue;
            }
            let Some(a) = self.pfc_tx[port].prepare_edge(prios, EdgeKind::Resume, now) else {
                self.owed_resume[port] = 0;
                continue;
            };
            if shared.queue_control(port, a.frame(), now) {
                a.commit();
                self.owed_resume[port] = 0;
                did = true;
            } else {
                self.ctl_failures += 1;
            }
        }
        did
    }

    /// One pass: drain the edge rings, reconcile now and then, settle pending PGs and
    /// send due refreshes. Returns true if it did anything.
    pub fn poll(&mut self) -> bool {
        let shared = self.shared.clone();
        let mut did = self.take_worker_pauses(&shared);
        if self.owed_resume.iter().any(|&m| m != 0) {
            did |= self.pay_resumes(&shared, rdtsc());
        }
        did |= self.drain_edges(&shared);
        let now = rdtsc();
        if now >= self.next_reconcile {
            self.next_reconcile = now + self.reconcile_every;
            self.reconcile(&shared);
        }
        for (port, rt) in shared.ports.iter().enumerate() {
            did |= self.serve_port(&shared, port, &rt.pfc.get().pg_priorities, now);
        }
        did
    }

    /// Commits the PAUSE frames workers queued themselves since the last pass.
    fn take_worker_pauses(&mut self, shared: &Shared) -> bool {
        let mut did = false;
        for (port, rt) in shared.ports.iter().enumerate() {
            let mut pgs = rt.pfc.lossless_pgs();
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as usize;
                pgs &= pgs - 1;
                if let Some(t) = rt.pause[pg].take() {
                    self.pfc_tx[port].note_sent_pause(rt.pfc.pg_priorities(pg as u8), t.t0, t.frames);
                    did = true;
                }
            }
        }
        did
    }

    /// Nothing to do until an edge or a worker's note arrives: every PFC sender ON,
    /// nothing pending, no retry waiting. (The caller may then nap.)
    pub fn idle(&self) -> bool {
        self.pfc_tx.iter().all(|t| t.off_mask() == 0) && self.pending.iter().all(|p| p.dirty() == 0)
    }

    /// Marks the PG of every queued edge as pending. Bounded by what was queued on entry
    /// so that a worker producing edges without pause cannot keep this loop going.
    fn drain_edges(&mut self, shared: &Shared) -> bool {
        let mut did = false;
        for ring in &shared.edges {
            for _ in 0..ring.len() {
                let Some(msg) = ring.pop() else { break };
                if let Some(p) = self.pending.get_mut(usize::from(msg.edge.port)) {
                    for pg in msg.edge.pg_iter() {
                        p.mark(pg, Some(msg.edge.kind), msg.tsc);
                    }
                }
                did = true;
            }
        }
        did
    }

    /// Settles `port`'s pending PGs, then sends its due refresh; backs off after a frame
    /// found no room. True if a frame was queued or a PG settled.
    fn serve_port(&mut self, shared: &Shared, port: usize, pg_priorities: &[u8; 8], now: u64) -> bool {
        if now < self.retry_at[port] {
            return false;
        }
        let mmu_off = |pg: u8| shared.mmu.is_off(port as u16, pg);
        let mut sent = false;
        let mut send = |f: &MacControl, tsc: u64| {
            let ok = shared.queue_control(port, f, tsc);
            sent |= ok;
            ok
        };
        let had_pending = self.pending[port].dirty() != 0;
        let tx = &mut self.pfc_tx[port];
        let result = self.pending[port]
            .settle(tx, pg_priorities, mmu_off, now, &mut send)
            .and_then(|()| send_refresh(tx, now, &mut send).map(drop));
        if result.is_err() {
            self.ctl_failures += 1;
            self.retry_at[port] = now + self.retry_every;
        }
        sent || (had_pending && result.is_ok())
    }

    /// The MMU's PG states are the truth; edges are the fast path. A PG whose Xon became
    /// reachable because T grew (other PGs drained), whose edge did not fit a ring, or
    /// whose frame is still unsent is marked pending here.
    fn reconcile(&mut self, shared: &Shared) {
        for (port, rt) in shared.ports.iter().enumerate() {
            let mut pgs = rt.pfc.lossless_pgs();
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as u8;
                pgs &= pgs - 1;
                if let Some(e) = shared.mmu.check_resume(port as u16, pg) {
                    for g in e.pg_iter() {
                        self.pending[port].mark(g, Some(e.kind), 0);
                    }
                }
                let prios = rt.pfc.pg_priorities(pg);
                let tx_off = self.pfc_tx[port].off_mask() & prios != 0;
                // A worker holds or is queueing this PG's PAUSE: its note will settle it.
                let claimed = rt.pause[pg as usize].is_held();
                let bit = 1u8 << pg;
                if !claimed && shared.mmu.is_off(port as u16, pg) != tx_off {
                    if self.suspect[port] & bit != 0 {
                        self.pending[port].mark(pg, None, 0);
                    }
                    self.suspect[port] |= bit;
                } else {
                    self.suspect[port] &= !bit;
                }
            }
        }
    }

    /// At stop: free control frames still queued, and LLDP frames the control lcore has
    /// not read yet (consumed: counted as `lldp_rx` when handed over). Returns the control
    /// frames freed unsent.
    pub fn drain(&self) -> usize {
        let unsent = self.shared.egress.iter().map(|eg| eg.drain_control()).sum();
        while self.shared.lldp.inbox.pop().is_some() {}
        unsent
    }
}

/// The kernel representor of a port whose link changed follows it (net_tap: the netdev's
/// admin state), so the kernel withdraws connected routes and neighbours at once and FRR
/// reacts in milliseconds instead of waiting for BGP or BFD timers. One ioctl at a link
/// transition, never per packet.
#[cold]
fn carrier(shared: &Shared, rep: u16, name: &str, up: bool) {
    if let Err(e) = crate::dpdk::set_link(rep, up) {
        shared.io.send(IoMsg::Log(
            log::Level::Warn,
            format!("link: {name}: representor not set {}: {e}", if up { "up" } else { "down" }),
        ));
    }
}
