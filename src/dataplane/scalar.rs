//! The worker's receive side as it was before the stages (`rx/`): one loop body per
//! packet, packets moved into runs. Kept as the stages' test oracle (docs/layout.md,
//! "The RX stages and their oracle"): `PFCSW_RX_ORACLE=scalar` in the environment runs a
//! switch on it, and tests/rx_oracle.rs replays the same random bursts through both and
//! compares every output frame and counter. To be deleted once the oracle has held
//! through the exact-count, probe, VLAN and routed suites on the stages.
#![allow(clippy::too_many_arguments)]

use std::sync::atomic::Ordering;

use crate::classify::Class;
use crate::counters::{DropReason, DropSite, LcoreCounters};
use crate::dpdk::{Mbuf, MbufBurst, BURST_CAP};
use crate::route::{Decision, Ingress, PuntReason, TrapGroup};
use crate::tcq::Slot;
use crate::vlan::Egress;
use crate::wire::{self, MacAddr, MacControl, Parsed, MIN_FRAME_LEN};

use super::egress::RunKey;
use super::router::{Held, Router};
use super::rx::drops::{count_forwarding_drop, route_drop, watchdog_rx_drops};
use super::rx::edit::{copy_mbuf, vlan_edit};
use super::rx::mac_control::MacControlRx;
use super::rx::out::Out;
use super::shared::Shared;
use super::spec::SwitchSpec;

/// No FDB key ([`crate::fdb::vkey`]) and no [`Batch::key`] is this: both leave the top
/// bits 0.
const NO_KEY: u64 = u64::MAX;

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
    super::rx::pad(m)
}

/// The old receive side's state.
pub struct Scalar {
    /// Per port: pad short frames (kernel-backed ports) rather than drop them.
    pad_short: Vec<bool>,
    /// Per port, the largest frame accepted: MTU + Ethernet/802.1Q header.
    max_frame: Vec<u32>,
    /// The run being formed: same egress port and class; its mbufs and lengths.
    run: Batch,
    run_mbufs: MbufBurst,
    run_lens: Box<[u32; BURST_CAP]>,
    run_charges: Box<[u32; BURST_CAP]>,
    flood_lossless: bool,
    nswitch: usize,
    kernel_out: Vec<Option<u16>>,
    vlan_kernel: Vec<u16>,
    l2_ports: u64,
    all_l2: bool,
}

impl Scalar {
    pub fn new(spec: &SwitchSpec) -> Scalar {
        Scalar {
            pad_short: spec.ports.iter().map(|p| p.pad_short_frames).collect(),
            max_frame: spec.ports.iter().map(|p| p.mtu + crate::wire::MAX_L2_HEADER).collect(),
            run: Batch::EMPTY,
            run_mbufs: MbufBurst::new(),
            run_lens: Box::new([0; BURST_CAP]),
            run_charges: Box::new([0; BURST_CAP]),
            flood_lossless: spec.flood_lossless,
            nswitch: spec.switch_ports(),
            kernel_out: spec.ports.iter().map(|p| p.representor_of.map(|i| i as u16)).collect(),
            vlan_kernel: spec.ports.iter().map(|p| p.vlan_interface_of.unwrap_or(0)).collect(),
            l2_ports: (0..spec.switch_ports().min(64))
                .filter(|&p| !spec.config.routing.is_routed(p))
                .fold(0, |a, p| a | 1u64 << p),
            all_l2: spec.config.routing.interfaces.is_empty(),
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
    /// runs; then routing's second pass and the counters. Long (~200 lines) on purpose:
    /// it is the loop the RX stages (`rx/`) replaced, kept as it was so that it stays their
    /// oracle (tests/rx_oracle.rs); it goes, not gets split, once the stages have held.
    #[inline(never)]
    pub fn process_burst(
        &mut self,
        o: &mut Out,
        burst: &mut MbufBurst,
        mac: &mut MacControlRx,
        router: Option<&mut Router>,
        shared: &Shared,
        in_port: usize,
        now: u64,
        c: &LcoreCounters,
    ) {
        if let Some(out) = self.kernel_out[in_port] {
            return self.kernel_burst(o, burst, shared, in_port, out, now, c);
        }
        if self.vlan_kernel[in_port] != 0 {
            return self.vlan_kernel_burst(o, burst, shared, in_port, self.vlan_kernel[in_port], now, c);
        }
        // Moved out for the burst (a pointer), so that pass 1 can hold packets in it while
        // runs are formed in `self`.
        let mut router = router;
        let routes_here = router.as_ref().is_some_and(|r| r.routes_on(in_port));
        let pc = &c.ports[in_port];
        let plan = &shared.ports[in_port].plan;
        let n = burst.len();
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
            if let Some(next) = burst.get(i + 2) {
                next.prefetch_data();
            }
            let Some(mut m) = burst.take(i) else { continue };
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
                        mac.on_frame(shared, in_port, &f, now, c);
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
                    match self.route_ingress(o, shared, r, in_port, rif, &parsed, m, now, c) {
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
                    self.push_run(o, shared, ip, p, class, lossless, m, len, now, c);
                }
                None => {
                    self.flush_run(o, shared, ip, now, c);
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
                                o.admit_one(shared, ip, p, class, lossless, copy, now, c)
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
                    o.admit_one(shared, ip, last, class, lossless, m, now, c);
                }
            }
        }
        if let Some(r) = router {
            if r.held() > 0 {
                self.route_held(o, shared, r, in_port, now, c);
            }
        }
        self.flush_run(o, shared, in_port as u16, now, c);
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        burst.clear();
    }

    /// Add a packet to the run being formed (same egress port and class), flushing the run
    /// before if it differs.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push_run(
        &mut self,
        o: &mut Out,
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
            self.flush_run(o, shared, in_port, now, c);
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
        o: &mut Out,
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
                self.punt_copy(o, shared, r, in_port, rif, why, parsed, &m, now, c);
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
                self.punt(o, shared, r, in_port, rif, (why, group), class, lossless, m, len, now, c)
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
    fn route_held(
        &mut self,
        o: &mut Out,
        shared: &Shared,
        r: &mut Router,
        in_port: usize,
        now: u64,
        c: &LcoreCounters,
    ) {
        r.lookup_held();
        let down = shared.link_down_mask.load(Ordering::Relaxed);
        let pc = &c.ports[in_port];
        let (mut routed, mut bytes) = (0u64, 0u64);
        for k in 0..r.held() {
            let Some((mut m, h, d)) = r.decide_held(k, down) else { continue };
            match d {
                Decision::Route(to) => {
                    if !wire::route_rewrite(m.data_mut(), usize::from(h.l3_offset), to.dst_mac, r.mac(to.port)) {
                        count_forwarding_drop(c, in_port, h.class.tc, DropReason::RouteMalformed);
                        continue;
                    }
                    routed += 1;
                    bytes += u64::from(h.len);
                    match r.vlan_of(to.port) {
                        None => {
                            self.push_run(o, shared, in_port as u16, to.port, h.class, h.lossless, m, h.len, now, c)
                        }
                        // Into a VLAN: the neighbour's port from the VLAN's FDB.
                        Some(vid) => self.bridge_in_vlan(o, shared, in_port, vid, h.class, h.lossless, m, now, c),
                    }
                }
                Decision::Punt(why) => {
                    let (len, group) = (m.len() as u32, TrapGroup::of(why, r.held_l3(k)));
                    let (rif, class) = (usize::from(h.rif), h.class);
                    self.punt(o, shared, r, in_port, rif, (why, group), class, h.lossless, m, len, now, c)
                }
                Decision::TooBig(mtu) => self.too_big(o, shared, r, in_port, h, m, mtu, now, c),
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
        o: &mut Out,
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
            return self.punt(o, shared, r, in_port, rif, why, class, h.lossless, m, len, now, c);
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
            Some(vid) => self.bridge_in_vlan(o, shared, in_port, vid, class, false, icmp, now, c),
            None => {
                let len = icmp.len() as u32;
                self.push_run(o, shared, in_port as u16, in_port as u16, class, false, icmp, len, now, c)
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
        o: &mut Out,
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
                self.push_run(o, shared, in_port as u16, rep, class, false, m, len, now, c);
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
    fn kernel_burst(
        &mut self,
        o: &mut Out,
        burst: &mut MbufBurst,
        shared: &Shared,
        in_port: usize,
        out: u16,
        now: u64,
        c: &LcoreCounters,
    ) {
        let pc = &c.ports[in_port];
        let plan = &shared.ports[in_port].plan;
        let n = burst.len();
        let mut rx_bytes = 0u64;
        for i in 0..n {
            let Some(mut m) = burst.take(i) else { continue };
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
            self.push_run(o, shared, in_port as u16, out, class, false, m, len, now, c);
        }
        self.flush_run(o, shared, in_port as u16, now, c);
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        burst.clear();
    }

    /// A copy of a broadcast the kernel wants (ARP, ND) up VLAN interface `rif`'s
    /// representor, if the class's rate allows; counted as a flood copy (the original is
    /// bridged in the VLAN).
    #[allow(clippy::too_many_arguments)]
    #[cold]
    fn punt_copy(
        &mut self,
        o: &mut Out,
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
                o.admit_one(shared, in_port as u16, usize::from(rep), class, false, copy, now, c);
            }
            None => c.count_drop(DropSite::classified(in_port, class.tc), DropReason::FloodNoMbuf, 1),
        }
    }

    /// A burst from a VLAN interface's representor (ARP/ND, ICMP, replies of the kernel on
    /// `Vlan1000`): bridged in VLAN `vid` like a frame a member received (FDB lookup,
    /// flood to the members), lossy. Nothing is learned.
    fn vlan_kernel_burst(
        &mut self,
        o: &mut Out,
        burst: &mut MbufBurst,
        shared: &Shared,
        in_port: usize,
        vid: u16,
        now: u64,
        c: &LcoreCounters,
    ) {
        let pc = &c.ports[in_port];
        let n = burst.len();
        let mut rx_bytes = 0u64;
        for i in 0..n {
            let Some(mut m) = burst.take(i) else { continue };
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
            self.bridge_in_vlan(o, shared, in_port, vid, class, false, m, now, c);
        }
        self.flush_run(o, shared, in_port as u16, now, c);
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        burst.clear();
    }

    /// Send an untagged frame (routed into VLAN `vid`, or from its VLAN interface) to
    /// its destination's member port from the VLAN's FDB, tagged as that member wants;
    /// an unknown or multicast destination is flooded to every member (as SONiC's ASIC
    /// does: the kernel's ARP entry outlives the FDB entry).
    #[allow(clippy::too_many_arguments)]
    fn bridge_in_vlan(
        &mut self,
        o: &mut Out,
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
            return self.push_run(o, shared, ip, p, class, lossless, m, len, now, c);
        }
        if lossless && !self.flood_lossless && !dst.is_multicast() {
            return count_forwarding_drop(c, in_port, class.tc, DropReason::LosslessUnknownUnicast);
        }
        self.flush_run(o, shared, ip, now, c);
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
                    o.admit_one(shared, ip, p, class, lossless, copy, now, c)
                }
                None => c.count_drop(DropSite::classified(in_port, class.tc), DropReason::FloodNoMbuf, 1),
            }
        }
        if !vlan_edit(&mut m, vlans.egress(vid, last, false, class.tc), false) {
            c.count_drop(DropSite::classified(in_port, class.tc), DropReason::Malformed, 1);
            return;
        }
        o.admit_one(shared, ip, last, class, lossless, m, now, c);
    }

    /// Admit and enqueue the run formed so far (all of it at once when the MMU allows).
    fn flush_run(&mut self, o: &mut Out, shared: &Shared, in_port: u16, now: u64, c: &LcoreCounters) {
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
                    match o.local_tx[out_u] {
                        // Our own port with room for all: straight onto its TC queue.
                        Some(ix) if o.txs[ix].room(queue) >= cnt => o.txs[ix].enqueue_run(key, packets),
                        _ => {
                            for s in packets {
                                let q = key.queued(s.p, s.charged);
                                o.enqueue(shared, q, now, c);
                            }
                        }
                    }
                    i += cnt;
                }
                None => {
                    if let Some(m) = self.run_mbufs.take(i) {
                        o.admit_one(shared, in_port, out_u, class, lossless, m, now, c);
                    }
                    i += 1;
                }
            }
        }
        self.run_mbufs.clear();
    }
}
