//! The worker lcore loop: RX burst → parse → MAC control (pause deadlines) → classify →
//! learn/forward → MMU admit → enqueue on egress ports → serve the TX of the ports this
//! lcore owns. Allocation-free, lock-free, no syscalls.
//!
//! A burst is processed as runs: consecutive packets with the same egress port and class
//! are admitted by the MMU in prefixes ([`crate::mmu::Mmu::admit_prefix`]: as many as
//! land in one segment without a threshold crossing; a packet that may cross one goes
//! on its own), and counters are bumped once per burst or run, not per packet.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::counters::{DropReason, LcoreCounters};
use crate::dpdk::{rdtsc, Mbuf, MbufBurst, RxQueue};
use crate::classify::Class;
use crate::fdb::Fdb;
use crate::mmu::{self, Edge, Verdict};
use crate::pfc::PfcRx;
use crate::wire::{self, MacAddr, MacControl, MIN_FRAME_LEN};

use super::egress::{Ctl, Queued};
use super::tx::{drop_admitted, TxPort};
use super::{EdgeMsg, Shared, PAUSE_CLAIMED};

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
    /// Per port: index in `txs` if this lcore owns the port's TX.
    pub local_tx: Vec<Option<usize>>,
    /// The run being formed: same egress port and class; its mbufs and lengths.
    pub run: Run,
    pub run_mbufs: MbufBurst,
    pub run_lens: Box<[u32; crate::dpdk::BURST_CAP]>,
    /// PAUSEs this lcore sent whose note the control lcore has not taken yet (it may be
    /// napping): this lcore refreshes them meanwhile. Capacity ports × 8, never grows.
    pub notes: Vec<PauseNote>,
}

/// A PAUSE this worker sent for (port, PG) and noted in `worker_pause` as `t0`.
#[derive(Clone, Copy, Debug)]
pub struct PauseNote {
    port: u16,
    pg: u8,
    t0: u64,
    /// When this lcore last queued a PAUSE for it.
    last: u64,
}

/// The key and totals of the run of packets being formed.
#[derive(Clone, Copy, Default)]
pub struct Run {
    out: u16,
    class: Class,
    lossless: bool,
}

impl Run {
    #[inline]
    fn same(&self, out: u16, class: Class, lossless: bool) -> bool {
        self.out == out && self.class == class && self.lossless == lossless
    }
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

/// The Xoff crossing of `e` just happened here: queue the PFC PAUSE on the port's control
/// queue now (its TX lcore sends control frames ahead of data, between RX bursts) and
/// leave a note for the control lcore, which commits it and takes over refresh and
/// RESUME. Returns the note, or None if the frame could not be queued (the slot holds an
/// earlier note, no mbuf, queue full): then the edge goes to the control lcore as usual.
fn pause_now(shared: &Shared, e: Edge, now: u64) -> Option<PauseNote> {
    let (port, pg) = (e.port as usize, e.pg as usize & 7);
    let rt = shared.ports.get(port)?;
    let prios = rt.plan.pg_priorities[pg];
    let slot = &rt.worker_pause[pg];
    if prios == 0 || slot.compare_exchange(0, PAUSE_CLAIMED, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return None;
    }
    let queued = queue_pause(shared, port, prios, now);
    // The note's TSC must not be 0 (no note) or the claim marker.
    let t0 = now.clamp(1, PAUSE_CLAIMED - 1);
    slot.store(if queued { t0 } else { 0 }, Ordering::Release);
    queued.then_some(PauseNote { port: port as u16, pg: pg as u8, t0, last: now })
}

/// Put a PFC PAUSE for `prios` on `port`'s control queue. `edge_tsc` = the crossing it
/// reacts to (a reaction sample), 0 for a refresh.
fn queue_pause(shared: &Shared, port: usize, prios: u8, edge_tsc: u64) -> bool {
    let rt = &shared.ports[port];
    shared
        .ctl_pool
        .alloc()
        .and_then(|mut m| {
            let buf = m.append(MIN_FRAME_LEN as u16)?;
            let mut frame = [0u8; MIN_FRAME_LEN];
            MacControl::pfc_pause(prios, shared.pause_quanta).emit(MacAddr(rt.mac), &mut frame);
            buf.copy_from_slice(&frame);
            shared.egress[port].control.push(Ctl { m, edge_tsc }).ok()
        })
        .is_some()
}

/// Refresh the PAUSEs this lcore sent while the control lcore has not taken them over
/// (it naps up to `lcores.control_nap`, longer than a refresh interval at 100G): whenever
/// the PG is OFF and the last PAUSE is a refresh interval old — also when the PG went ON
/// and OFF again meanwhile (its own crossing found the slot taken by this note). Drops
/// the notes the control lcore took.
fn refresh_notes(shared: &Shared, notes: &mut Vec<PauseNote>, now: u64, c: &LcoreCounters) {
    let mut i = 0;
    while i < notes.len() {
        let n = notes[i];
        let rt = &shared.ports[n.port as usize];
        let slot = &rt.worker_pause[n.pg as usize];
        if slot.load(Ordering::Acquire) != n.t0 {
            notes.swap_remove(i);
            continue;
        }
        if now.wrapping_sub(n.last) >= rt.refresh_ticks && shared.mmu.is_off(n.port, n.pg) {
            // Claimed while the frame is queued, so the control lcore takes the note with
            // this refresh counted, or before it (then this lcore lets go).
            if slot.compare_exchange(n.t0, PAUSE_CLAIMED, Ordering::AcqRel, Ordering::Relaxed).is_err() {
                notes.swap_remove(i);
                continue;
            }
            if queue_pause(shared, n.port as usize, rt.plan.pg_priorities[n.pg as usize], 0) {
                rt.worker_refreshes[n.pg as usize].fetch_add(1, Ordering::AcqRel);
                c.pause_refreshes.inc();
                notes[i].last = now;
            }
            slot.store(n.t0, Ordering::Release);
        }
        i += 1;
    }
}

/// Keep `note` for [`refresh_notes`]: at most one per (port, PG), a stale one is replaced;
/// never beyond the capacity reserved at start (ports × 8 covers every PG).
fn remember(notes: &mut Vec<PauseNote>, note: PauseNote) {
    match notes.iter().position(|n| n.port == note.port && n.pg == note.pg) {
        Some(k) => notes[k] = note,
        None if notes.len() < notes.capacity() => notes.push(note),
        None => {}
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
        // A second handle, so the loop can lend `&Shared` while `self` is borrowed mutably.
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
                    let now = rdtsc();
                    self.process_burst(&shared, in_port, now, counters);
                    for t in self.txs.iter_mut() {
                        t.serve_control(&shared, self.index, now, counters);
                    }
                }
            }
            let now = rdtsc();
            for t in self.txs.iter_mut() {
                moved += t.serve(&shared, self.index, now, counters);
            }
            if !self.notes.is_empty() {
                refresh_notes(&shared, &mut self.notes, now, counters);
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
        // Stop: account pauses that ended. Wait until no worker enqueues any more, then
        // free what this lcore holds or what is on its way to it, releasing the charges.
        let now = rdtsc();
        for rx in self.pfc_rx.iter_mut().flatten() {
            rx.poll(now);
        }
        shared.workers_stopped.fetch_add(1, Ordering::SeqCst);
        let deadline = rdtsc().wrapping_add(self.tsc_hz.saturating_mul(5));
        while shared.workers_stopped.load(Ordering::SeqCst) < shared.counters.len() && rdtsc() < deadline {
            std::hint::spin_loop();
        }
        for t in &mut self.txs {
            t.flush(&shared, self.index, counters);
        }
        // Empty the RX rings (bounded: a peer may still be sending).
        for (_, rxq) in self.rxqs.iter_mut() {
            for _ in 0..1024 {
                let n = rxq.rx_burst(&mut self.burst, self.burst_size);
                if n == 0 {
                    break;
                }
                counters.rx_flushed_at_stop.add(n as u64);
                self.burst.clear();
            }
        }
    }

    fn process_burst(&mut self, shared: &Shared, in_port: usize, now: u64, c: &LcoreCounters) {
        let pc = &c.ports[in_port];
        let plan = &shared.ports[in_port].plan;
        let n = self.burst.len();
        let mut rx_bytes = 0u64;
        // Within one burst `now` is fixed: a source learned once needs no refresh, and a
        // destination's lookup holds until the next learn changes the table.
        let mut learned: Option<[u8; 6]> = None;
        let mut looked_up: Option<([u8; 6], Option<u16>)> = None;
        for i in 0..n {
            if let Some(next) = self.burst.get(i + 2) {
                next.prefetch_data();
            }
            let Some(mut m) = self.burst.take(i) else { continue };
            rx_bytes += m.len() as u64;
            if m.len() < MIN_FRAME_LEN && (!self.pad_short[in_port] || !pad(&mut m)) {
                pc.drop(DropReason::Runt);
                continue;
            }
            let len = m.len() as u32;
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
            if learned != Some(parsed.src.0) {
                self.fdb.learn(parsed.src.0, in_port as u16, now);
                learned = Some(parsed.src.0);
                looked_up = None;
            }
            let class = plan.qos.classify(&parsed);
            let lossless = plan.pfc_mask & (1 << class.priority) != 0;
            let out = if parsed.dst.is_multicast() {
                None
            } else {
                match looked_up {
                    Some((d, o)) if d == parsed.dst.0 => o,
                    _ => {
                        let o = self.fdb.lookup(parsed.dst.0, now);
                        looked_up = Some((parsed.dst.0, o));
                        o
                    }
                }
            };
            let ip = in_port as u16;
            let nports = shared.egress.len();
            // Where the packet goes: one port (unicast, or a flood with a single other
            // port), or a flood with copies.
            let single = match out {
                Some(p) if p == ip => {
                    pc.tc_rx[class.tc as usize].inc();
                    pc.drop(DropReason::SamePort);
                    pc.tc_dropped[class.tc as usize].inc();
                    continue;
                }
                Some(p) => Some(p),
                None if nports == 2 => Some(1 - ip),
                None => None,
            };
            match single {
                Some(p) => {
                    if self.run_mbufs.is_empty() || !self.run.same(p, class, lossless) {
                        self.flush_run(shared, ip, now, c);
                        self.run = Run { out: p, class, lossless };
                    }
                    let k = self.run_mbufs.len();
                    self.run_lens[k] = len;
                    let _ = self.run_mbufs.push(m);
                }
                None => {
                    self.flush_run(shared, ip, now, c);
                    pc.tc_rx[class.tc as usize].inc();
                    // Flood: the original to the last port, copies to the others; each copy
                    // is admitted by the MMU on its own.
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
                            Some(copy) => self.admit_one(shared, ip, p, class, lossless, copy, now, c),
                            None => {
                                pc.drop(DropReason::FloodNoMbuf);
                                pc.tc_dropped[class.tc as usize].inc();
                            }
                        }
                    }
                    self.admit_one(shared, ip, last, class, lossless, m, now, c);
                }
            }
        }
        self.flush_run(shared, in_port as u16, now, c);
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        self.burst.clear();
    }

    /// Admit and enqueue the run formed so far (all of it at once when the MMU allows).
    fn flush_run(&mut self, shared: &Shared, in_port: u16, now: u64, c: &LcoreCounters) {
        let k = self.run_mbufs.len();
        if k == 0 {
            return;
        }
        let Run { out, class, lossless } = self.run;
        let (tc, queue) = (class.tc & 7, class.queue & 7);
        c.ports[in_port as usize].tc_rx[tc as usize].add(k as u64);
        let out_u = out as usize;
        let wd_drop = shared.ports[out_u].pfcwd.as_ref().is_some_and(|wd| wd.drop_mask() & (1 << class.priority) != 0);
        let mut i = 0;
        while i < k {
            let prefix = if wd_drop { None } else { shared.mmu.admit_prefix(in_port, class.pg, out, queue, &self.run_lens[i..k], lossless) };
            match prefix {
                Some((seg, cnt)) => {
                    let (mmu, lens, mbufs) = (&shared.mmu, &self.run_lens, &mut self.run_mbufs);
                    let mut packets = (i..i + cnt).filter_map(|j| {
                        let charge = mmu.bulk_charge(in_port, class.pg, out, queue, lens[j], seg);
                        mbufs.take(j).map(|m| Queued { m, charge, rx_tsc: now, in_port, tc, queue })
                    });
                    match self.local_tx[out_u] {
                        // Our own port with room for all: straight onto its TC queue.
                        Some(ix) if self.txs[ix].room(queue) >= cnt => self.txs[ix].enqueue_all(queue, &mut packets),
                        _ => {
                            for q in packets {
                                enqueue(shared, &mut self.txs, &self.local_tx, self.index, q, now, c);
                            }
                        }
                    }
                    i += cnt;
                }
                None => {
                    if let Some(m) = self.run_mbufs.take(i) {
                        self.admit_one(shared, in_port, out_u, class, lossless, m, now, c);
                    }
                    i += 1;
                }
            }
        }
        self.run_mbufs.clear();
    }

    /// Admit one packet (MMU, watchdog) and enqueue it, or drop it under its reason.
    #[allow(clippy::too_many_arguments)]
    fn admit_one(&mut self, shared: &Shared, in_port: u16, out: usize, class: Class, lossless: bool, m: Mbuf, now: u64, c: &LcoreCounters) {
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
                if r == mmu::DropReason::LosslessHeadroomFull {
                    ic.pg_lossless_drops[class.pg as usize & 7].inc();
                }
                c.ports[out].queue_drops[queue as usize].inc();
            }
            Verdict::Admit { charge, edge } => {
                match edge {
                    Some(e) if e.kind == mmu::EdgeKind::Pause => match pause_now(shared, e, now) {
                        Some(note) => remember(&mut self.notes, note),
                        None => push_edge(shared, self.index, edge, now, c),
                    },
                    _ => push_edge(shared, self.index, edge, now, c),
                }
                let q = Queued { m, charge, rx_tsc: now, in_port, tc, queue };
                enqueue(shared, &mut self.txs, &self.local_tx, self.index, q, now, c);
            }
        }
    }
}

/// Hand an admitted packet to its egress port: straight onto the TC queue when this lcore
/// owns the port's TX, else through the port's inbound ring. A full queue drops it
/// (after admission: the charge is given back).
#[inline(always)]
fn enqueue(shared: &Shared, txs: &mut [TxPort], local_tx: &[Option<usize>], ring: usize, q: Queued, now: u64, c: &LcoreCounters) {
    let out = q.charge.out_port() as usize;
    let res = match local_tx.get(out).copied().flatten() {
        Some(ix) => txs[ix].enqueue(q),
        None => shared.egress[out].inbound.push(q),
    };
    if let Err(q) = res {
        drop_admitted(shared, ring, q, DropReason::EgressQueueFull, now, c);
    }
}

fn copy_mbuf(shared: &Shared, m: &Mbuf) -> Option<Mbuf> {
    let mut copy = shared.pool.alloc()?;
    let src = m.data();
    let dst = copy.append(src.len() as u16)?;
    dst.copy_from_slice(src);
    Some(copy)
}
