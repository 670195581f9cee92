//! Egress side of a port. Its eight traffic-class queues live with the lcore that owns
//! the port's TX ([`super::tx::TxPort`]): that lcore enqueues its own packets there
//! directly, without atomics. What other workers send to the port arrives through the
//! port's inbound ring (multi-producer) and joins the TC queues when the owner serves the
//! port. The switch's own PFC frames wait in the control queue. Queue depths are
//! published here for telemetry and the timeline.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

use crossbeam_queue::ArrayQueue;

use crate::dpdk::{Mbuf, Mempool};
use crate::mmu::Charge;
use crate::tcq::Slot;
use crate::wire::{MacAddr, MacControl, MIN_FRAME_LEN, NUM_TC};

/// A packet waiting for transmission, with what the fast path must remember about it.
pub struct Queued {
    pub m: Mbuf,
    /// What the MMU charged at admission; released when `tx_burst` takes the packet.
    pub charge: Charge,
    /// TSC at RX (for latency).
    pub rx_tsc: u64,
    pub in_port: u16,
    /// Traffic class (for per-TC accounting) and egress queue.
    pub tc: u8,
    pub queue: u8,
}

impl Queued {
    /// Where this packet is if it is dropped now: classified, on its way to its queue.
    #[inline]
    pub fn drop_site(&self) -> crate::counters::DropSite {
        let lossless_pg = self.charge.is_lossless().then(|| self.charge.pg());
        crate::counters::DropSite::forwarded(
            self.in_port as usize,
            self.tc,
            self.charge.out_port() as usize,
            self.queue,
            lossless_pg,
        )
    }

    /// What the TX side keeps once per run ([`RunKey`]), and the packet itself.
    #[inline]
    pub fn split(self) -> (RunKey, Slot<Mbuf>) {
        let key = RunKey { charge: self.charge.with_bytes(0), rx_tsc: self.rx_tsc, tc: self.tc };
        let slot = Slot { len: self.m.len() as u32, charged: self.charge.bytes(), p: self.m };
        (key, slot)
    }
}

/// What the packets of one run on a TC queue share: the MMU account (its charge with 0
/// bytes; in it the ingress port and egress queue), the RX time and the TC.
#[derive(Clone, Copy, PartialEq)]
pub struct RunKey {
    pub charge: Charge,
    pub rx_tsc: u64,
    pub tc: u8,
}

impl RunKey {
    /// The packet `m` of this run, charged `charged` bytes, as a [`Queued`] again.
    #[inline]
    pub fn queued(&self, m: Mbuf, charged: u32) -> Queued {
        let c = self.charge;
        Queued {
            m,
            charge: c.with_bytes(charged),
            rx_tsc: self.rx_tsc,
            in_port: c.in_port(),
            tc: self.tc,
            queue: c.queue(),
        }
    }
}

/// A control frame (PFC) and the TSC of the MMU edge that caused it (0 for refreshes).
pub struct Ctl {
    pub m: Mbuf,
    pub edge_tsc: u64,
}

/// PFC frames a port's control queue holds on their way to its TX owner.
pub const CONTROL_QUEUE_LEN: usize = 256;

pub struct EgressPort {
    /// From workers that do not own this port's TX.
    pub inbound: ArrayQueue<Queued>,
    pub control: ArrayQueue<Ctl>,
    /// PFC frames that found no mbuf in the control mempool (each was retried, not lost).
    pub ctl_no_mbuf: AtomicU64,
    /// Set when a PFC frame found no mbuf: the TX owner frees what its PMD holds of
    /// completed sends (`rte_eth_tx_done_cleanup`) before the retry.
    pub ctl_cleanup: AtomicBool,
    /// Packets in each TC queue, as last published by the owner lcore.
    depth: [AtomicU32; NUM_TC],
}

impl EgressPort {
    /// `inbound_len`: what other lcores may have on the way to this port; sized like the
    /// TC queues ([`super::spec::queue_len_for`]) so an admitted packet always has a place.
    pub fn new(inbound_len: usize) -> EgressPort {
        EgressPort {
            inbound: ArrayQueue::new(inbound_len.max(1)),
            control: ArrayQueue::new(CONTROL_QUEUE_LEN),
            ctl_no_mbuf: AtomicU64::new(0),
            ctl_cleanup: AtomicBool::new(false),
            depth: Default::default(),
        }
    }

    /// Packets waiting in TC queue `tc` (published by the owner once per serve).
    pub fn depth(&self, tc: usize) -> u32 {
        self.depth[tc & 7].load(Relaxed)
    }

    /// Packets waiting in all TC queues.
    pub fn total_depth(&self) -> u64 {
        (0..NUM_TC).map(|q| self.depth(q) as u64).sum::<u64>() + self.inbound.len() as u64
    }

    pub(super) fn publish_depth(&self, tc: usize, n: u32) {
        self.depth[tc & 7].store(n, Relaxed);
    }

    /// Put MAC-control frame `f` (source `src`) on the control queue, in an mbuf from
    /// `pool`. `edge_tsc`: the Xoff crossing it reacts to (a reaction sample), 0 for a
    /// refresh or a RESUME. False when there was no room (mbuf or queue): nothing was
    /// queued and the caller keeps its state.
    pub fn queue_control(&self, pool: &Mempool, src: MacAddr, f: &MacControl, edge_tsc: u64) -> bool {
        // Checking first spares an mbuf round trip while the TX lcore is behind (another
        // lcore may take the last place meanwhile: then the push fails).
        if self.control.is_full() {
            return false;
        }
        let Some(mut m) = pool.alloc() else {
            // The pool is empty: PMDs that free lazily hold sent frames. Ask the TX owner
            // to free completed descriptors; the caller keeps its state and retries.
            self.ctl_no_mbuf.fetch_add(1, Relaxed);
            self.ctl_cleanup.store(true, Relaxed);
            return false;
        };
        let Some(buf) = m.append(MIN_FRAME_LEN as u16) else { return false };
        let buf: &mut [u8; MIN_FRAME_LEN] = buf.try_into().expect("appended MIN_FRAME_LEN bytes");
        f.emit(src, buf);
        // On Err the Ctl comes back and its mbuf is freed on drop.
        self.control.push(Ctl { m, edge_tsc }).is_ok()
    }

    /// Put a frame of the switch's own (LLDP: any length) on the control queue, in an mbuf
    /// from `pool`. False when there was no room (mbuf, mbuf size or queue).
    pub fn queue_frame(&self, pool: &Mempool, frame: &[u8]) -> bool {
        let Ok(len) = u16::try_from(frame.len()) else { return false };
        if self.control.is_full() {
            return false;
        }
        let Some(mut m) = pool.alloc() else { return false };
        let Some(buf) = m.append(len) else { return false };
        buf.copy_from_slice(frame);
        self.control.push(Ctl { m, edge_tsc: 0 }).is_ok()
    }

    pub fn drain_control(&self) -> usize {
        let mut n = 0;
        while self.control.pop().is_some() {
            n += 1;
        }
        n
    }
}
