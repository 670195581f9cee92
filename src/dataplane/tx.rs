//! The transmit side of one port, served by the lcore that owns it: control frames
//! first (never paused, never charged, not shaped), then the scheduler's pick among the
//! traffic classes that have a packet and are not paused by the peer, within the port
//! shaper. A full TX ring keeps packets queued (backpressure, not loss). The MMU charge
//! of a packet is released when `tx_burst` takes it, per run of packets charged to the
//! same account (one update per counter per run, not per packet).
//!
//! The port's eight TC queues are FIFOs of runs ([`crate::tcq::TcQueue`]) owned by this
//! struct: the owner lcore enqueues its own packets without atomics; other lcores'
//! packets come through the port's inbound ring ([`super::egress::EgressPort`]). Packets
//! taken for the TX ring keep their runs too ([`crate::pending::Pending`]), so what the
//! driver accepts is accounted per run without a per-packet record beyond length and
//! charge.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::counters::{DropReason, LcoreCounters};
use crate::dpdk::{rdtsc, Mbuf, MbufBurst, TxQueue, BURST_CAP};
use crate::pfc::PauseDeadlines;
use crate::pfcwd::{prio_mask_from_queues, Pfcwd};

use super::io::IoMsg;
use crate::sched::{InflightLimit, Scheduler, Shaper};
use crate::wred::{Rng, WredAction, WredProfile};

use super::egress::{EgressPort, Queued, RunKey};
use super::latency::LatencyRecorder;
use super::shared::Shared;
use super::spec::SwitchSpec;
use crate::pending::{Burst, Pending, Settled};
use crate::tcq::{Slot, TcQueue};
use crate::wire::WIRE_OVERHEAD;

impl Burst for MbufBurst {
    type Item = Mbuf;
    #[inline(always)]
    fn len(&self) -> usize {
        MbufBurst::len(self)
    }
    #[inline(always)]
    fn capacity(&self) -> usize {
        BURST_CAP
    }
    #[inline(always)]
    fn push(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        MbufBurst::push(self, m)
    }
    fn insert(&mut self, i: usize, m: Mbuf) -> Result<(), Mbuf> {
        MbufBurst::insert(self, i, m)
    }
    fn drain_into(&mut self, f: impl FnMut(Mbuf)) {
        self.drain().for_each(f);
    }
}

/// PFC frames on a TX queue of their own (`control_tx_queue`): they wait behind no data.
struct ControlTx {
    q: TxQueue,
    pending: MbufBurst,
    /// TSC of the MMU edge of `pending[i]` (0 = refresh).
    edge_tsc: [u64; BURST_CAP],
    /// Test knob `PFCSW_TEST_LAZY_TX_FREE`: sent frames kept as a PMD that frees lazily
    /// keeps them (Intel's, until its ring is nearly full), up to the ring's size less
    /// 32; `rte_eth_tx_done_cleanup` frees them. None: off.
    lazy: Option<LazyFree>,
}

/// The references a lazily freeing PMD would still hold (allocated at start).
struct LazyFree {
    held: std::collections::VecDeque<crate::dpdk::HeldMbuf>,
    cap: usize,
}

pub struct TxPort {
    pub port: usize,
    txq: TxQueue,
    /// A kernel representor: what its driver refuses (a frame over the tap's MTU) is dropped
    /// as `punt_undelivered`, never retried at the head of the line (docs/routing.md).
    kernel: bool,
    /// Taken from the queues (and PFC frames), not yet accepted by the TX ring.
    pending: Pending<MbufBurst, RunKey, BURST_CAP>,
    /// The TC queues (FIFO of runs, at most `egress_queue_len` packets each).
    tcq: [TcQueue<Mbuf, RunKey>; 8],
    /// Depths last published to the egress port (telemetry).
    published: [u32; 8],
    sched: Scheduler,
    shaper: Option<Shaper>,
    rx_pause: Arc<PauseDeadlines>,
    /// Per priority, the queue a peer's PFC frame stops.
    priority_queue: [u8; 8],
    /// Max packets moved per serve call.
    burst: usize,
    /// RX → tx_burst latency per TC, published to the port's shared histograms.
    lat: LatencyRecorder,
    /// PFC watchdog of this port (None = off), and the priorities that sent since its
    /// last poll.
    wd: Option<Pfcwd>,
    progress: u8,
    /// Queues that send only because the watchdog ignores their peer's PAUSE (action
    /// `forward`): what leaves them is the watchdog's `tx_ok`.
    wd_forward_queues: u8,
    /// WRED/ECN profile per egress queue and this lcore's random source for them.
    wred: [Option<WredProfile>; 8],
    rng: Rng,
    /// The data in the device's TX ring (`tx_inflight_limit`; None = as much as it takes).
    inflight: Option<InflightLimit>,
    /// PFC frames' own TX queue, if the port has one.
    ctl: Option<Box<ControlTx>>,
    /// The live settings' generation last copied ([`super::tx_live::TxLive`]).
    live_gen: u64,
    tsc_hz: u64,
}

impl TxPort {
    pub fn new(
        port: usize,
        txq: TxQueue,
        shared: &Shared,
        spec: &SwitchSpec,
        wd: Option<Pfcwd>,
        tsc_hz: u64,
        now: u64,
    ) -> TxPort {
        let (burst, queue_len) = (spec.burst_size, spec.egress_queue_len);
        let rt = &shared.ports[port];
        let plan = &rt.plan;
        // The longest frame that can reach this port: any ingress port's (a jumbo from a
        // 9100-MTU port may be switched to a 1500-MTU one). The scheduler's quantum and
        // the shaper's bucket hold at least one, so neither can wedge a queue behind it.
        let max_frame = crate::wire::max_frame_len(spec.max_mtu());
        let kernel = spec.ports[port].representor_of.is_some() || spec.ports[port].vlan_interface_of.is_some();
        TxPort {
            port,
            txq,
            kernel,
            pending: Pending::new(MbufBurst::new()),
            tcq: std::array::from_fn(|_| TcQueue::new(queue_len)),
            published: [0; 8],
            sched: Scheduler::new(plan.sched, max_frame),
            shaper: plan
                .shaper_bps
                .map(|bps| Shaper::new(bps, Shaper::default_burst(bps, max_frame + WIRE_OVERHEAD), tsc_hz, now)),
            rx_pause: rt.rx_pause.clone(),
            priority_queue: plan.priority_queue,
            burst: burst.clamp(1, BURST_CAP),
            lat: LatencyRecorder::new(tsc_hz, now),
            wd,
            progress: 0,
            wd_forward_queues: 0,
            wred: plan.wred,
            rng: Rng::new(spec.wred_seed.unwrap_or(now) ^ port as u64),
            inflight: plan.tx_inflight.map(|b| InflightLimit::new(rt.speed_bps, b, tsc_hz, now)),
            ctl: None,
            live_gen: rt.tx_live.generation(),
            tsc_hz,
        }
    }

    /// A live change published new WRED profiles or watchdog settings: copy them, between
    /// two dequeues.
    #[cold]
    fn take_live(&mut self, shared: &Shared, generation: u64) {
        let p = shared.ports[self.port].tx_live.params();
        self.wred = p.wred;
        if let (Some(wd), Some(cfg)) = (self.wd.as_mut(), p.pfcwd) {
            wd.reconfigure(&cfg, self.tsc_hz);
            if wd.watch_mask() != p.watch {
                wd.set_watch(p.watch);
            }
            self.wd_forward_queues = forward_queues(wd, &self.priority_queue);
        }
        self.live_gen = generation;
    }

    /// Send PFC frames on `q` (the port's second TX queue) instead of behind data.
    /// `lazy_free`: emulate a PMD that keeps this many sent frames (test knob).
    pub fn with_control_queue(mut self, q: Option<TxQueue>, lazy_free: Option<usize>) -> TxPort {
        self.ctl = q.map(|q| {
            let lazy = lazy_free.map(|cap| LazyFree { held: std::collections::VecDeque::with_capacity(cap + 1), cap });
            Box::new(ControlTx { q, pending: MbufBurst::new(), edge_tsc: [0; BURST_CAP], lazy })
        });
        self
    }

    /// A PFC frame found no mbuf: free what the PMD holds of completed sends on this
    /// port's queues, so the retry finds one.
    #[cold]
    fn tx_done_cleanup(&mut self, shared: &Shared) {
        shared.egress[self.port].ctl_cleanup.store(false, Ordering::Relaxed);
        let _ = self.txq.done_cleanup();
        if let Some(t) = self.ctl.as_mut() {
            let _ = t.q.done_cleanup();
            if let Some(l) = t.lazy.as_mut() {
                l.held.clear();
            }
        }
    }

    /// Put a packet on its TC queue; gives it back when the queue is full (the caller
    /// releases the charge and counts the drop). Never allocates: the queues are
    /// allocated for `cap` packets up front.
    #[inline]
    pub fn enqueue(&mut self, q: Queued) -> Result<(), Queued> {
        let tcq = &mut self.tcq[q.queue as usize & 7];
        if tcq.room() == 0 {
            return Err(q);
        }
        let (key, slot) = q.split();
        let _ = tcq.push(key, slot);
        Ok(())
    }

    /// Free places on TC queue `queue`.
    #[inline]
    pub fn room(&self, queue: u8) -> usize {
        self.tcq[queue as usize & 7].room()
    }

    /// Append a run of packets (one key) to TC queue `key.charge.queue()`; the caller
    /// checked [`TxPort::room`].
    #[inline]
    pub fn enqueue_run(&mut self, key: RunKey, packets: impl Iterator<Item = Slot<Mbuf>>) {
        self.tcq[key.charge.queue() as usize & 7].extend(key, packets);
    }

    /// Move what other lcores sent to this port onto the TC queues.
    fn take_inbound(&mut self, shared: &Shared, worker: usize, now: u64, c: &LcoreCounters) {
        let eg = &shared.egress[self.port];
        if eg.inbound.is_empty() {
            return;
        }
        for _ in 0..(4 * BURST_CAP) {
            let Some(q) = eg.inbound.pop() else { break };
            if let Err(q) = self.enqueue(q) {
                shared.drop_admitted(worker, q, DropReason::EgressQueueFull, now, c);
            }
        }
    }

    /// Publish the TC queue depths that changed (for telemetry and the timeline).
    #[inline]
    fn publish_depths(&mut self, shared: &Shared) {
        for tc in 0..8 {
            let d = self.tcq[tc].len() as u32;
            if d != self.published[tc] {
                self.published[tc] = d;
                shared.egress[self.port].publish_depth(tc, d);
            }
        }
    }

    /// Queues stopped by the peer at `now` (less the priorities the watchdog ignores).
    #[inline]
    fn paused_queues(&self, now: u64) -> u8 {
        let mut prio = self.rx_pause.paused_mask(now);
        if prio == 0 {
            return 0;
        }
        if let Some(wd) = &self.wd {
            prio &= !wd.ignore_pfc_mask();
        }
        let mut q = 0u8;
        for p in 0..8 {
            if prio & (1 << p) != 0 {
                q |= 1 << self.priority_queue[p];
            }
        }
        q
    }

    /// Send waiting PFC frames right away (called between RX bursts, so the reaction time
    /// does not wait for a whole loop iteration). On the data queue they go ahead of the
    /// data already taken for the TX ring: the first free place in the ring is theirs.
    #[inline]
    pub fn serve_control(&mut self, shared: &Shared, worker: usize, now: u64, c: &LcoreCounters) -> usize {
        if shared.egress[self.port].ctl_cleanup.load(Ordering::Relaxed) {
            self.tx_done_cleanup(shared);
        }
        let live = shared.ports[self.port].tx_live.generation();
        if live != self.live_gen {
            self.take_live(shared, live);
        }
        let ctl_waiting = self.ctl.as_ref().is_some_and(|t| !t.pending.is_empty());
        if shared.egress[self.port].control.is_empty() && !ctl_waiting {
            return 0;
        }
        if !shared.ports[self.port].link_up.load(Ordering::Relaxed) {
            self.flush_link_down(shared, worker, now, c);
            return 0;
        }
        if self.ctl.is_some() {
            return self.send_control(shared, c);
        }
        self.take_control(shared);
        self.transmit(shared, worker, now, c)
    }

    /// PFC frames onto the data queue's pending list, after the PFC frames already there
    /// and ahead of data (ports without a control queue; see [`TxPort::send_control`]).
    #[cold]
    fn take_control(&mut self, shared: &Shared) {
        let eg = &shared.egress[self.port];
        while !self.pending.is_full() {
            let Some(ctl) = eg.control.pop() else { break };
            let len = ctl.m.len() as u32;
            if self.pending.insert_control(ctl.m, len, ctl.edge_tsc).is_err() {
                break;
            }
            if let Some(l) = self.inflight.as_mut() {
                l.sent(len + WIRE_OVERHEAD);
            }
        }
    }

    /// The control queue: take waiting PFC frames and hand them to its TX ring.
    fn send_control(&mut self, shared: &Shared, c: &LcoreCounters) -> usize {
        let Some(t) = self.ctl.as_mut() else { return 0 };
        let eg = &shared.egress[self.port];
        while !t.pending.is_full() {
            let Some(ctl) = eg.control.pop() else { break };
            t.edge_tsc[t.pending.len()] = ctl.edge_tsc;
            let _ = t.pending.push(ctl.m);
        }
        if t.pending.is_empty() {
            return 0;
        }
        if let Some(l) = t.lazy.as_mut() {
            for i in 0..t.pending.len() {
                if let Some(m) = t.pending.get(i) {
                    l.held.push_back(m.hold());
                }
            }
        }
        let sent = t.q.tx_burst(&mut t.pending);
        if let Some(l) = t.lazy.as_mut() {
            // The frames not taken are not held by the PMD; the oldest sent ones are
            // freed once it holds a ring's worth.
            let unsent = t.pending.len();
            l.held.truncate(l.held.len() - unsent);
            while l.held.len() > l.cap {
                l.held.pop_front();
            }
        }
        let at = rdtsc();
        for &e in &t.edge_tsc[..sent] {
            if e != 0 {
                c.pfc_reaction.record(at.saturating_sub(e));
            }
        }
        t.edge_tsc.copy_within(sent..sent + t.pending.len(), 0);
        c.ports[self.port].control_tx.add(sent as u64);
        sent
    }

    /// Move what may go now to the TX ring. Returns packets handed to the driver.
    pub fn serve(&mut self, shared: &Shared, worker: usize, now: u64, c: &LcoreCounters) -> usize {
        if !shared.ports[self.port].link_up.load(Ordering::Relaxed) {
            self.flush_link_down(shared, worker, now, c);
            return 0;
        }
        if shared.egress[self.port].ctl_cleanup.load(Ordering::Relaxed) {
            self.tx_done_cleanup(shared);
        }
        // 1. Control frames: first, always.
        let ctl_sent = if self.ctl.is_some() {
            self.send_control(shared, c)
        } else {
            if !shared.egress[self.port].control.is_empty() {
                self.take_control(shared);
            }
            0
        };
        self.take_inbound(shared, worker, now, c);
        // 2. Data, if the port may send (or, disabled, has packets released to it).
        let port = &shared.ports[self.port];
        let budget = if port.tx_enable.load(Ordering::Relaxed) {
            self.burst
        } else {
            (port.tx_credit.load(Ordering::Relaxed) as usize).min(self.burst)
        };
        if budget > 0 {
            let moved = self.dequeue(shared, worker, budget, now, c);
            if !port.tx_enable.load(Ordering::Relaxed) && moved > 0 {
                port.tx_credit.fetch_sub(moved as u64, Ordering::Relaxed);
            }
        }
        self.publish_depths(shared);
        ctl_sent + self.transmit(shared, worker, now, c)
    }

    /// Up to `budget` packets from the TC queues to the pending list, in the scheduler's
    /// order, over the classes that have a packet and are not paused, within the shaper's
    /// tokens and the in-flight limit. Returns how many moved.
    fn dequeue(&mut self, shared: &Shared, worker: usize, budget: usize, now: u64, c: &LcoreCounters) -> usize {
        if let Some(s) = self.shaper.as_mut() {
            s.refill(now);
        }
        if let Some(l) = self.inflight.as_mut() {
            l.drain(now);
        }
        let paused = self.paused_queues(now);
        let mut heads_mask = (0..8).filter(|&tc| !self.tcq[tc].is_empty()).fold(0u8, |m, tc| m | 1 << tc);
        if self.wd.as_ref().is_some_and(|w| w.due(now)) {
            heads_mask = self.watchdog(shared, worker, now, heads_mask, c);
        }
        let mut moved = 0;
        while moved < budget && !self.pending.is_full() {
            let eligible = heads_mask & !paused;
            if eligible == 0 {
                break;
            }
            let tcq = &self.tcq;
            let Some(tc) = self.sched.pick(eligible, |t| tcq[t].front_len().unwrap_or(0)) else {
                break;
            };
            let step = match self.wred[tc] {
                None => self.dequeue_run(tc, budget - moved),
                // A queue with WRED/ECN: packet by packet (each may be marked or dropped).
                Some(w) => self.dequeue_wred(shared, worker, tc, &w, now, c),
            };
            moved += step.moved;
            if self.tcq[tc].is_empty() {
                heads_mask &= !(1 << tc);
            }
            if step.stop {
                break;
            }
        }
        moved
    }

    /// The head run of `tc` (which `pick` chose), as far as the scheduler's grant (the
    /// choices `pick` would make packet by packet), the in-flight limit and the shaper's
    /// tokens let it go: summed here, settled once after the run.
    #[inline]
    fn dequeue_run(&mut self, tc: usize, max: usize) -> Step {
        let max = max.min(self.pending.room());
        let grant = self.sched.grant(tc);
        let tokens = self.shaper.as_ref().map_or(u64::MAX, |s| s.available_fixed());
        let inflight = &mut self.inflight;
        let (mut first, mut stop, mut spent, mut used) = (true, false, 0u64, 0u64);
        let admit = |len: u32| {
            if !first && spent + u64::from(len) > grant {
                return false;
            }
            let wire = len + WIRE_OVERHEAD;
            if !line_admits(inflight, tokens, used, wire) {
                stop = true;
                return false;
            }
            if !first {
                spent += u64::from(len);
            }
            first = false;
            used += Shaper::fixed(wire);
            if let Some(l) = inflight.as_mut() {
                l.sent(wire);
            }
            true
        };
        let head = self.tcq[tc].front_len().unwrap_or(0);
        let since = self.pending.len();
        let pending = &mut self.pending;
        // The length from the mbuf, not the slot: its header line is warm when the PMD
        // takes it (the same as a NIC driver reads it; a software loop such as net_ring
        // gives the very mbuf to its receiver, whose reaction time otherwise pays that miss).
        let taken = self.tcq[tc].take_run(max, admit, |s: Slot<Mbuf>| {
            let len = s.p.len() as u32;
            pending.push(s.p, len, s.charged)
        });
        let Some((k, run)) = taken else {
            return Step { moved: 0, stop: true };
        };
        self.sched.spend(tc, spent);
        if k == 0 {
            // The head packet `pick` charged did not go.
            self.sched.refund(tc, head);
        }
        if let Some(s) = self.shaper.as_mut() {
            s.consume_fixed(used);
        }
        if self.pending.close_run(since, run.key, pending_src(tc, run.serial)) > 0 {
            self.progress |= 1 << (run.key.tc & 7);
        }
        Step { moved: k, stop }
    }

    /// The head packet of `tc` (which `pick` chose), a queue with a WRED/ECN profile:
    /// marked, passed or dropped at dequeue, within the same limits as a run.
    fn dequeue_wred(
        &mut self,
        shared: &Shared,
        worker: usize,
        tc: usize,
        w: &WredProfile,
        now: u64,
        c: &LcoreCounters,
    ) -> Step {
        let len = self.tcq[tc].front_len().unwrap_or(0);
        let wire = len + WIRE_OVERHEAD;
        let tokens = self.shaper.as_ref().map_or(u64::MAX, |s| s.available_fixed());
        if !line_admits(&self.inflight, tokens, 0, wire) {
            self.sched.refund(tc, len);
            return Step { moved: 0, stop: true };
        }
        if let Some(s) = self.shaper.as_mut() {
            s.consume_fixed(Shaper::fixed(wire));
        }
        if let Some(l) = self.inflight.as_mut() {
            l.sent(wire);
        }
        let depth = self.tcq[tc].bytes();
        let Some((mut slot, run)) = self.tcq[tc].pop() else {
            return Step { moved: 0, stop: true };
        };
        let (key, serial) = (run.key, run.serial);
        if !self.wred(w, &mut slot, tc, depth, key.charge.is_lossless(), c) {
            // Dropped: the scheduler's share is not spent on it.
            self.sched.refund(tc, len);
            shared.drop_admitted(worker, key.queued(slot.p, slot.charged), DropReason::Wred, now, c);
            return Step { moved: 0, stop: false };
        }
        let since = self.pending.len();
        self.pending.push(slot.p, len, slot.charged);
        self.pending.close_run(since, key, pending_src(tc, serial));
        self.progress |= 1 << (key.tc & 7);
        Step { moved: 1, stop: false }
    }

    /// WRED/ECN at dequeue on a packet taken from queue `qi`, `depth` bytes deep (itself
    /// included): marks it CE in place, or tells it to be dropped (lossy packets only; the
    /// caller releases the MMU charge and counts `drops.wred`). False when dropped.
    /// `lossless`: the MMU admitted the packet as lossless (its ingress PG's class decides,
    /// not this port's PFC settings: a lossless packet is never dropped here).
    #[inline]
    fn wred(
        &mut self,
        w: &WredProfile,
        slot: &mut Slot<Mbuf>,
        qi: usize,
        depth: u64,
        lossless: bool,
        c: &LcoreCounters,
    ) -> bool {
        if depth < w.min_bytes {
            return true;
        }
        let len = u64::from(slot.len);
        let pc = &c.ports[self.port];
        match w.apply(slot.p.data_mut(), depth, lossless, self.rng.next_u32()) {
            WredAction::Pass => true,
            WredAction::Marked => {
                pc.queue_ecn_marked_packets[qi].inc();
                pc.queue_ecn_marked_bytes[qi].add(len);
                true
            }
            WredAction::Drop => {
                pc.queue_wred_dropped_packets[qi].inc();
                pc.queue_wred_dropped_bytes[qi].add(len);
                false
            }
        }
    }

    fn transmit(&mut self, shared: &Shared, worker: usize, now: u64, c: &LcoreCounters) -> usize {
        if self.pending.is_empty() {
            return 0;
        }
        let sent = self.txq.tx_burst(self.pending.burst_mut());
        let pc = &c.ports[self.port];
        let (mut data, mut bytes, mut ctl) = (0u64, 0u64, 0u64);
        let (lat, wd_forward) = (&mut self.lat, self.wd_forward_queues);
        let (wd, priority_queue, port) = (&self.wd, &self.priority_queue, self.port);
        // Per pending run (same account, RX burst and TC): one MMU release, one counter
        // update, one histogram record.
        self.pending.settle(sent, |s| match s {
            Settled::Control { edge_tsc } => {
                ctl += 1;
                if edge_tsc != 0 {
                    // A fresh reading: `now` may be the RX burst's, the crossing's own.
                    c.pfc_reaction.record(rdtsc().saturating_sub(edge_tsc));
                }
            }
            Settled::Data { key, n, bytes: run_bytes, charged } => {
                shared.push_edge(worker, shared.mmu.release_run(key.charge, charged), now, c);
                let (n, queue) = (u64::from(n), key.charge.queue() as usize & 7);
                if wd_forward & (1 << queue) != 0 {
                    count_watchdog_tx_ok(wd, priority_queue, shared, port, queue as u8, n);
                }
                pc.queue_tx_packets[queue].add(n);
                pc.queue_tx_bytes[queue].add(run_bytes);
                c.ports[key.charge.in_port() as usize].tc_tx[key.tc as usize & 7].add(n);
                lat.record_n(key.tc, now.saturating_sub(key.rx_tsc), n);
                data += n;
                bytes += run_bytes;
            }
        });
        pc.tx_packets.add(data);
        pc.tx_bytes.add(bytes);
        pc.control_tx.add(ctl);
        if self.kernel && !self.pending.is_empty() {
            self.drop_undelivered(shared, worker, now, c);
        }
        if now >= self.lat.next_publish {
            self.lat.publish(&shared.ports[self.port].latency, false);
            self.lat.next_publish = now + self.lat.publish_every;
        }
        sent
    }

    /// A representor's driver took less than offered: the kernel refused the first frame
    /// left (net_tap counts it in `oerrors`: larger than its MTU). Retrying would wedge the
    /// port's path to the kernel behind it for good, so what is left is dropped and counted.
    #[cold]
    fn drop_undelivered(&mut self, shared: &Shared, worker: usize, now: u64, c: &LcoreCounters) {
        self.pending.drain(|key, m, charged| {
            if let Some(key) = key {
                let q = key.queued(m, charged);
                shared.push_edge(worker, shared.mmu.release(q.charge), now, c);
                c.count_drop(q.drop_site(), DropReason::PuntUndelivered, 1);
            }
        });
    }

    /// One watchdog poll: detect/restore storms; with action drop, flush the stormed
    /// priorities' queues (releasing their MMU charges). Returns the updated heads mask.
    #[cold]
    fn watchdog(&mut self, shared: &Shared, worker: usize, now: u64, mut heads_mask: u8, c: &LcoreCounters) -> u8 {
        let Some(wd) = self.wd.as_mut() else { return heads_mask };
        let paused = self.rx_pause.paused_mask(now);
        let nonempty = prio_mask_from_queues(heads_mask, &self.priority_queue);
        let t = wd.poll(now, paused, nonempty, self.progress);
        self.progress = 0;
        if t.detected | t.restored != 0 {
            // Logged by the I/O thread: this lcore formats and writes nothing.
            shared.io.send(IoMsg::Storm {
                port: self.port,
                detected: t.detected,
                restored: t.restored,
                action: wd.action().as_str(),
            });
        }
        self.wd_forward_queues = forward_queues(wd, &self.priority_queue);
        let drop = wd.drop_mask();
        if drop == 0 {
            return heads_mask;
        }
        let state = wd.state();
        for prio in 0..8u8 {
            if drop & (1 << prio) == 0 {
                continue;
            }
            let q = self.priority_queue[prio as usize] as usize & 7;
            let mut n = 0u64;
            while let Some((slot, run)) = self.tcq[q].pop() {
                let p = run.key.queued(slot.p, slot.charged);
                shared.push_edge(worker, shared.mmu.release(p.charge), now, c);
                c.count_drop(p.drop_site(), DropReason::PfcWatchdog, 1);
                n += 1;
            }
            if n > 0 {
                state.count_tx_dropped(prio, n);
            }
            heads_mask &= !(1 << q);
        }
        heads_mask
    }

    /// The link is down: everything held for this port is dropped (`drops.link_down`) and
    /// its MMU charges released — the edges go to the control lcore, which RESUMEs the
    /// ingress PGs this port's backlog held OFF. Control frames for this port are freed.
    #[cold]
    fn flush_link_down(&mut self, shared: &Shared, worker: usize, now: u64, c: &LcoreCounters) {
        let eg = &shared.egress[self.port];
        self.drain_held(eg, |q| {
            shared.push_edge(worker, shared.mmu.release(q.charge), now, c);
            c.count_drop(q.drop_site(), DropReason::LinkDown, 1);
        });
        eg.drain_control();
        if let Some(t) = self.ctl.as_mut() {
            t.pending.drain().for_each(drop);
        }
        self.publish_depths(shared);
    }

    /// Every data packet held for this port — pending for the TX ring, on the TC queues,
    /// on its way from another lcore — to `f`, which owns it (dropping it frees the
    /// mbuf). Pending control frames are freed.
    fn drain_held(&mut self, eg: &EgressPort, mut f: impl FnMut(Queued)) {
        self.pending.drain(|key, m, charged| {
            if let Some(key) = key {
                f(key.queued(m, charged));
            }
        });
        for tcq in self.tcq.iter_mut() {
            while let Some((slot, run)) = tcq.pop() {
                f(run.key.queued(slot.p, slot.charged));
            }
        }
        while let Some(q) = eg.inbound.pop() {
            f(q);
        }
    }

    /// Nothing waits here: no packet pending for the TX ring, queued, on its way from
    /// another lcore, and no control frame (an adaptive worker may nap).
    pub fn is_idle(&self, shared: &Shared) -> bool {
        let eg = &shared.egress[self.port];
        self.pending.is_empty()
            && self.ctl.as_ref().is_none_or(|t| t.pending.is_empty())
            && self.tcq.iter().all(|q| q.is_empty())
            && eg.inbound.is_empty()
            && eg.control.is_empty()
    }

    /// At stop (every worker has stopped enqueueing): free everything held here or on
    /// its way here, releasing the MMU charges.
    pub fn flush(&mut self, shared: &Shared, c: &LcoreCounters) {
        if let Some(t) = self.ctl.as_mut() {
            t.pending.drain().for_each(drop);
        }
        self.drain_held(&shared.egress[self.port], |q| {
            let _ = shared.mmu.release(q.charge);
            c.count_drop(q.drop_site(), DropReason::FlushedAtStop, 1);
        });
        self.publish_depths(shared);
        self.lat.publish(&shared.ports[self.port].latency, true);
    }
}

/// What one dequeue step did: packets moved to the pending list, and whether the line
/// (shaper, in-flight limit) or the queue stops this serve.
struct Step {
    moved: usize,
    stop: bool,
}

/// Whether a frame of `wire` bytes on the line may go now: the in-flight limit admits it
/// and the shaper's `tokens` (16.16 fixed point) cover it after `used` of them.
#[inline(always)]
fn line_admits(inflight: &Option<InflightLimit>, tokens: u64, used: u64, wire: u32) -> bool {
    // The TX ring holds no more than tx_inflight_limit: what stays in the TC queues stays
    // under the scheduler and behind any PFC frame.
    inflight.as_ref().is_none_or(|l| l.admits(wire)) && used + Shaper::fixed(wire) <= tokens
}

/// The source of a run on the pending list: its TC queue and the queue's run serial.
#[inline(always)]
fn pending_src(tc: usize, serial: u32) -> u64 {
    (tc as u64) << 32 | u64::from(serial)
}

/// The queues that send only because the watchdog forwards their stormed priority.
fn forward_queues(wd: &Pfcwd, priority_queue: &[u8; 8]) -> u8 {
    let forward = wd.ignore_pfc_mask() & !wd.drop_mask();
    (0..8).filter(|p| forward & (1 << p) != 0).fold(0, |m, p| m | 1 << (priority_queue[p] & 7))
}

/// `n` packets left `queue` while the watchdog forwards its stormed priority.
#[cold]
fn count_watchdog_tx_ok(wd: &Option<Pfcwd>, priority_queue: &[u8; 8], shared: &Shared, port: usize, queue: u8, n: u64) {
    let (Some(wd), Some(state)) = (wd, &shared.ports[port].pfcwd) else { return };
    let forward = wd.ignore_pfc_mask() & !wd.drop_mask();
    if let Some(prio) = (0..8u8).find(|&p| forward & (1 << p) != 0 && priority_queue[p as usize] & 7 == queue) {
        state.count_tx_ok(prio, n);
    }
}
