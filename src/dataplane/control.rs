//! The control lcore (DPDK main lcore): turns MMU Xoff/Xon edges into 802.1Qbb frames on
//! the port's control queue (PAUSE, refresh before expiry while the PG stays OFF, one
//! RESUME), reconciles with the MMU's PG states so no edge is ever lost, and keeps the
//! PFC transmit counters. It never touches a data packet.
//!
//! One shortcut: the worker whose admission crosses Xoff queues that PAUSE itself (one
//! lcore hop less: the reaction time is the worker's, whatever the control lcore is
//! doing) and leaves a note in [`super::PortRt::worker_pause`]; this lcore commits it
//! to the PG's PFC state as if it had sent it, and carries on with refresh and RESUME.
//!
//! Edges only mark a PG as pending; the frame is chosen from the MMU's PG state when the
//! PG is settled (so a backlog of stale edges costs one frame), and PFC state and
//! counters change only once the frame is on the control queue (so a frame that found no
//! mbuf or no room is retried, not counted as sent and lost).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::dpdk::{rdtsc, Mempool};
use crate::pfc::{send_refresh, PendingPgs, PfcPortTx, PfcTxConfig};
use crate::wire::{MacAddr, MacControl};

use super::egress::Ctl;
use super::{Shared, PAUSE_CLAIMED};

/// Where the control lcore's frames go: the ports' control queues.
struct CtlOut {
    shared: Arc<Shared>,
    pool: Arc<Mempool>,
    macs: Vec<MacAddr>,
}

impl CtlOut {
    /// Queues `f` on `port`'s control queue; false if there was no room (mbuf or queue),
    /// in which case nothing was queued and the caller keeps its state.
    fn queue(&self, port: usize, f: &MacControl, edge_tsc: u64) -> bool {
        let q = &self.shared.egress[port].control;
        // Checking first spares an mbuf round trip while the TX lcore is behind (a worker
        // may take the last place meanwhile: then the push fails and we retry).
        if q.is_full() {
            return false;
        }
        let Some(mut m) = self.pool.alloc() else { return false };
        let Some(buf) = m.append(60) else { return false };
        let mut frame = [0u8; 60];
        f.emit(self.macs[port], &mut frame);
        buf.copy_from_slice(&frame);
        // On Err the Ctl comes back and its mbuf is freed on drop.
        q.push(Ctl { m, edge_tsc }).is_ok()
    }
}

pub struct Control {
    shared: Arc<Shared>,
    pfc_tx: Vec<PfcPortTx>,
    /// Per port: PGs whose PFC state must be settled against the MMU.
    pending: Vec<PendingPgs>,
    /// Per port: no new attempt before this TSC after a frame found no room, so a port
    /// whose control queue is stuck is retried every `retry_every` ticks, not spun on.
    retry_at: Vec<u64>,
    out: CtlOut,
    next_reconcile: u64,
    reconcile_every: u64,
    retry_every: u64,
    /// Attempts to queue a PFC frame that found no mbuf or no room in the control queue.
    /// Each such frame was not counted as sent and is retried.
    pub ctl_failures: u64,
}

impl Control {
    pub fn new(shared: Arc<Shared>, ctl_pool: Arc<Mempool>, macs: Vec<[u8; 6]>, tsc_hz: u64) -> Control {
        let pfc_tx = shared.ports.iter().map(|p| PfcPortTx::new(PfcTxConfig::default(), p.speed_bps, tsc_hz)).collect();
        let n = shared.ports.len();
        Control {
            shared: shared.clone(),
            pfc_tx,
            pending: vec![PendingPgs::default(); n],
            retry_at: vec![0; n],
            out: CtlOut { shared, pool: ctl_pool, macs: macs.into_iter().map(MacAddr).collect() },
            next_reconcile: 0,
            reconcile_every: tsc_hz / 10_000, // 100 µs
            retry_every: tsc_hz / 100_000,    // 10 µs
            ctl_failures: 0,
        }
    }

    /// PFC transmit counters of each port, for reporting.
    pub fn tx_counters(&self) -> Vec<Arc<crate::pfc::PfcTxCounters>> {
        self.pfc_tx.iter().map(|t| t.counters()).collect()
    }

    /// One pass: drain the edge rings, reconcile now and then, settle pending PGs and
    /// send due refreshes. Returns true if it did anything.
    pub fn poll(&mut self) -> bool {
        let shared = self.shared.clone();
        let mut did = self.take_worker_pauses(&shared);
        did |= self.drain_edges(&shared);
        let now = rdtsc();
        if now >= self.next_reconcile {
            self.next_reconcile = now + self.reconcile_every;
            self.reconcile(&shared);
        }
        for (port, rt) in shared.ports.iter().enumerate() {
            did |= self.serve_port(&shared, port, &rt.plan.pg_priorities, now);
        }
        did
    }

    /// Commits the PAUSE frames workers queued themselves since the last pass.
    fn take_worker_pauses(&mut self, shared: &Shared) -> bool {
        let mut did = false;
        for (port, rt) in shared.ports.iter().enumerate() {
            let mut pgs = rt.plan.lossless_pgs;
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as usize;
                pgs &= pgs - 1;
                let slot = &rt.worker_pause[pg];
                let t = slot.load(Ordering::Acquire);
                if t == 0 || t == PAUSE_CLAIMED {
                    continue;
                }
                // Only this lcore clears a note; the worker that wrote it may be refreshing
                // it (slot = claimed for a moment): then take it on the next pass.
                if slot.compare_exchange(t, 0, Ordering::AcqRel, Ordering::Relaxed).is_err() {
                    continue;
                }
                let refreshes = rt.worker_refreshes[pg].swap(0, Ordering::AcqRel);
                self.pfc_tx[port].note_sent_pause(rt.plan.pg_priorities[pg], t, 1 + refreshes);
                did = true;
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
                    p.mark(msg.edge.pg, Some(msg.edge.kind), msg.tsc);
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
        let out = &self.out;
        let mut sent = false;
        let mut send = |f: &MacControl, tsc: u64| {
            let ok = out.queue(port, f, tsc);
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
            let mut pgs = rt.plan.lossless_pgs;
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as u8;
                pgs &= pgs - 1;
                if let Some(e) = shared.mmu.check_resume(port as u16, pg) {
                    self.pending[port].mark(pg, Some(e.kind), 0);
                }
                let prios = rt.plan.pg_priorities[pg as usize];
                let tx_off = self.pfc_tx[port].off_mask() & prios != 0;
                // A worker is queueing this PG's PAUSE: its note will settle it.
                let claimed = rt.worker_pause[pg as usize].load(Ordering::Acquire) != 0;
                if !claimed && shared.mmu.is_off(port as u16, pg) != tx_off {
                    self.pending[port].mark(pg, None, 0);
                }
            }
        }
    }

    /// At stop: free control frames still queued.
    pub fn drain(&self) {
        for eg in &self.shared.egress {
            eg.drain_control();
        }
    }
}
