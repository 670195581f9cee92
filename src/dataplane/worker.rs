//! The worker lcore loop: RX burst → parse → learn/forward → enqueue on egress ports →
//! serve the TX of the ports this lcore owns. Allocation-free, lock-free, no syscalls.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::counters::{DropReason, LcoreCounters};
use crate::dpdk::{rdtsc, Mbuf, MbufBurst, RxQueue, TxQueue};
use crate::fdb::Fdb;
use crate::wire::{self, MIN_FRAME_LEN};

use super::egress::Queued;
use super::Shared;

/// TX side of one owned port.
pub struct TxPort {
    pub port: usize,
    pub txq: TxQueue,
    /// Packets taken from the egress queues that the TX ring has not accepted yet.
    pub pending: MbufBurst,
    pub tx_enable: bool,
}

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

impl Worker {
    pub fn run(mut self) {
        let shared = self.shared.clone();
        let counters: &LcoreCounters = &shared.counters[self.index];
        let mut next_age = rdtsc().wrapping_add(self.fdb_age_every);
        while shared.running.load(Ordering::Relaxed) {
            let t0 = rdtsc();
            let mut moved = 0usize;
            for r in 0..self.rxqs.len() {
                let (in_port, ref mut q) = self.rxqs[r];
                let n = q.rx_burst(&mut self.burst, self.burst_size);
                if n > 0 {
                    moved += n;
                    self.process_burst(in_port, t0, counters);
                }
            }
            for t in 0..self.txs.len() {
                moved += serve_tx(&shared, &mut self.txs[t], counters);
            }
            let t1 = rdtsc();
            counters.loops.inc();
            if moved > 0 {
                counters.busy_cycles.add(t1.wrapping_sub(t0));
            }
            if self.fdb_age_every != 0 && t1 >= next_age {
                self.fdb.age(t1);
                next_age = t1.wrapping_add(self.fdb_age_every);
            }
        }
        // Stop: hand back everything this lcore still holds.
        for t in &mut self.txs {
            let n = t.pending.len() as u64;
            counters.ports[t.port].drop_n(DropReason::FlushedAtStop, n);
            t.pending.clear();
        }
    }

    fn process_burst(&mut self, in_port: usize, now: u64, c: &LcoreCounters) {
        let shared = &*self.shared;
        let pc = &c.ports[in_port];
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
            if len < MIN_FRAME_LEN {
                if !self.pad_short[in_port] || !pad(&mut m) {
                    pc.drop(DropReason::Runt);
                    continue;
                }
            }
            let parsed = match wire::parse(m.data()) {
                Ok(p) => p,
                Err(_) => {
                    pc.drop(DropReason::Malformed);
                    continue;
                }
            };
            if parsed.dst.is_link_local_reserved() {
                // Never forwarded. MAC control (PFC/PAUSE) is consumed here; the
                // lossless dataplane acts on it.
                if parsed.is_mac_control() {
                    if wire::MacControl::parse(m.data()).is_ok() {
                        pc.mac_control_rx.inc();
                    } else {
                        pc.drop(DropReason::BadMacControl);
                    }
                } else {
                    pc.drop(DropReason::LinkLocal);
                }
                continue;
            }
            let src = parsed.src.0;
            // A zero or group source address is not a station: never learned.
            if src != [0; 6] {
                self.fdb.learn(src, in_port as u16, now);
            }
            let out = if parsed.dst.is_multicast() { None } else { self.fdb.lookup(parsed.dst.0, now) };
            let tc = 0usize;
            match out {
                Some(p) if p as usize == in_port => pc.drop(DropReason::SamePort),
                Some(p) => enqueue(shared, p as usize, tc, m, now, in_port, c),
                None => flood(shared, in_port, tc, m, now, c),
            }
        }
        self.burst.clear();
    }
}

#[inline(always)]
fn enqueue(shared: &Shared, out: usize, tc: usize, m: Mbuf, now: u64, in_port: usize, c: &LcoreCounters) {
    let q = Queued { m, rx_tsc: now, in_port: in_port as u16 };
    if shared.egress[out].tcs[tc].push(q).is_err() {
        c.ports[out].drop(DropReason::EgressQueueFull);
    }
}

/// Send to every port but the ingress one: the original to the last, copies to the others.
fn flood(shared: &Shared, in_port: usize, tc: usize, m: Mbuf, now: u64, c: &LcoreCounters) {
    let nports = shared.egress.len();
    let last = (0..nports).rev().find(|&p| p != in_port);
    let Some(last) = last else {
        c.ports[in_port].drop(DropReason::SamePort);
        return;
    };
    for p in 0..nports {
        if p == in_port || p == last {
            continue;
        }
        c.ports[in_port].flood_copies.inc();
        match copy_mbuf(shared, &m) {
            Some(copy) => enqueue(shared, p, tc, copy, now, in_port, c),
            None => c.ports[p].drop(DropReason::FloodNoMbuf),
        }
    }
    enqueue(shared, last, tc, m, now, in_port, c);
}

fn copy_mbuf(shared: &Shared, m: &Mbuf) -> Option<Mbuf> {
    let mut copy = shared.pool.alloc()?;
    let src = m.data();
    let dst = copy.append(src.len() as u16)?;
    dst.copy_from_slice(src);
    Some(copy)
}

/// Move packets from the egress queues to the TX ring of one port. Returns packets sent.
fn serve_tx(shared: &Shared, t: &mut TxPort, c: &LcoreCounters) -> usize {
    if !t.tx_enable {
        return 0;
    }
    let eg = &shared.egress[t.port];
    // Control frames first.
    while !t.pending.is_full() {
        match eg.control.pop() {
            Some(m) => {
                let _ = t.pending.push(m);
            }
            None => break,
        }
    }
    let control_n = t.pending.len();
    for q in eg.tcs.iter() {
        while !t.pending.is_full() {
            match q.pop() {
                Some(Queued { m, .. }) => {
                    let _ = t.pending.push(m);
                }
                None => break,
            }
        }
    }
    if t.pending.is_empty() {
        return 0;
    }
    let mut bytes = 0u64;
    let before = t.pending.len();
    // Count bytes before the driver takes ownership.
    let n_try = before;
    let mut lens = [0u16; crate::dpdk::BURST_CAP];
    for (i, m) in t.pending.iter().enumerate().take(n_try) {
        lens[i] = m.len() as u16;
    }
    let sent = t.txq.tx_burst(&mut t.pending);
    for l in &lens[control_n.min(sent)..sent] {
        bytes += *l as u64;
    }
    let pcs = &c.ports[t.port];
    let ctl_sent = sent.min(control_n);
    pcs.control_tx.add(ctl_sent as u64);
    pcs.tx_packets.add((sent - ctl_sent) as u64);
    pcs.tx_bytes.add(bytes);
    sent
}
