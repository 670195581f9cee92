//! Egress side of a port: eight traffic-class queues (bounded, multi-producer: any
//! worker may enqueue) and a control queue for the switch's own PFC frames, drained by
//! the one lcore that owns the port's TX.

use crossbeam_queue::ArrayQueue;

use crate::dpdk::Mbuf;
use crate::mmu::Charge;

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

/// A control frame (PFC) and the TSC of the MMU edge that caused it (0 for refreshes).
pub struct Ctl {
    pub m: Mbuf,
    pub edge_tsc: u64,
}

pub const NUM_TC: usize = 8;

pub struct EgressPort {
    pub tcs: [ArrayQueue<Queued>; NUM_TC],
    pub control: ArrayQueue<Ctl>,
}

impl EgressPort {
    pub fn new(queue_len: usize) -> EgressPort {
        EgressPort { tcs: std::array::from_fn(|_| ArrayQueue::new(queue_len.max(1))), control: ArrayQueue::new(256) }
    }

    /// Packets waiting in the TC queues.
    pub fn depth(&self) -> usize {
        self.tcs.iter().map(|q| q.len()).sum()
    }

    /// Take every queued packet out (at shutdown; the caller releases the charges).
    pub fn drain(&self) -> impl Iterator<Item = Queued> + '_ {
        self.tcs.iter().flat_map(|q| std::iter::from_fn(move || q.pop()))
    }

    pub fn drain_control(&self) -> usize {
        let mut n = 0;
        while self.control.pop().is_some() {
            n += 1;
        }
        n
    }
}
