//! The worker lcore loop: RX burst → parse → MAC control (pause deadlines) → classify →
//! learn/forward → MMU admit → enqueue on egress ports → serve the TX of the ports this
//! lcore owns. Allocation-free, lock-free, no syscalls.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::counters::{DropReason, LcoreCounters};
use crate::dpdk::{rdtsc, Mbuf, MbufBurst, RxQueue};
use crate::classify::Class;
use crate::fdb::Fdb;
use crate::mmu::{self, Edge, Verdict};
use crate::pfc::PfcRx;
use crate::wire::{self, MacControl, MIN_FRAME_LEN};

use super::egress::Queued;
use super::tx::TxPort;
use super::{EdgeMsg, Shared};

pub struct Worker {
    pub index: usize,
    pub rxqs: Vec<(usize, RxQueue)>,
    pub txs: Vec<TxPort>,
    pub fdb: Fdb,
    pub shared: Arc<Shared>,
    pub burst: MbufBurst,
    pub burst_size: usize,
    pub fdb_age_every: u64,
    /// Per port: pad short frames (kernel-backed ports) rather than drop them.
    pub pad_short: Vec<bool>,
    /// Receive-side PFC state of the ports whose queue 0 this lcore polls.
    pub pfc_rx: Vec<Option<PfcRx>>,
    /// PFC watchdog: when PAUSE frames arrive, per port (with `pfc_rx`).
    pub wd_stamps: Vec<Option<Arc<crate::pfcwd::PfcwdRxStamps>>>,
    pub tsc_hz: u64,
}

/// Zero-pad a short frame to the Ethernet minimum, as a NIC MAC does on the wire.
fn pad(m: &mut Mbuf) -> bool {
    let short = MIN_FRAME_LEN - m.len();
    match m.append(short as u16) {
        Some(tail) => {
            tail.fill(0);
            true
        }
        None => false,
    }
}

/// Hand an MMU edge to the control lcore (through this lcore's single-producer ring).
#[inline]
pub(super) fn push_edge(shared: &Shared, ring: usize, edge: Option<Edge>, now: u64, c: &LcoreCounters) {
    if let Some(edge) = edge {
        if shared.edges[ring].push(EdgeMsg { edge, tsc: now }).is_err() {
            c.edge_overflow.inc();
        }
    }
}

fn mmu_drop_reason(r: mmu::DropReason) -> DropReason {
    match r {
        mmu::DropReason::LosslessHeadroomFull => DropReason::LosslessHeadroomFull,
        mmu::DropReason::LossyDt | mmu::DropReason::LossyPoolFull => DropReason::LossyThreshold,
        _ => DropReason::MmuOther,
    }
}

impl Worker {
    pub fn run(mut self) {
        let shared = self.shared.clone();
        let counters: &LcoreCounters = &shared.counters[self.index];
        let mut next_age = rdtsc().wrapping_add(self.fdb_age_every);
        // Pauses that expire on their own are accounted (RxWait) by a periodic settle.
        let settle_every = (self.tsc_hz / 1000).max(1);
        let mut next_settle = rdtsc().wrapping_add(settle_every);
        while shared.running.load(Ordering::Relaxed) {
            let t0 = rdtsc();
            let mut moved = 0usize;
            for r in 0..self.rxqs.len() {
                let in_port = self.rxqs[r].0;
                let n = self.rxqs[r].1.rx_burst(&mut self.burst, self.burst_size);
                if n > 0 {
                    moved += n;
                    self.process_burst(in_port, rdtsc(), counters);
                    let now = rdtsc();
                    for t in self.txs.iter_mut() {
                        t.serve_control(&shared, self.index, now, counters);
                    }
                }
            }
            let now = rdtsc();
            for t in self.txs.iter_mut() {
                moved += t.serve(&shared, self.index, now, counters);
            }
            let t1 = rdtsc();
            counters.loops.inc();
            if moved > 0 {
                counters.busy_cycles.add(t1.wrapping_sub(t0));
            }
            if t1 >= next_settle {
                next_settle = t1.wrapping_add(settle_every);
                for rx in self.pfc_rx.iter_mut().flatten() {
                    rx.poll(t1);
                }
            }
            if self.fdb_age_every != 0 && t1 >= next_age {
                self.fdb.age(t1);
                counters.fdb_entries.set(self.fdb.len() as u64);
                next_age = t1.wrapping_add(self.fdb_age_every);
            }
        }
        // Stop: account pauses that ended; free what this lcore still holds, releasing
        // its MMU charges.
        let now = rdtsc();
        for rx in self.pfc_rx.iter_mut().flatten() {
            rx.poll(now);
        }
        for t in &mut self.txs {
            t.flush(&shared, self.index, counters);
        }
    }

    fn process_burst(&mut self, in_port: usize, now: u64, c: &LcoreCounters) {
        let shared = &*self.shared;
        let pc = &c.ports[in_port];
        let plan = &shared.ports[in_port].plan;
        let n = self.burst.len();
        for i in 0..n {
            if i + 1 < n {
                if let Some(next) = self.burst.get(i + 1) {
                    next.prefetch_data();
                }
            }
            let Some(mut m) = self.burst.take(i) else { continue };
            let len = m.len();
            pc.rx_packets.inc();
            pc.rx_bytes.add(len as u64);
            if len < MIN_FRAME_LEN && (!self.pad_short[in_port] || !pad(&mut m)) {
                pc.drop(DropReason::Runt);
                continue;
            }
            let parsed = match wire::parse(m.data()) {
                Ok(p) => p,
                Err(_) => {
                    pc.drop(DropReason::Malformed);
                    continue;
                }
            };
            if parsed.is_mac_control() {
                // PFC / 802.3x PAUSE: update this port's pause deadlines; never forwarded.
                match MacControl::parse(m.data()) {
                    Ok(f) => {
                        pc.mac_control_rx.inc();
                        if let Some(rx) = self.pfc_rx[in_port].as_mut() {
                            let out = rx.on_frame(&f, now, self.tsc_hz);
                            if let Some(st) = &self.wd_stamps[in_port] {
                                st.note_rx(&out, now);
                            }
                        }
                    }
                    Err(_) => pc.drop(DropReason::BadMacControl),
                }
                continue;
            }
            if parsed.dst.is_link_local_reserved() {
                pc.drop(DropReason::LinkLocal);
                continue;
            }
            self.fdb.learn(parsed.src.0, in_port as u16, now);
            let class = plan.qos.classify(&parsed);
            let lossless = plan.pfc_mask & (1 << class.priority) != 0;
            pc.tc_rx[class.tc as usize].inc();
            let out = if parsed.dst.is_multicast() { None } else { self.fdb.lookup(parsed.dst.0, now) };
            let ip = in_port as u16;
            match out {
                Some(p) if p == ip => {
                    pc.drop(DropReason::SamePort);
                    pc.tc_dropped[class.tc as usize].inc();
                }
                Some(p) => admit_enqueue(shared, self.index, ip, p as usize, class, lossless, m, now, c),
                None => {
                    // Flood: the original to the last port, copies to the others; each copy
                    // is admitted by the MMU on its own.
                    let nports = shared.egress.len();
                    let Some(last) = (0..nports).rev().find(|&p| p != in_port) else {
                        pc.drop(DropReason::SamePort);
                        pc.tc_dropped[class.tc as usize].inc();
                        continue;
                    };
                    for p in 0..last {
                        if p == in_port {
                            continue;
                        }
                        pc.flood_copies.inc();
                        pc.tc_copies[class.tc as usize].inc();
                        match copy_mbuf(shared, &m) {
                            Some(copy) => admit_enqueue(shared, self.index, ip, p, class, lossless, copy, now, c),
                            None => {
                                pc.drop(DropReason::FloodNoMbuf);
                                pc.tc_dropped[class.tc as usize].inc();
                            }
                        }
                    }
                    admit_enqueue(shared, self.index, ip, last, class, lossless, m, now, c);
                }
            }
        }
        self.burst.clear();
    }
}

#[inline]
#[allow(clippy::too_many_arguments)]
fn admit_enqueue(
    shared: &Shared,
    ring: usize,
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
    // PFC watchdog, action drop: a stormed priority's arrivals are dropped before admission.
    if let Some(wd) = &shared.ports[out].pfcwd {
        if wd.drop_mask() & (1 << class.priority) != 0 {
            wd.count_tx_dropped(class.priority, 1);
            c.ports[in_port as usize].drop(DropReason::PfcWatchdog);
            c.ports[in_port as usize].tc_dropped[tc as usize].inc();
            c.ports[out].queue_drops[queue as usize].inc();
            return;
        }
    }
    match shared.mmu.admit(in_port, class.pg, out as u16, queue, len, lossless) {
        Verdict::Drop(r) => {
            let ic = &c.ports[in_port as usize];
            ic.drop(mmu_drop_reason(r));
            ic.tc_dropped[tc as usize].inc();
            c.ports[out].queue_drops[queue as usize].inc();
        }
        Verdict::Admit { charge, edge } => {
            push_edge(shared, ring, edge, now, c);
            let q = Queued { m, charge, rx_tsc: now, in_port, tc, queue };
            if let Err(q) = shared.egress[out].tcs[queue as usize].push(q) {
                // Dropped after admission: undo the charge.
                push_edge(shared, ring, shared.mmu.release(q.charge), now, c);
                c.ports[out].drop(DropReason::EgressQueueFull);
                c.ports[out].queue_drops[queue as usize].inc();
                c.ports[in_port as usize].tc_dropped[tc as usize].inc();
            }
        }
    }
}

fn copy_mbuf(shared: &Shared, m: &Mbuf) -> Option<Mbuf> {
    let mut copy = shared.pool.alloc()?;
    let src = m.data();
    let dst = copy.append(src.len() as u16)?;
    dst.copy_from_slice(src);
    Some(copy)
}
