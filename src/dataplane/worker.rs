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

use crate::classify::Class;
use crate::counters::{DropReason, DropSite, LcoreCounters};
use crate::dpdk::{rdtsc, Mbuf, MbufBurst, RxQueue, BURST_CAP};
use crate::mmu::{self, Verdict};
use crate::pfc::PfcRx;
use crate::pfcwd::PfcwdRxStamps;
use crate::route::{Decision, Ingress, PuntReason, RouteDrop, TrapGroup};
use crate::wire::{self, MacAddr, MacControl, Parsed, MIN_FRAME_LEN};

use super::egress::{Queued, RunKey};
use super::pause_handoff::WorkerNotes;
use super::router::{Held, Router};
use super::shared::Shared;
use super::spec::SwitchSpec;
use super::tx::TxPort;
use crate::tcq::Slot;
use crate::vlan::{self, Egress};

/// One worker lcore's state (DPDK l2fwd's `lcore_queue_conf`, and what the loop keeps
/// between bursts). Built by [`Worker::new`], given its queues, then moved to its lcore.
pub struct Worker {
    /// Index among the workers (its counters, its edge ring), not its lcore id.
    index: usize,
    shared: Arc<Shared>,
    rxqs: Vec<(usize, RxQueue)>,
    txs: Vec<TxPort>,
    /// Per port: index in `txs` if this lcore owns the port's TX.
    local_tx: Vec<Option<usize>>,
    /// Receive-side PFC state of the ports whose MAC-control frames this lcore acts on,
    /// and the watchdog's record of when PAUSE frames arrived there.
    pfc_rx: Vec<Option<PfcRx>>,
    /// Per port: the generation of its PFC set last given to its `PfcRx`.
    pfc_gen: Vec<u64>,
    wd_stamps: Vec<Option<Arc<PfcwdRxStamps>>>,
    /// Per port: several RX queues (a PFC frame may arrive on a queue another lcore polls).
    multi_rx: Vec<bool>,
    /// Owned ports whose PFC inbox this lcore drains every loop.
    pfc_inbox_ports: Vec<usize>,
    /// Per port: pad short frames (kernel-backed ports) rather than drop them.
    pad_short: Vec<bool>,
    /// Per port, the largest frame accepted: MTU + Ethernet/802.1Q header.
    max_frame: Vec<u32>,
    burst: MbufBurst,
    burst_size: usize,
    tsc_hz: u64,
    /// The run being formed: same egress port and class; its mbufs and lengths.
    run: Batch,
    run_mbufs: MbufBurst,
    run_lens: Box<[u32; BURST_CAP]>,
    /// Per packet of the run, its MMU charge (`Mmu::charged`): computed once, when it
    /// joins the run, for both the admission and the queue's slot.
    run_charges: Box<[u32; BURST_CAP]>,
    /// PAUSEs this lcore sent whose note the control lcore has not taken yet.
    notes: WorkerNotes,
    /// `worker_idle = "adaptive"`: nap when idle.
    adaptive: bool,
    /// Flood lossless-class frames to unknown unicast destinations.
    flood_lossless: bool,
    /// The configured ports (bridged and flooded over); the representors come after them.
    nswitch: usize,
    /// Per port: for a kernel representor, the port what the kernel sends on it leaves by.
    kernel_out: Vec<Option<u16>>,
    /// Per port: for a VLAN interface's representor, its VID (what the kernel sends on it
    /// is bridged in that VLAN); 0 otherwise.
    vlan_kernel: Vec<u16>,
    /// Routing (None: no router interface, the L2 switch as it always was).
    router: Option<Box<Router>>,
    /// The bridge ports (bit p: port p): every port but the routed ones, which have no L2
    /// domain (docs/routing.md, "A router's contract"); floods never reach a routed port.
    l2_ports: u64,
    /// No port is routed: every port bridges (also those past 64 without VLANs).
    all_l2: bool,
}

/// No FDB key ([`crate::fdb::vkey`]) and no [`Batch::key`] is this: both leave the top
/// bits 0.
const NO_KEY: u64 = u64::MAX;

/// Empty loop iterations before an adaptive worker naps, and its nap lengths (µs).
const IDLE_SPINS: u32 = 1024;
const NAP_MIN_US: u64 = 20;
const NAP_MAX_US: u64 = 1000;

/// The key of the batch of packets being formed (a run on the egress TC queue once admitted):
/// same egress port, class and losslessness; `key` packs the three in one word (NO_KEY
/// while the batch is empty), so that a packet joins it after one compare.
#[derive(Clone, Copy)]
struct Batch {
    out: u16,
    class: Class,
    lossless: bool,
    key: u64,
}

impl Batch {
    const EMPTY: Batch =
        Batch { out: 0, class: Class { tc: 0, pg: 0, queue: 0, priority: 0 }, lossless: false, key: NO_KEY };

    #[inline(always)]
    fn key(out: u16, class: Class, lossless: bool) -> u64 {
        let c = u32::from_le_bytes([class.tc, class.pg, class.queue, class.priority]);
        u64::from(out) | u64::from(c) << 16 | u64::from(lossless) << 48
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

impl Worker {
    /// Worker number `index` of the switch `spec` describes, with no queues yet.
    pub fn new(index: usize, shared: Arc<Shared>, spec: &SwitchSpec, tsc_hz: u64) -> Worker {
        let nports = spec.ports.len();
        Worker {
            index,
            shared,
            rxqs: Vec::new(),
            txs: Vec::new(),
            local_tx: vec![None; nports],
            pfc_rx: (0..nports).map(|_| None).collect(),
            pfc_gen: vec![0; nports],
            wd_stamps: (0..nports).map(|_| None).collect(),
            multi_rx: spec.ports.iter().map(|p| p.nb_rx > 1).collect(),
            pfc_inbox_ports: Vec::new(),
            pad_short: spec.ports.iter().map(|p| p.pad_short_frames).collect(),
            max_frame: spec.ports.iter().map(|p| p.mtu + crate::wire::MAX_L2_HEADER).collect(),
            burst: MbufBurst::new(),
            burst_size: spec.burst_size.clamp(1, BURST_CAP),
            tsc_hz,
            run: Batch::EMPTY,
            run_mbufs: MbufBurst::new(),
            run_lens: Box::new([0; BURST_CAP]),
            run_charges: Box::new([0; BURST_CAP]),
            notes: WorkerNotes::new(nports),
            adaptive: spec.worker_idle == crate::config::WorkerIdle::Adaptive,
            flood_lossless: spec.flood_lossless,
            nswitch: spec.switch_ports(),
            kernel_out: spec.ports.iter().map(|p| p.representor_of.map(|i| i as u16)).collect(),
            vlan_kernel: spec.ports.iter().map(|p| p.vlan_interface_of.unwrap_or(0)).collect(),
            router: None,
            l2_ports: (0..spec.switch_ports().min(64))
                .filter(|&p| !spec.config.routing.is_routed(p))
                .fold(0, |a, p| a | 1u64 << p),
            all_l2: spec.config.routing.interfaces.is_empty(),
        }
    }

    /// Route on the router interfaces with `r`.
    pub fn route_with(&mut self, r: Router) {
        self.router = Some(Box::new(r));
    }

    /// Poll RX queue `q` of `port` from this lcore.
    pub fn add_rx_queue(&mut self, port: usize, q: RxQueue) {
        self.rxqs.push((port, q));
    }

    /// Act on the MAC-control (PFC) frames `port` receives: its receive-side pause state
    /// and, with the watchdog on, the record of when PAUSE frames arrived.
    pub fn receive_pfc(&mut self, port: usize, rx: PfcRx, wd_stamps: Option<Arc<PfcwdRxStamps>>) {
        self.pfc_rx[port] = Some(rx);
        self.wd_stamps[port] = wd_stamps;
        if self.multi_rx[port] {
            self.pfc_inbox_ports.push(port);
        }
    }

    /// An adaptive worker may nap only when nothing waits for it: no PAUSE of its own to
    /// refresh, nothing queued on the ports it transmits (data or control frames), and no
    /// PG paused anywhere (the control lcore's refreshes leave through the TX owners).
    #[cold]
    fn may_nap(&self, shared: &Shared) -> bool {
        self.notes.is_empty()
            && self.txs.iter().all(|t| t.is_idle(shared))
            && shared.ports.iter().enumerate().all(|(p, rt)| {
                let mut pgs = rt.pfc.lossless_pgs();
                let mut off = false;
                while pgs != 0 {
                    off |= shared.mmu.is_off(p as u16, pgs.trailing_zeros() as u8);
                    pgs &= pgs - 1;
                }
                !off
            })
    }

    /// A MAC-control frame received on `port`: applied here if this lcore owns the port's
    /// receive-side PFC state, else handed to the lcore that does.
    #[cold]
    fn on_mac_control(&mut self, shared: &Shared, port: usize, f: &MacControl, now: u64, c: &LcoreCounters) {
        match self.pfc_rx[port].as_mut() {
            Some(rx) => {
                let out = rx.on_frame(f, now, self.tsc_hz);
                if let Some(st) = &self.wd_stamps[port] {
                    st.note_rx(&out, now);
                }
            }
            None => {
                if shared.ports[port].pfc_inbox.push((*f, now)).is_err() {
                    c.worker.pfc_inbox_overflow.inc();
                }
            }
        }
    }

    /// Apply the MAC-control frames other lcores received on ports whose receive-side
    /// PFC state this lcore owns (ports with several RX queues).
    #[inline]
    fn take_pfc_inbox(&mut self, shared: &Shared) {
        for &p in &self.pfc_inbox_ports {
            while let Some((f, t)) = shared.ports[p].pfc_inbox.pop() {
                if let Some(rx) = self.pfc_rx[p].as_mut() {
                    let out = rx.on_frame(&f, t, self.tsc_hz);
                    if let Some(st) = &self.wd_stamps[p] {
                        st.note_rx(&out, t);
                    }
                }
            }
        }
    }

    /// Own the transmit side of `tx.port`.
    pub fn own_tx(&mut self, tx: TxPort) {
        self.local_tx[tx.port] = Some(self.txs.len());
        self.txs.push(tx);
    }

    /// The receive-side PFC of the ports this lcore owns: a live change of a port's PFC
    /// priorities (`config pfc`) taken, pauses that expired closed (RxWait counters).
    fn settle_pfc_rx(&mut self, shared: &Shared, now: u64) {
        for (port, rx) in self.pfc_rx.iter_mut().enumerate() {
            let Some(rx) = rx.as_mut() else { continue };
            let live = &shared.ports[port].pfc;
            if live.generation() != self.pfc_gen[port] {
                self.pfc_gen[port] = live.generation();
                rx.set_enable(live.pfc_mask(), now);
            }
            rx.poll(now);
        }
    }

    /// The loop: until the switch stops, receive and process a burst per RX queue
    /// (sending waiting PFC frames right after each), serve the ports this lcore
    /// transmits, refresh its own PAUSEs; then give back everything it holds.
    ///
    /// Long (~130 lines) on purpose for now: the per-iteration order (RX, control frames,
    /// TX, settle, QSBR quiescent point, nap with its doorbell) reads top to bottom in one
    /// place; splitting it belongs with a vector rework of the RX side (docs/benchmarks.md,
    /// "The L2 and routed paths: what was tried": measured, not yet done).
    pub fn run(mut self) {
        // A second handle, so the loop can lend `&Shared` while `self` is borrowed mutably.
        let shared = self.shared.clone();
        let counters: &LcoreCounters = &shared.counters[self.index];
        let mut max_loop = 0u64;
        let (mut empty, mut nap_us) = (0u32, NAP_MIN_US);
        if self.adaptive {
            crate::dpdk::set_timer_slack_ns(1_000);
            shared.doorbells[self.index].register();
        }
        // Pauses that expire on their own are accounted (RxWait) by a periodic settle.
        let settle_every = (self.tsc_hz / 1000).max(1);
        let mut next_settle = rdtsc().wrapping_add(settle_every);
        // Until the switch stops receiving (see `Shared::rx_stopped`).
        let mut rx_on = true;
        // Offline until now (start-up grace periods must not wait for a worker not yet
        // running); from here on a quiescent state every iteration, between bursts.
        if let Some(r) = &self.router {
            r.reader.online();
        }
        while shared.running.load(Ordering::Relaxed) {
            let t0 = rdtsc();
            let mut moved = 0usize;
            if rx_on && shared.rx_stopped.load(Ordering::Relaxed) {
                rx_on = false;
                shared.workers_rx_stopped.fetch_add(1, Ordering::SeqCst);
            }
            if rx_on && !self.pfc_inbox_ports.is_empty() {
                self.take_pfc_inbox(&shared);
            }
            for r in 0..if rx_on { self.rxqs.len() } else { 0 } {
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
            if rx_on && !self.notes.is_empty() {
                self.refresh_pauses(&shared, now, counters);
            }
            if !rx_on {
                // Stopping: only the last RESUMEs and what is queued still leave; no need to
                // spin (a spinning lcore would also starve the control lcore on a shared CPU).
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
            if let Some(r) = &self.router {
                r.reader.quiescent();
            }
            let t1 = rdtsc();
            counters.worker.loops.inc();
            if moved > 0 {
                counters.worker.busy_cycles.add(t1.wrapping_sub(t0));
            }
            if t1 >= next_settle {
                next_settle = t1.wrapping_add(settle_every);
                self.settle_pfc_rx(&shared, t1);
            }
            // The longest iteration: what an RX ring must absorb while this lcore is away.
            let took = t1.wrapping_sub(t0);
            if took > max_loop {
                max_loop = took;
                counters.worker.max_loop_cycles.set(took);
            }
            if self.adaptive {
                if moved > 0 {
                    (empty, nap_us) = (0, NAP_MIN_US);
                } else if empty < IDLE_SPINS {
                    empty += 1;
                } else if self.may_nap(&shared) {
                    // Idle path only: a syscall here costs no packet anything but latency.
                    // A PFC frame queued for one of this lcore's ports rings the doorbell
                    // and ends the nap (another worker's PAUSE must not wait for it).
                    let bell = &shared.doorbells[self.index];
                    let nap = std::time::Duration::from_micros(nap_us);
                    // Offline while napping: the routing writer's grace periods do not
                    // wait for a sleeping worker.
                    if let Some(r) = &self.router {
                        r.reader.offline();
                    }
                    let napped = bell.nap(nap, || self.txs.iter().all(|t| t.is_idle(&shared)));
                    if let Some(r) = &self.router {
                        r.reader.online();
                    }
                    if napped {
                        counters.worker.idle_sleeps.inc();
                        nap_us = (nap_us * 2).min(NAP_MAX_US);
                    }
                }
            }
        }
        // Stop: account pauses that ended. Wait until no worker enqueues any more, then
        // free what this lcore holds or what is on its way to it, releasing the charges.
        if let Some(r) = &self.router {
            r.reader.offline();
        }
        let now = rdtsc();
        for rx in self.pfc_rx.iter_mut().flatten() {
            rx.poll(now);
        }
        shared.workers_stopped.fetch_add(1, Ordering::SeqCst);
        let deadline = rdtsc().wrapping_add(self.tsc_hz.saturating_mul(5));
        while shared.workers_stopped.load(Ordering::SeqCst) < shared.workers_launched.load(Ordering::SeqCst)
            && rdtsc() < deadline
        {
            std::hint::spin_loop();
        }
        for t in &mut self.txs {
            t.flush(&shared, counters);
        }
        // Empty the RX rings (bounded: a peer may still be sending).
        for (_, rxq) in self.rxqs.iter_mut() {
            for _ in 0..1024 {
                let n = rxq.rx_burst(&mut self.burst, self.burst_size);
                if n == 0 {
                    break;
                }
                counters.worker.rx_flushed_at_stop.add(n as u64);
                self.burst.clear();
            }
        }
    }

    /// The checks every received frame passes first: one segment, no longer than the
    /// port's largest frame, at least a minimum frame (padded when `pad_short`). False:
    /// dropped and counted at arrival.
    #[inline(always)]
    fn arrival_ok(&self, m: &mut Mbuf, in_port: usize, pad_short: bool, c: &LcoreCounters) -> bool {
        // A chained mbuf is dropped: everything after this sees the first segment only,
        // and the MMU charges its length.
        if m.segments() != 1 || m.pkt_len() > self.max_frame[in_port] {
            let why = if m.segments() != 1 { DropReason::MultiSegment } else { DropReason::Oversize };
            c.count_drop(DropSite::arrival(in_port), why, 1);
            return false;
        }
        if m.len() < MIN_FRAME_LEN && (!pad_short || !pad(m)) {
            c.count_drop(DropSite::arrival(in_port), DropReason::Runt, 1);
            return false;
        }
        true
    }

    /// One received burst: per packet, checks (segments, size, runt), parse, MAC control,
    /// the VLAN, routing's first pass, learning, the forwarding decision and the batch into
    /// runs; then routing's second pass and the counters. Long (~200 lines) with a reason:
    /// the packet's whole way through a worker in one loop body, in data-flow order, with
    /// no per-packet call boundary the optimiser might not inline. A vector rework
    /// (packets left in the RX burst, VPP-style stages over it) would replace this loop
    /// and split it by stage; docs/benchmarks.md ("The L2 and routed paths: what was
    /// tried") says what it would save and why it is an ownership rewrite.
    fn process_burst(&mut self, shared: &Shared, in_port: usize, now: u64, c: &LcoreCounters) {
        if let Some(out) = self.kernel_out[in_port] {
            return self.kernel_burst(shared, in_port, out, now, c);
        }
        if self.vlan_kernel[in_port] != 0 {
            return self.vlan_kernel_burst(shared, in_port, self.vlan_kernel[in_port], now, c);
        }
        // Moved out for the burst (a pointer), so that pass 1 can hold packets in it while
        // runs are formed in `self`.
        let mut router = self.router.take();
        let routes_here = router.as_ref().is_some_and(|r| r.routes_on(in_port));
        let pc = &c.ports[in_port];
        let plan = &shared.ports[in_port].plan;
        let n = self.burst.len();
        let mut rx_bytes = 0u64;
        // Within one burst `now` is fixed: a source learned once needs no refresh, and a
        // destination's lookup holds until the next learn changes the table.
        // Keys are the FDB's own (VID, MAC) words (`fdb::vkey`): one compare.
        let mut learned = NO_KEY;
        let mut looked_up: (u64, Option<u16>) = (NO_KEY, None);
        let vlans = &shared.vlans;
        let vlan_aware = vlans.enabled();
        // Priorities the watchdog has stormed on this port (drop/forward), and the PFC
        // priorities (a live change may replace them): read once a burst.
        let wd_rx = shared.ports[in_port].pfcwd.as_ref().map_or(0, |w| w.ignore_pfc_mask());
        let pfc_mask = shared.ports[in_port].pfc.pfc_mask();
        for i in 0..n {
            if let Some(next) = self.burst.get(i + 2) {
                next.prefetch_data();
            }
            let Some(mut m) = self.burst.take(i) else { continue };
            rx_bytes += m.pkt_len() as u64;
            if !self.arrival_ok(&mut m, in_port, self.pad_short[in_port], c) {
                continue;
            }
            let parsed = match wire::parse(m.data()) {
                Ok(p) => p,
                Err(_) => {
                    c.count_drop(DropSite::arrival(in_port), DropReason::Malformed, 1);
                    continue;
                }
            };
            if parsed.is_mac_control() {
                // PFC / 802.3x PAUSE: update this port's pause deadlines; never forwarded.
                // Ports are promiscuous: only frames to the MAC-control address or to the
                // port's own MAC are for us; others are dropped, never obeyed.
                let to_us = parsed.dst == MacAddr::PFC_DST || parsed.dst == shared.ports[in_port].mac;
                match MacControl::parse(m.data()) {
                    Ok(f) if to_us => {
                        pc.mac_control_rx.inc();
                        self.on_mac_control(shared, in_port, &f, now, c);
                    }
                    _ => c.count_drop(DropSite::arrival(in_port), DropReason::BadMacControl, 1),
                }
                continue;
            }
            if parsed.ethertype == wire::ETHERTYPE_LLDP && parsed.dst == wire::LLDP_DST && shared.lldp.enabled {
                shared.hand_lldp(in_port, m, c);
                continue;
            }
            if parsed.dst.is_link_local_reserved() {
                c.count_drop(DropSite::arrival(in_port), DropReason::LinkLocal, 1);
                continue;
            }
            // The frame's VLAN (0: the VLAN-unaware domain, all of it without [vlan]).
            let vid = if vlan_aware {
                let s_tag = parsed.vlan.is_some() && m.data()[12..14] == wire::ETHERTYPE_QINQ.to_be_bytes();
                match vlans.ingress(in_port, parsed.vlan, s_tag) {
                    Some(v) => v,
                    None => {
                        c.count_drop(DropSite::arrival(in_port), DropReason::VlanNotMember, 1);
                        continue;
                    }
                }
            } else {
                0
            };
            // The router interface the frame arrived on: the port, or its VLAN's interface.
            let rif = if routes_here {
                Some(in_port)
            } else if vid != 0 {
                router.as_deref().and_then(|r| r.vlan_rif(vid))
            } else {
                None
            };
            if let Some(rif) = rif {
                if let Some(r) = router.as_deref_mut() {
                    match self.route_ingress(shared, r, in_port, rif, &parsed, m, now, c) {
                        Some(back) => m = back,
                        None => continue,
                    }
                }
            }
            let src_key = crate::fdb::vkey(vid, parsed.src.0);
            if learned != src_key {
                shared.fdb.learn(vid, parsed.src.0, in_port as u16, now);
                learned = src_key;
                looked_up.0 = NO_KEY;
            }
            let class = plan.qos.classify(&parsed);
            let lossless = pfc_mask & (1 << class.priority) != 0;
            if wd_rx & (1 << class.priority) != 0 && watchdog_rx_drops(shared, in_port, class, c) {
                continue;
            }
            let out = if parsed.dst.is_multicast() {
                None
            } else {
                let dst_key = crate::fdb::vkey(vid, parsed.dst.0);
                if looked_up.0 != dst_key {
                    looked_up = (dst_key, shared.fdb.lookup(vid, parsed.dst.0, now));
                }
                looked_up.1
            };
            let ip = in_port as u16;
            let nports = self.nswitch;
            // The flood domain: every bridge port, or the frame's VLAN's members.
            let domain = if vlan_aware { vlans.flood_mask(vid) & self.l2_ports } else { self.l2_ports };
            let everywhere = !vlan_aware && self.all_l2;
            // (With VLANs the config allows at most 64 ports; a shift past 63 is never a member.)
            let bit = |p: usize| 1u64.checked_shl(p as u32).unwrap_or(0);
            let in_domain = |p: usize| everywhere || domain & bit(p) != 0;
            let tagged_in = parsed.vlan.is_some();
            // Where the packet goes: one port (unicast, or a flood with a single other
            // port), or a flood with copies.
            let single = match out {
                None if lossless && !self.flood_lossless && !parsed.dst.is_multicast() => {
                    count_forwarding_drop(c, in_port, class.tc, DropReason::LosslessUnknownUnicast);
                    continue;
                }
                Some(p) if p == ip => {
                    count_forwarding_drop(c, in_port, class.tc, DropReason::SamePort);
                    continue;
                }
                Some(p) => Some(p),
                None if everywhere && nports == 2 => Some(1 - ip),
                None if !everywhere && (domain & !bit(in_port)).count_ones() == 1 => {
                    Some((domain & !bit(in_port)).trailing_zeros() as u16)
                }
                None => None,
            };
            match single {
                Some(p) => {
                    if vlan_aware && !vlan_edit(&mut m, vlans.egress(vid, p as usize, tagged_in, class.tc), tagged_in) {
                        count_forwarding_drop(c, in_port, class.tc, DropReason::Malformed);
                        continue;
                    }
                    let len = m.len() as u32;
                    self.push_run(shared, ip, p, class, lossless, m, len, now, c);
                }
                None => {
                    self.flush_run(shared, ip, now, c);
                    pc.tc_rx[class.tc as usize].inc();
                    // Flood: the original to the last port, copies to the others; each copy
                    // is admitted by the MMU on its own.
                    let Some(last) = (0..nports).rev().find(|&p| p != in_port && in_domain(p)) else {
                        c.count_drop(DropSite::classified(in_port, class.tc), DropReason::SamePort, 1);
                        continue;
                    };
                    for p in 0..last {
                        if p == in_port || !in_domain(p) {
                            continue;
                        }
                        pc.flood_copies.inc();
                        pc.tc_copies[class.tc as usize].inc();
                        match copy_mbuf(shared, &m) {
                            Some(mut copy) => {
                                if vlan_aware
                                    && !vlan_edit(&mut copy, vlans.egress(vid, p, tagged_in, class.tc), tagged_in)
                                {
                                    c.count_drop(DropSite::classified(in_port, class.tc), DropReason::Malformed, 1);
                                    continue;
                                }
                                self.admit_one(shared, ip, p, class, lossless, copy, now, c)
                            }
                            None => {
                                c.count_drop(DropSite::classified(in_port, class.tc), DropReason::FloodNoMbuf, 1);
                            }
                        }
                    }
                    if vlan_aware && !vlan_edit(&mut m, vlans.egress(vid, last, tagged_in, class.tc), tagged_in) {
                        c.count_drop(DropSite::classified(in_port, class.tc), DropReason::Malformed, 1);
                        continue;
                    }
                    self.admit_one(shared, ip, last, class, lossless, m, now, c);
                }
            }
        }
        if let Some(r) = router.as_deref_mut() {
            if r.held() > 0 {
                self.route_held(shared, r, in_port, now, c);
            }
        }
        self.router = router;
        self.flush_run(shared, in_port as u16, now, c);
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        self.burst.clear();
    }

    /// Add a packet to the run being formed (same egress port and class), flushing the run
    /// before if it differs.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push_run(
        &mut self,
        shared: &Shared,
        in_port: u16,
        out: u16,
        class: Class,
        lossless: bool,
        m: Mbuf,
        len: u32,
        now: u64,
        c: &LcoreCounters,
    ) {
        let key = Batch::key(out, class, lossless);
        if self.run.key != key {
            self.flush_run(shared, in_port, now, c);
            self.run = Batch { out, class, lossless, key };
        }
        let k = self.run_mbufs.len();
        self.run_lens[k] = len;
        self.run_charges[k] = shared.mmu.charged(len);
        let _ = self.run_mbufs.push(m);
    }

    /// Pass 1 of routing, on a router interface: a frame for the kernel is punted, one to
    /// the router MAC held for the burst's lookup, a malformed one dropped; anything else
    /// comes back to be bridged.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn route_ingress(
        &mut self,
        shared: &Shared,
        r: &mut Router,
        in_port: usize,
        rif: usize,
        parsed: &Parsed,
        mut m: Mbuf,
        now: u64,
        c: &LcoreCounters,
    ) -> Option<Mbuf> {
        let ing = r.ingress(rif, parsed, m.data());
        if ing == Ingress::Done(Decision::Bridge) {
            return Some(m);
        }
        let mut l3_offset = parsed.l3_offset as u16;
        let tagged = parsed.vlan.is_some();
        // On a VLAN interface: a broadcast or multicast the kernel wants (ARP, ND) is
        // bridged in the VLAN too, and a copy goes up the VLAN's representor.
        if rif != in_port && parsed.dst.is_multicast() {
            if let Ingress::Done(Decision::Punt(why)) = ing {
                self.punt_copy(shared, r, in_port, rif, why, parsed, &m, now, c);
            }
            return Some(m);
        }
        // Whatever reaches the kernel or is routed leaves untagged: the tag was the VLAN's,
        // or (on a routed port) a priority tag, VID 0 (docs/routing.md).
        if tagged && matches!(ing, Ingress::Lookup | Ingress::Done(Decision::Punt(_))) {
            if !vlan_edit(&mut m, Egress::Untag, true) {
                let class = shared.ports[in_port].plan.qos.classify(parsed);
                count_forwarding_drop(c, in_port, class.tc, DropReason::Malformed);
                return None;
            }
            l3_offset -= wire::VLAN_TAG_LEN as u16;
        }
        let plan = &shared.ports[in_port].plan;
        let class = plan.qos.classify(parsed);
        let lossless = shared.ports[in_port].pfc.pfc_mask() & (1 << class.priority) != 0;
        let wd_rx = shared.ports[in_port].pfcwd.as_ref().map_or(0, |w| w.ignore_pfc_mask());
        if wd_rx & (1 << class.priority) != 0 && watchdog_rx_drops(shared, in_port, class, c) {
            return None;
        }
        let len = m.len() as u32;
        match ing {
            Ingress::Lookup => r.hold(m, Held { l3_offset, class, lossless, len, rif: rif as u16 }),
            Ingress::Done(Decision::Punt(why)) => {
                let group = TrapGroup::of(why, r.ingress_l3());
                self.punt(shared, r, in_port, rif, (why, group), class, lossless, m, len, now, c)
            }
            Ingress::Done(Decision::Drop(why)) => count_forwarding_drop(c, in_port, class.tc, route_drop(why)),
            // `ingress` decides no route itself; bridging was handled above.
            Ingress::Done(Decision::Route(_) | Decision::Bridge | Decision::TooBig(_)) => {
                count_forwarding_drop(c, in_port, class.tc, DropReason::Malformed)
            }
        }
        None
    }

    /// Pass 2 of routing: look the held packets up in bulk, then forward (rewrite and join
    /// a run to the egress port, in the class pass 1 found), punt or drop each.
    fn route_held(&mut self, shared: &Shared, r: &mut Router, in_port: usize, now: u64, c: &LcoreCounters) {
        r.lookup_held();
        let down = shared.link_down_mask.load(Ordering::Relaxed);
        let pc = &c.ports[in_port];
        let (mut routed, mut bytes) = (0u64, 0u64);
        for k in 0..r.held() {
            let Some((mut m, h, d)) = r.decide_held(k, down) else { continue };
            match d {
                Decision::Route(to) => {
                    wire::route_rewrite(m.data_mut(), usize::from(h.l3_offset), to.dst_mac, r.mac(to.port));
                    routed += 1;
                    bytes += u64::from(h.len);
                    match r.vlan_of(to.port) {
                        None => self.push_run(shared, in_port as u16, to.port, h.class, h.lossless, m, h.len, now, c),
                        // Into a VLAN: the neighbour's port from the VLAN's FDB.
                        Some(vid) => self.bridge_in_vlan(shared, in_port, vid, h.class, h.lossless, m, now, c),
                    }
                }
                Decision::Punt(why) => {
                    let (len, group) = (m.len() as u32, TrapGroup::of(why, r.held_l3(k)));
                    let (rif, class) = (usize::from(h.rif), h.class);
                    self.punt(shared, r, in_port, rif, (why, group), class, h.lossless, m, len, now, c)
                }
                Decision::TooBig(mtu) => self.too_big(shared, r, in_port, h, m, mtu, now, c),
                Decision::Drop(why) => count_forwarding_drop(c, in_port, h.class.tc, route_drop(why)),
                Decision::Bridge => count_forwarding_drop(c, in_port, h.class.tc, DropReason::Malformed),
            }
        }
        r.clear_held();
        pc.routed_packets.add(routed);
        pc.routed_bytes.add(bytes);
    }

    /// A held packet larger than its egress MTU `mtu`: an IPv4 packet without DF goes to the
    /// kernel to be fragmented (`mtu_exceeded`); otherwise the router answers ICMP
    /// fragmentation needed / packet too big itself, from the ingress interface's address,
    /// back to the previous hop (the kernel never receives a jumbo the representor refuses),
    /// policed as CoPP group `mtu`; the packet is dropped as `too_big`.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn too_big(
        &mut self,
        shared: &Shared,
        r: &mut Router,
        in_port: usize,
        h: Held,
        m: Mbuf,
        mtu: u16,
        now: u64,
        c: &LcoreCounters,
    ) {
        let (rif, class) = (usize::from(h.rif), h.class);
        let port = r.ports[rif];
        let l3 = m.data().get(usize::from(h.l3_offset)..).unwrap_or(&[]);
        let v4 = l3.first().is_some_and(|b| b >> 4 == 4);
        let df = v4 && l3.get(6).is_some_and(|f| f & 0x40 != 0);
        let can_answer = if v4 { df && port.src4.is_some() } else { port.src6.is_some() };
        if !can_answer {
            let len = m.len() as u32;
            let why = (PuntReason::MtuExceeded, TrapGroup::Mtu);
            return self.punt(shared, r, in_port, rif, why, class, h.lossless, m, len, now, c);
        }
        let pc = &c.ports[in_port];
        pc.tc_rx[class.tc as usize & 7].inc();
        let site = DropSite { lossless_pg: None, ..DropSite::classified(in_port, class.tc) };
        if !r.limiter.admit(in_port, TrapGroup::Mtu, now) {
            pc.copp_dropped[TrapGroup::Mtu.index()].inc();
            return c.count_drop(site, DropReason::TooBig, 1);
        }
        pc.copp_passed[TrapGroup::Mtu.index()].inc();
        c.count_drop(site, DropReason::TooBig, 1);
        let Some(mut icmp) = shared.pool.alloc() else { return };
        let prev_hop = MacAddr(m.data()[6..12].try_into().unwrap_or([0; 6]));
        let Some(buf) = icmp.append(wire::ICMP_ERROR_MAX_FRAME as u16) else { return };
        let n = match (port.src4, port.src6) {
            (Some(src), _) if v4 => wire::frag_needed(buf, prev_hop, port.mac, src, l3, mtu),
            (_, Some(src)) => wire::packet_too_big(buf, prev_hop, port.mac, src, l3, u32::from(mtu)),
            _ => None,
        };
        let Some(n) = n else { return };
        icmp.trim((wire::ICMP_ERROR_MAX_FRAME - n) as u16);
        pc.generated.inc();
        match r.vlan_of(rif as u16) {
            // On a VLAN interface: back to the previous hop's member port.
            Some(vid) => self.bridge_in_vlan(shared, in_port, vid, class, false, icmp, now, c),
            None => {
                let len = icmp.len() as u32;
                self.push_run(shared, in_port as u16, in_port as u16, class, false, icmp, len, now, c)
            }
        }
    }

    /// Up the representor of router interface `rif` (`in_port`, or the VLAN interface it
    /// arrived on) if the class's rate allows: an egress like any other, lossy (the kernel
    /// cannot be paused), in the packet's queue.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn punt(
        &mut self,
        shared: &Shared,
        r: &mut Router,
        in_port: usize,
        rif: usize,
        (why, group): (PuntReason, TrapGroup),
        class: Class,
        lossless: bool,
        m: Mbuf,
        len: u32,
        now: u64,
        c: &LcoreCounters,
    ) {
        let pc = &c.ports[in_port];
        match r.rep_of.get(rif).copied().flatten() {
            Some(rep) if r.limiter.admit(in_port, group, now) => {
                pc.punted[why.index()].inc();
                pc.copp_passed[group.index()].inc();
                self.push_run(shared, in_port as u16, rep, class, false, m, len, now, c);
            }
            _ => {
                pc.punt_dropped[why.index()].inc();
                pc.copp_dropped[group.index()].inc();
                // A lossless-class packet lost here is a lossless discard (counters.rs).
                pc.tc_rx[class.tc as usize & 7].inc();
                let site =
                    DropSite { lossless_pg: lossless.then_some(class.pg), ..DropSite::classified(in_port, class.tc) };
                c.count_drop(site, DropReason::PuntRateLimited, 1);
            }
        }
    }

    /// A burst from a kernel representor (ARP/ND answers, ICMP errors, BGP): out of the
    /// port it represents unchanged, through the MMU (lossy) and the scheduler in its
    /// DSCP's class. Nothing is learned or looked up.
    fn kernel_burst(&mut self, shared: &Shared, in_port: usize, out: u16, now: u64, c: &LcoreCounters) {
        let pc = &c.ports[in_port];
        let plan = &shared.ports[in_port].plan;
        let n = self.burst.len();
        let mut rx_bytes = 0u64;
        for i in 0..n {
            let Some(mut m) = self.burst.take(i) else { continue };
            rx_bytes += m.pkt_len() as u64;
            if !self.arrival_ok(&mut m, in_port, true, c) {
                continue;
            }
            let len = m.len() as u32;
            let Ok(parsed) = wire::parse(m.data()) else {
                c.count_drop(DropSite::arrival(in_port), DropReason::Malformed, 1);
                continue;
            };
            let class = plan.qos.classify(&parsed);
            self.push_run(shared, in_port as u16, out, class, false, m, len, now, c);
        }
        self.flush_run(shared, in_port as u16, now, c);
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        self.burst.clear();
    }

    /// A copy of a broadcast the kernel wants (ARP, ND) up VLAN interface `rif`'s
    /// representor, if the class's rate allows; counted as a flood copy (the original is
    /// bridged in the VLAN).
    #[allow(clippy::too_many_arguments)]
    #[cold]
    fn punt_copy(
        &mut self,
        shared: &Shared,
        r: &mut Router,
        in_port: usize,
        rif: usize,
        why: PuntReason,
        parsed: &Parsed,
        m: &Mbuf,
        now: u64,
        c: &LcoreCounters,
    ) {
        let pc = &c.ports[in_port];
        let class = shared.ports[in_port].plan.qos.classify(parsed);
        let Some(rep) = r.rep_of.get(rif).copied().flatten() else { return };
        let group = TrapGroup::of(why, r.ingress_l3());
        if !r.limiter.admit(in_port, group, now) {
            pc.punt_dropped[why.index()].inc();
            pc.copp_dropped[group.index()].inc();
            return;
        }
        pc.copp_passed[group.index()].inc();
        pc.flood_copies.inc();
        pc.tc_copies[class.tc as usize & 7].inc();
        match copy_mbuf(shared, m) {
            Some(mut copy) => {
                if parsed.vlan.is_some() && !vlan_edit(&mut copy, Egress::Untag, true) {
                    return c.count_drop(DropSite::classified(in_port, class.tc), DropReason::Malformed, 1);
                }
                pc.punted[why.index()].inc();
                self.admit_one(shared, in_port as u16, usize::from(rep), class, false, copy, now, c);
            }
            None => c.count_drop(DropSite::classified(in_port, class.tc), DropReason::FloodNoMbuf, 1),
        }
    }

    /// A burst from a VLAN interface's representor (ARP/ND, ICMP, replies of the kernel on
    /// `Vlan1000`): bridged in VLAN `vid` like a frame a member received (FDB lookup,
    /// flood to the members), lossy. Nothing is learned.
    fn vlan_kernel_burst(&mut self, shared: &Shared, in_port: usize, vid: u16, now: u64, c: &LcoreCounters) {
        let pc = &c.ports[in_port];
        let n = self.burst.len();
        let mut rx_bytes = 0u64;
        for i in 0..n {
            let Some(mut m) = self.burst.take(i) else { continue };
            rx_bytes += m.pkt_len() as u64;
            if !self.arrival_ok(&mut m, in_port, true, c) {
                continue;
            }
            let class = match wire::parse(m.data()) {
                Ok(p) if p.vlan.is_none() => shared.ports[in_port].plan.qos.classify(&p),
                // The kernel's VLAN interface sends untagged frames; anything else is not ours.
                _ => {
                    c.count_drop(DropSite::arrival(in_port), DropReason::Malformed, 1);
                    continue;
                }
            };
            self.bridge_in_vlan(shared, in_port, vid, class, false, m, now, c);
        }
        self.flush_run(shared, in_port as u16, now, c);
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        self.burst.clear();
    }

    /// Send an untagged frame (routed into VLAN `vid`, or from its VLAN interface) to
    /// its destination's member port from the VLAN's FDB, tagged as that member wants;
    /// an unknown or multicast destination is flooded to every member (as SONiC's ASIC
    /// does: the kernel's ARP entry outlives the FDB entry).
    #[allow(clippy::too_many_arguments)]
    fn bridge_in_vlan(
        &mut self,
        shared: &Shared,
        in_port: usize,
        vid: u16,
        class: Class,
        lossless: bool,
        mut m: Mbuf,
        now: u64,
        c: &LcoreCounters,
    ) {
        let vlans = &shared.vlans;
        let dst = MacAddr(m.data()[..6].try_into().unwrap_or([0; 6]));
        let ip = in_port as u16;
        let out = if dst.is_multicast() { None } else { shared.fdb.lookup(vid, dst.0, now) };
        if let Some(p) = out {
            if !vlan_edit(&mut m, vlans.egress(vid, usize::from(p), false, class.tc), false) {
                count_forwarding_drop(c, in_port, class.tc, DropReason::Malformed);
                return;
            }
            let len = m.len() as u32;
            return self.push_run(shared, ip, p, class, lossless, m, len, now, c);
        }
        if lossless && !self.flood_lossless && !dst.is_multicast() {
            return count_forwarding_drop(c, in_port, class.tc, DropReason::LosslessUnknownUnicast);
        }
        self.flush_run(shared, ip, now, c);
        let pc = &c.ports[in_port];
        pc.tc_rx[class.tc as usize & 7].inc();
        let domain = vlans.flood_mask(vid);
        let Some(last) = (0..self.nswitch.min(64)).rev().find(|&p| domain & (1u64 << p) != 0) else {
            c.count_drop(DropSite::classified(in_port, class.tc), DropReason::SamePort, 1);
            return;
        };
        for p in 0..last {
            if domain & (1u64 << p) == 0 {
                continue;
            }
            pc.flood_copies.inc();
            pc.tc_copies[class.tc as usize & 7].inc();
            match copy_mbuf(shared, &m) {
                Some(mut copy) => {
                    if !vlan_edit(&mut copy, vlans.egress(vid, p, false, class.tc), false) {
                        c.count_drop(DropSite::classified(in_port, class.tc), DropReason::Malformed, 1);
                        continue;
                    }
                    self.admit_one(shared, ip, p, class, lossless, copy, now, c)
                }
                None => c.count_drop(DropSite::classified(in_port, class.tc), DropReason::FloodNoMbuf, 1),
            }
        }
        if !vlan_edit(&mut m, vlans.egress(vid, last, false, class.tc), false) {
            c.count_drop(DropSite::classified(in_port, class.tc), DropReason::Malformed, 1);
            return;
        }
        self.admit_one(shared, ip, last, class, lossless, m, now, c);
    }

    /// Admit and enqueue the run formed so far (all of it at once when the MMU allows).
    fn flush_run(&mut self, shared: &Shared, in_port: u16, now: u64, c: &LcoreCounters) {
        let k = self.run_mbufs.len();
        if k == 0 {
            return;
        }
        let Batch { out, class, lossless, .. } = self.run;
        // Whatever happens below, the batch is empty after it.
        self.run.key = NO_KEY;
        let (tc, queue) = (class.tc & 7, class.queue & 7);
        c.ports[in_port as usize].tc_rx[tc as usize].add(k as u64);
        let out_u = out as usize;
        if !shared.ports[out_u].link_up.load(Ordering::Relaxed) {
            // A dead egress admits nothing: its buffer must not hold an ingress PG OFF.
            let site = DropSite::forwarded(in_port as usize, tc, out_u, queue, lossless.then_some(class.pg));
            c.count_drop(site, DropReason::LinkDown, k as u64);
            self.run_mbufs.clear();
            return;
        }
        let wd_drop = shared.ports[out_u].pfcwd.as_ref().is_some_and(|wd| wd.drop_mask() & (1 << class.priority) != 0);
        let mut i = 0;
        while i < k {
            let prefix = if wd_drop {
                None
            } else {
                shared.mmu.admit_prefix(in_port, class.pg, out, queue, &self.run_charges[i..k], lossless)
            };
            match prefix {
                Some((seg, cnt)) => {
                    let (mmu, lens, charges, mbufs) =
                        (&shared.mmu, &self.run_lens, &self.run_charges, &mut self.run_mbufs);
                    // One key for the run; per packet its mbuf, length and charge.
                    let key =
                        RunKey { charge: mmu.bulk_charge(in_port, class.pg, out, queue, 0, seg), rx_tsc: now, tc };
                    let packets = (i..i + cnt)
                        .filter_map(|j| mbufs.take(j).map(|p| Slot { p, len: lens[j], charged: charges[j] }));
                    match self.local_tx[out_u] {
                        // Our own port with room for all: straight onto its TC queue.
                        Some(ix) if self.txs[ix].room(queue) >= cnt => self.txs[ix].enqueue_run(key, packets),
                        _ => {
                            for s in packets {
                                let q = key.queued(s.p, s.charged);
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
    fn admit_one(
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
                enqueue(shared, &mut self.txs, &self.local_tx, self.index, q, now, c);
            }
        }
    }

    /// An MMU edge from an admission. The PAUSE of an Xoff crossing leaves from here at
    /// once, one frame per PG it names (see pause_handoff); anything else (a RESUME, a PG
    /// whose hand-off failed) goes to the control lcore.
    #[inline]
    fn on_edge(&mut self, shared: &Shared, edge: Option<mmu::Edge>, now: u64, c: &LcoreCounters) {
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

impl Worker {
    /// Refresh the PAUSEs this lcore sent while the control lcore has not taken them over
    /// (it naps up to `lcores.control_nap`, longer than a refresh interval at 100G):
    /// whenever the PG is OFF and the last PAUSE is a refresh interval old.
    fn refresh_pauses(&mut self, shared: &Shared, now: u64, c: &LcoreCounters) {
        let n = self.notes.refresh(
            |port, pg| &shared.ports[port as usize].pause[pg as usize],
            |port, pg, last| {
                now.wrapping_sub(last) >= shared.ports[port as usize].refresh_ticks && shared.mmu.is_off(port, pg)
            },
            |port, pg| {
                let prios = shared.ports[port as usize].pfc.pg_priorities(pg);
                shared.queue_pause(port as usize, prios, 0)
            },
            now,
        );
        c.worker.pause_refreshes.add(n);
    }
}

/// Hand an admitted packet to its egress port: straight onto the TC queue when this lcore
/// owns the port's TX, else through the port's inbound ring. A full queue drops it
/// (after admission: the charge is given back).
#[inline(always)]
fn enqueue(
    shared: &Shared,
    txs: &mut [TxPort],
    local_tx: &[Option<usize>],
    worker: usize,
    q: Queued,
    now: u64,
    c: &LcoreCounters,
) {
    let out = q.charge.out_port() as usize;
    let res = match local_tx.get(out).copied().flatten() {
        Some(ix) => txs[ix].enqueue(q),
        None => shared.egress[out].inbound.push(q),
    };
    if let Err(q) = res {
        shared.drop_admitted(worker, q, DropReason::EgressQueueFull, now, c);
    }
}

/// Give a frame (received with a tag or not: `tagged`) its egress tag (see
/// [`crate::vlan`]), in place: a tag is inserted in the
/// mbuf's headroom, removed by moving the MACs over it (padded back to 60 bytes), or its
/// TCI rewritten. False if the mbuf cannot take it (no headroom or tailroom: not with
/// DPDK's 128-byte headroom and a data room above the MTU).
#[inline]
fn vlan_edit(m: &mut Mbuf, e: Egress, tagged: bool) -> bool {
    const TAG: u16 = wire::VLAN_TAG_LEN as u16;
    match e {
        Egress::Keep => true,
        Egress::Tag(t) if tagged => vlan::write_tci(m.data_mut(), t),
        Egress::Tag(t) => m.prepend(TAG).is_some_and(|d| vlan::write_inserted_tag(d, t)),
        Egress::Untag => match vlan::write_removed_tag(m.data_mut()) {
            Some(pad) => {
                m.adj(TAG);
                pad == 0 || m.append(pad as u16).map(|tail| tail.fill(0)).is_some()
            }
            None => false,
        },
    }
}

fn copy_mbuf(shared: &Shared, m: &Mbuf) -> Option<Mbuf> {
    let mut copy = shared.pool.alloc()?;
    let src = m.data();
    let dst = copy.append(src.len() as u16)?;
    dst.copy_from_slice(src);
    Some(copy)
}

/// The counter a router drop is counted under.
fn route_drop(why: RouteDrop) -> DropReason {
    match why {
        RouteDrop::Blackhole => DropReason::RouteBlackhole,
        RouteDrop::Malformed => DropReason::RouteMalformed,
        RouteDrop::NotRouterMac => DropReason::NotRouterMac,
        RouteDrop::NotRouted => DropReason::NotRouted,
        RouteDrop::Tagged => DropReason::VlanNotMember,
        RouteDrop::BadChecksum => DropReason::RouteBadChecksum,
        RouteDrop::MartianSource => DropReason::RouteMartianSource,
        RouteDrop::MartianDestination => DropReason::RouteMartianDestination,
    }
}

/// A classified packet the forwarding decision drops (no egress): received and dropped in
/// its TC's balance on the ingress port, under `why`.
#[inline]
fn count_forwarding_drop(c: &LcoreCounters, in_port: usize, tc: u8, why: DropReason) {
    c.ports[in_port].tc_rx[tc as usize & 7].inc();
    c.count_drop(DropSite::classified(in_port, tc), why, 1);
}

/// A packet received on a port whose priority the watchdog has stormed: counted in the
/// watchdog's `rx_ok`, or with action `drop` dropped (`rx_dropped`, `drops.pfc_watchdog`),
/// as SONiC drops what a storming peer keeps sending. Returns true if dropped.
#[cold]
fn watchdog_rx_drops(shared: &Shared, in_port: usize, class: Class, c: &LcoreCounters) -> bool {
    let Some(wd) = &shared.ports[in_port].pfcwd else { return false };
    if wd.drop_mask() & (1 << class.priority) != 0 {
        wd.count_rx_dropped(class.priority, 1);
        count_forwarding_drop(c, in_port, class.tc, DropReason::PfcWatchdog);
        true
    } else {
        wd.count_rx_ok(class.priority, 1);
        false
    }
}
