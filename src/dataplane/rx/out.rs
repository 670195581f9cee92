//! Where the RX side's packets go once admitted: the TC queues of the ports this lcore
//! transmits (straight in, no atomics) or another port's inbound ring; and what an MMU
//! edge of an admission sends at once (the PAUSE of an Xoff crossing, see pause_handoff).
//! Owned by the worker; every RX stage that admits borrows it.

use std::sync::atomic::Ordering;

use crate::classify::Class;
use crate::counters::{DropReason, DropSite, LcoreCounters};
use crate::dpdk::Mbuf;
use crate::mmu::{self, Verdict};

use super::super::egress::Queued;
use super::super::pause_handoff::WorkerNotes;
use super::super::shared::Shared;
use super::super::tx::TxPort;

/// The worker's egress side.
pub struct Out {
    /// Index among the workers (its edge ring, its doorbell).
    pub index: usize,
    pub txs: Vec<TxPort>,
    /// Per port: index in `txs` if this lcore owns the port's TX.
    pub local_tx: Vec<Option<usize>>,
    /// PAUSEs this lcore sent whose note the control lcore has not taken yet.
    pub notes: WorkerNotes,
}

impl Out {
    pub fn new(index: usize, nports: usize) -> Out {
        Out { index, txs: Vec::new(), local_tx: vec![None; nports], notes: WorkerNotes::new(nports) }
    }

    /// Own the transmit side of `tx.port`.
    pub fn own(&mut self, tx: TxPort) {
        self.local_tx[tx.port] = Some(self.txs.len());
        self.txs.push(tx);
    }

    /// Hand an admitted packet to its egress port: straight onto the TC queue when this
    /// lcore owns the port's TX, else through the port's inbound ring. A full queue drops
    /// it (after admission: the charge is given back).
    #[inline(always)]
    pub fn enqueue(&mut self, shared: &Shared, q: Queued, now: u64, c: &LcoreCounters) {
        let out = q.charge.out_port() as usize;
        let res = match self.local_tx.get(out).copied().flatten() {
            Some(ix) => self.txs[ix].enqueue(q),
            None => shared.egress[out].inbound.push(q),
        };
        if let Err(q) = res {
            shared.drop_admitted(self.index, q, DropReason::EgressQueueFull, now, c);
        }
    }

    /// Admit one packet (MMU, watchdog) and enqueue it, or drop it under its reason.
    #[allow(clippy::too_many_arguments)]
    pub fn admit_one(
        &mut self,
        shared: &Shared,
        in_port: u16,
        out: usize,
        class: Class,
        lossless: bool,
        m: Mbuf,
        now: u64,
        c: &LcoreCounters,
    ) {
        let len = m.len() as u32;
        let (tc, queue) = (class.tc & 7, class.queue & 7);
        if !shared.ports[out].link_up.load(Ordering::Relaxed) {
            let site = DropSite::forwarded(in_port as usize, tc, out, queue, lossless.then_some(class.pg));
            c.count_drop(site, DropReason::LinkDown, 1);
            return;
        }
        // PFC watchdog, action drop: a stormed priority's arrivals are dropped before admission.
        if let Some(wd) = &shared.ports[out].pfcwd {
            if wd.drop_mask() & (1 << class.priority) != 0 {
                wd.count_tx_dropped(class.priority, 1);
                c.count_drop(DropSite::forwarded(in_port as usize, tc, out, queue, None), DropReason::PfcWatchdog, 1);
                return;
            }
        }
        let verdict = shared.mmu.admit(in_port, class.pg, out as u16, queue, len, lossless);
        // Admitted or not, an edge is acted on: a packet dropped at the Xoff point pauses.
        self.on_edge(shared, verdict.edge(), now, c);
        match verdict {
            Verdict::Drop { reason: r, .. } => {
                let lossless_pg = lossless.then_some(class.pg);
                c.count_drop(DropSite::forwarded(in_port as usize, tc, out, queue, lossless_pg), r.into(), 1);
            }
            Verdict::Admit { charge, .. } => {
                let q = Queued { m, charge, rx_tsc: now, in_port, tc, queue };
                self.enqueue(shared, q, now, c);
            }
        }
    }

    /// An MMU edge from an admission. The PAUSE of an Xoff crossing leaves from here at
    /// once, one frame per PG it names (see pause_handoff); anything else (a RESUME, a PG
    /// whose hand-off failed) goes to the control lcore.
    #[inline]
    pub fn on_edge(&mut self, shared: &Shared, edge: Option<mmu::Edge>, now: u64, c: &LcoreCounters) {
        let Some(e) = edge else { return };
        if e.kind != mmu::EdgeKind::Pause {
            shared.push_edge(self.index, Some(e), now, c);
            return;
        }
        let port = e.port as usize;
        let mut rest = e.pgs;
        for pg in e.pg_iter() {
            let prios = shared.ports[port].pfc.pg_priorities(pg);
            if prios != 0
                && self.notes.pause(&shared.ports[port].pause[pg as usize], e.port, pg, now, || {
                    shared.queue_pause(port, prios, now)
                })
            {
                rest &= !(1 << pg);
            }
        }
        // A PAUSE this lcore queued for a port whose TX it owns leaves now, not after the
        // rest of the burst (the reaction time's largest part).
        if rest != e.pgs {
            if let Some(ix) = self.local_tx[port] {
                self.txs[ix].serve_control(shared, self.index, now, c);
            }
        }
        shared.push_edge(self.index, (rest != 0).then_some(mmu::Edge { pgs: rest, ..e }), now, c);
    }
}
