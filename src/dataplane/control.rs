//! The control lcore (DPDK main lcore): turns MMU Xoff/Xon edges into 802.1Qbb frames on
//! the port's control queue (PAUSE, refresh before expiry while the PG stays OFF, one
//! RESUME), reconciles with the MMU's PG states so no edge is ever lost, and keeps the
//! PFC transmit counters. It never touches a data packet.

use std::sync::Arc;

use crate::dpdk::{rdtsc, Mempool};
use crate::mmu::{Edge, EdgeKind};
use crate::pfc::{PfcPortTx, PfcTxConfig};
use crate::wire::{MacAddr, MacControl};

use super::egress::Ctl;
use super::Shared;

pub struct Control {
    shared: Arc<Shared>,
    pfc_tx: Vec<PfcPortTx>,
    ctl_pool: Arc<Mempool>,
    macs: Vec<MacAddr>,
    next_reconcile: u64,
    reconcile_every: u64,
    /// Frames not sent because the control mempool or queue was full.
    pub ctl_failures: u64,
}

impl Control {
    pub fn new(shared: Arc<Shared>, ctl_pool: Arc<Mempool>, macs: Vec<[u8; 6]>, tsc_hz: u64) -> Control {
        let pfc_tx = shared.ports.iter().map(|p| PfcPortTx::new(PfcTxConfig::default(), p.speed_bps, tsc_hz)).collect();
        Control {
            shared,
            pfc_tx,
            ctl_pool,
            macs: macs.into_iter().map(MacAddr).collect(),
            next_reconcile: 0,
            reconcile_every: tsc_hz / 10_000, // 100 µs
            ctl_failures: 0,
        }
    }

    /// PFC transmit counters of each port, for reporting.
    pub fn tx_counters(&self) -> Vec<Arc<crate::pfc::PfcTxCounters>> {
        self.pfc_tx.iter().map(|t| t.counters()).collect()
    }

    fn send(&mut self, port: usize, f: MacControl, edge_tsc: u64) {
        let Some(mut m) = self.ctl_pool.alloc() else {
            self.ctl_failures += 1;
            return;
        };
        let Some(buf) = m.append(60) else {
            self.ctl_failures += 1;
            return;
        };
        let mut frame = [0u8; 60];
        f.emit(self.macs[port], &mut frame);
        buf.copy_from_slice(&frame);
        if self.shared.egress[port].control.push(Ctl { m, edge_tsc }).is_err() {
            self.ctl_failures += 1;
        }
    }

    fn on_edge(&mut self, e: Edge, tsc: u64, now: u64) {
        let port = e.port as usize;
        let Some(rt) = self.shared.ports.get(port) else { return };
        let prios = rt.plan.pg_priorities[e.pg as usize & 7];
        if prios == 0 {
            return;
        }
        if let Some(f) = self.pfc_tx[port].on_edge(prios, e.kind, now) {
            // Reaction time is measured for the edge that starts a pause.
            let t = if e.kind == EdgeKind::Pause { tsc } else { 0 };
            self.send(port, f, t);
        }
    }

    /// One pass: drain the edge rings, reconcile now and then, send due refreshes.
    /// Returns true if it did anything.
    pub fn poll(&mut self) -> bool {
        let mut did = false;
        let shared = self.shared.clone();
        for ring in &shared.edges {
            while let Some(msg) = ring.pop() {
                let now = rdtsc();
                self.on_edge(msg.edge, msg.tsc, now);
                did = true;
            }
        }
        let now = rdtsc();
        if now >= self.next_reconcile {
            self.next_reconcile = now + self.reconcile_every;
            self.reconcile(now);
        }
        for port in 0..self.pfc_tx.len() {
            if let Some(f) = self.pfc_tx[port].poll(now) {
                self.send(port, f, 0);
                did = true;
            }
        }
        did
    }

    /// The MMU's PG states are the truth; edges are the fast path. A PG whose Xon became
    /// reachable because T grew (other PGs drained), or whose edge did not fit a ring,
    /// is caught here.
    fn reconcile(&mut self, now: u64) {
        let shared = self.shared.clone();
        for (port, rt) in shared.ports.iter().enumerate() {
            let mut pgs = rt.plan.lossless_pgs;
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as u8;
                pgs &= pgs - 1;
                if let Some(e) = shared.mmu.check_resume(port as u16, pg) {
                    self.on_edge(e, 0, now);
                }
                let prios = rt.plan.pg_priorities[pg as usize];
                let tx_off = self.pfc_tx[port].off_mask() & prios != 0;
                let mmu_off = shared.mmu.is_off(port as u16, pg);
                if mmu_off != tx_off {
                    let kind = if mmu_off { EdgeKind::Pause } else { EdgeKind::Resume };
                    self.on_edge(Edge { port: port as u16, pg, kind }, 0, now);
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
