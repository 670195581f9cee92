//! One egress TC queue, stored as runs: the packets of a run share everything the TX
//! side needs but the packet itself (the MMU account, RX time, TC), so that key is kept
//! once per run and each packet is 16 bytes — packet, length, charged bytes. The worker
//! appends a whole admitted run with one key; the TX side takes the head run's packets
//! while the scheduler, shaper and in-flight limit let them go ([`TcQueue::take_run`]),
//! and hands the driver's acceptance back to the MMU per run. FIFO order is kept across
//! runs.
//!
//! Generic over the packet (an mbuf in the dataplane, a number in the tests) and the key;
//! pure code, no DPDK (the dataplane's use is in `dataplane::tx`). Never allocates after
//! [`TcQueue::new`]: the packet ring (a power of two ≥ cap) and the run ring (cap + 1:
//! one exhausted run is kept at the front) are allocated up front.

use std::collections::VecDeque;

/// A packet on the queue: the packet, its length, and what the MMU charged for it.
pub struct Slot<P> {
    pub p: P,
    pub len: u32,
    pub charged: u32,
}

/// Consecutive packets with the same key. `serial` tells runs apart (two runs with equal
/// keys are still two runs), `left` is how many of its packets are still queued.
pub struct Run<K> {
    pub key: K,
    pub serial: u32,
    left: u32,
}

pub struct TcQueue<P, K> {
    /// A ring of `mask + 1` (a power of two ≥ cap) places: the packets are
    /// `slots[(head + i) & mask]` for i < len, every other place is empty.
    slots: Box<[Option<Slot<P>>]>,
    mask: usize,
    head: usize,
    len: usize,
    /// The runs of the packets, in order; Σ left = len. The front run may be exhausted
    /// (left = 0): it is what the last `pop` returned, removed by the next pop.
    runs: VecDeque<Run<K>>,
    /// Σ len of the queued packets (the depth WRED decides on).
    bytes: u64,
    cap: usize,
    next_serial: u32,
}

impl<P, K: Copy + PartialEq> TcQueue<P, K> {
    /// A queue for at most `cap` packets (at least 1).
    pub fn new(cap: usize) -> TcQueue<P, K> {
        let cap = cap.max(1);
        let size = cap.next_power_of_two();
        TcQueue {
            slots: (0..size).map(|_| None).collect(),
            mask: size - 1,
            head: 0,
            len: 0,
            runs: VecDeque::with_capacity(cap + 1),
            bytes: 0,
            cap,
            next_serial: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Free places.
    #[inline]
    pub fn room(&self) -> usize {
        self.cap - self.len
    }

    /// Bytes queued.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Length of the packet at the head.
    #[inline]
    pub fn front_len(&self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        self.slots[self.head & self.mask].as_ref().map(|s| s.len)
    }

    /// Count `n` more packets with `key` at the tail: the tail run if its key is equal,
    /// else a new run.
    #[inline]
    fn grow(&mut self, key: K, n: u32) {
        match self.runs.back_mut() {
            Some(r) if r.key == key => r.left += n,
            _ => {
                // An exhausted front run no packet refers to any more makes room.
                if self.runs.front().is_some_and(|r| r.left == 0) {
                    self.runs.pop_front();
                }
                let serial = self.next_serial;
                self.next_serial = serial.wrapping_add(1);
                self.runs.push_back(Run { key, serial, left: n });
            }
        }
    }

    /// Put `s` in the free place `i` (the tail).
    #[inline]
    fn put(&mut self, i: usize, s: Slot<P>) {
        self.bytes += u64::from(s.len);
        // The place is empty: nothing to drop (`forget` spares the check).
        std::mem::forget(self.slots[i & self.mask].replace(s));
    }

    /// Append one packet; gives it back when the queue is full.
    #[inline]
    pub fn push(&mut self, key: K, s: Slot<P>) -> Result<(), Slot<P>> {
        if self.len >= self.cap {
            return Err(s);
        }
        self.put(self.head + self.len, s);
        self.len += 1;
        self.grow(key, 1);
        Ok(())
    }

    /// Append packets that share `key`; the caller checked [`TcQueue::room`] (what does
    /// not fit is not taken from the iterator).
    #[inline]
    pub fn extend(&mut self, key: K, packets: impl Iterator<Item = Slot<P>>) {
        let mut n = 0;
        for s in packets.take(self.room()) {
            self.put(self.head + self.len + n, s);
            n += 1;
        }
        self.len += n;
        if n > 0 {
            self.grow(key, n as u32);
        }
    }

    /// Take packets of the head run, at most `max`, in order while `admit(len)` says yes
    /// (it is asked once per packet and stops the take at its first no); each taken
    /// packet goes to `take`. Returns how many were taken and their run (None when the
    /// queue is empty).
    #[inline]
    pub fn take_run(
        &mut self,
        max: usize,
        mut admit: impl FnMut(u32) -> bool,
        mut take: impl FnMut(Slot<P>),
    ) -> Option<(usize, &Run<K>)> {
        if self.runs.front().is_some_and(|r| r.left == 0) {
            self.runs.pop_front();
        }
        let n = max.min(self.runs.front()?.left as usize).min(self.len);
        let mut k = 0;
        while k < n {
            let slot = &mut self.slots[(self.head + k) & self.mask];
            match slot.as_ref() {
                Some(s) if admit(s.len) => {}
                _ => break,
            }
            if let Some(s) = slot.take() {
                self.bytes -= u64::from(s.len);
                take(s);
            }
            k += 1;
        }
        self.head = (self.head + k) & self.mask;
        self.len -= k;
        let r = self.runs.front_mut()?;
        r.left -= k as u32;
        Some((k, r))
    }

    /// Take the head packet, with the run it belongs to.
    #[inline]
    pub fn pop(&mut self) -> Option<(Slot<P>, &Run<K>)> {
        let mut got = None;
        let (_, r) = self.take_run(1, |_| true, |s| got = Some(s))?;
        Some((got?, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn slot(p: u32, len: u32) -> Slot<u32> {
        Slot { p, len, charged: len.div_ceil(64) * 64 }
    }

    #[test]
    fn fifo_with_runs() {
        let mut q: TcQueue<u32, u8> = TcQueue::new(8);
        q.extend(1, (0..3).map(|i| slot(i, 100 + i)));
        q.push(1, slot(3, 60)).ok().unwrap();
        q.push(2, slot(4, 70)).ok().unwrap();
        assert_eq!(q.len(), 5);
        assert_eq!(q.bytes(), 100 + 101 + 102 + 60 + 70);
        let mut seen = vec![];
        while let Some((s, r)) = q.pop() {
            seen.push((s.p, r.key, r.serial));
        }
        // Packets 0..3 and 3 share key 1 and the tail run: one run.
        assert_eq!(seen, vec![(0, 1, 0), (1, 1, 0), (2, 1, 0), (3, 1, 0), (4, 2, 1)]);
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn full_queue_gives_back_and_extend_takes_what_fits() {
        let mut q: TcQueue<u32, u8> = TcQueue::new(3);
        q.extend(1, (0..5).map(|i| slot(i, 64)));
        assert_eq!(q.len(), 3);
        assert_eq!(q.push(1, slot(9, 64)).err().map(|s| s.p), Some(9));
        assert_eq!(q.pop().map(|(s, _)| s.p), Some(0));
        assert!(q.push(2, slot(9, 64)).is_ok());
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(s, _)| s.p)).collect();
        assert_eq!(order, vec![1, 2, 9]);
    }

    #[test]
    fn take_run_stops_at_the_run_end_and_at_admit() {
        let mut q: TcQueue<u32, u8> = TcQueue::new(16);
        q.extend(1, (0..5).map(|i| slot(i, 100)));
        q.extend(2, (5..8).map(|i| slot(i, 100)));
        let mut got = vec![];
        // The run of key 1 ends after 5 packets, whatever max says.
        let (k, r) = q.take_run(10, |_| true, |s| got.push(s.p)).unwrap();
        assert_eq!((k, r.key), (5, 1));
        // admit says no at the third: two taken, and the refused one stays first.
        let mut asked = 0;
        let (k, r) = q
            .take_run(
                10,
                |_| {
                    asked += 1;
                    asked <= 2
                },
                |s| got.push(s.p),
            )
            .unwrap();
        assert_eq!((k, r.key, asked), (2, 2, 3));
        assert_eq!(q.front_len(), Some(100));
        assert_eq!(q.bytes(), 100);
        let (k, _) = q.take_run(1, |_| true, |s| got.push(s.p)).unwrap();
        assert_eq!(k, 1);
        assert!(q.take_run(1, |_| true, |_| ()).is_none());
        assert_eq!(got, (0..8).collect::<Vec<_>>());
    }

    proptest! {
        /// Against a plain FIFO of (packet, key): same order, same keys, a new serial
        /// exactly where the key changes between consecutively queued packets (or a run
        /// was emptied and refilled with a different key), bytes = Σ len.
        #[test]
        fn equals_a_fifo(ops in proptest::collection::vec((0u8..5, 0u8..3, 1u32..5), 1..200), cap in 1usize..12) {
            let mut q: TcQueue<u32, u8> = TcQueue::new(cap);
            let mut model: VecDeque<(u32, u8, u32)> = VecDeque::new();
            let mut next = 0u32;
            let mut last_serial: Option<(u32, u8)> = None;
            for (op, key, n) in ops {
                match op {
                    0 => {
                        let s = slot(next, 60 + next % 7);
                        match q.push(key, s) {
                            Ok(()) => { model.push_back((next, key, 60 + next % 7)); }
                            Err(s) => { prop_assert_eq!(model.len(), cap); prop_assert_eq!(s.p, next); }
                        }
                        next += 1;
                    }
                    1 => {
                        let room = cap - model.len();
                        let take = (n as usize).min(room);
                        q.extend(key, (0..n).map(|i| slot(next + i, 60 + (next + i) % 7)));
                        for i in 0..take as u32 { model.push_back((next + i, key, 60 + (next + i) % 7)); }
                        next += n;
                    }
                    2 => {
                        // take_run with a byte budget as admit.
                        let mut budget = 60 * n;
                        let mut got = vec![];
                        let res = q.take_run(n as usize, |l| { let ok = l <= budget; if ok { budget -= l; } ok }, |s| got.push((s.p, s.len)));
                        match res {
                            None => prop_assert!(model.is_empty()),
                            Some((k, r)) => {
                                prop_assert_eq!(k, got.len());
                                let key = r.key;
                                for (p, l) in got {
                                    let want = model.pop_front().unwrap();
                                    prop_assert_eq!((p, key, l), want);
                                }
                            }
                        }
                        last_serial = None;
                    }
                    _ => {
                        for _ in 0..n {
                            let got = q.pop().map(|(s, r)| (s.p, r.key, s.len, r.serial));
                            let want = model.pop_front();
                            prop_assert_eq!(got.map(|g| (g.0, g.1, g.2)), want);
                            if let Some((_, k, _, serial)) = got {
                                // A key change between two popped packets is a new run.
                                if let Some((ls, lk)) = last_serial {
                                    if lk != k { prop_assert_ne!(ls, serial); }
                                }
                                last_serial = Some((serial, k));
                            }
                        }
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.bytes(), model.iter().map(|m| u64::from(m.2)).sum::<u64>());
                prop_assert!(q.runs.len() <= cap + 1, "runs stay within their ring");
                prop_assert_eq!(q.runs.iter().map(|r| r.left as usize).sum::<usize>(), q.len());
            }
        }
    }
}
