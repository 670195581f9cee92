//! Egress side of a port: eight traffic-class queues (bounded, multi-producer: any
//! worker may enqueue) and a control queue for the switch's own frames, drained by the
//! one lcore that owns the port's TX.

use crossbeam_queue::ArrayQueue;

use crate::dpdk::Mbuf;

/// A packet waiting for transmission, with what the fast path must remember about it.
pub struct Queued {
    pub m: Mbuf,
    /// TSC at RX (for latency).
    pub rx_tsc: u64,
    /// Ingress port (for per-port accounting).
    pub in_port: u16,
}

pub const NUM_TC: usize = 8;

pub struct EgressPort {
    pub tcs: [ArrayQueue<Queued>; NUM_TC],
    pub control: ArrayQueue<Mbuf>,
}

impl EgressPort {
    pub fn new(queue_len: usize) -> EgressPort {
        EgressPort {
            tcs: std::array::from_fn(|_| ArrayQueue::new(queue_len.max(1))),
            control: ArrayQueue::new(64),
        }
    }

    /// Packets waiting in the TC queues.
    pub fn depth(&self) -> usize {
        self.tcs.iter().map(|q| q.len()).sum()
    }

    /// Drop every queued packet (at shutdown); returns how many were freed.
    pub fn flush(&self) -> usize {
        let mut n = 0;
        for q in &self.tcs {
            while q.pop().is_some() {
                n += 1;
            }
        }
        while self.control.pop().is_some() {}
        n
    }
}
