//! Stage 3, the router (docs/routing.md, "A packet's way through the router"): on a
//! router interface, pass 1 decides per packet what `route::ingress` says (for the kernel:
//! punted; to the router MAC: held for the lookup; anything the contract drops: dropped;
//! what is not the router's: back to the bridge); the held destinations are then looked up
//! in bulk (one `rte_fib_lookup_bulk` per family), and pass 2 rewrites each routed packet
//! in place and points it at its egress port (or into its VLAN). Packets stay in their
//! slots throughout: the admit stage takes them in burst order.

use std::sync::atomic::Ordering;

use crate::counters::{DropReason, DropSite};
use crate::dpdk::{MbufBurst, BURST_CAP};
use crate::route::{Decision, Ingress, PuntReason, TrapGroup};
use crate::vlan::Egress;
use crate::wire::{self, MacAddr};

use super::super::router::{Held, Router};
use super::drops::{count_forwarding_drop, route_drop, watchdog_rx_drops};
use super::edit::{copy_mbuf, vlan_edit};
use super::out::Out;
use super::vector::{Step, Vector};
use super::Ctx;

/// Both passes over the packets marked `Step::L3`.
#[inline]
pub fn run(x: Ctx, burst: &mut MbufBurst, v: &mut Vector, r: &mut Router, out: &mut Out) {
    // Priorities the watchdog has stormed on this port: read once a burst.
    let wd_rx = x.shared.ports[x.in_port].pfcwd.as_ref().map_or(0, |w| w.ignore_pfc_mask());
    for i in 0..burst.len().min(BURST_CAP) {
        if v.step[i] == Step::L3 {
            pass1(x, burst, v, r, out, i, wd_rx);
        }
    }
    if r.held() > 0 {
        pass2(x, burst, v, r);
    }
}

/// Pass 1 for the packet in slot `i`.
#[inline]
fn pass1(x: Ctx, burst: &mut MbufBurst, v: &mut Vector, r: &mut Router, out: &mut Out, i: usize, wd_rx: u8) {
    let rif = usize::from(v.rif[i]);
    let Some(m) = burst.get_mut(i) else { return };
    let p = &v.parsed[i];
    let ing = r.ingress(rif, p, m.data());
    if ing == Ingress::Done(Decision::Bridge) {
        v.step[i] = Step::L2;
        return;
    }
    // On a VLAN interface: a broadcast or multicast the kernel wants (ARP, ND) is
    // bridged in the VLAN too, and a copy goes up the VLAN's representor.
    if rif != x.in_port && p.dst.is_multicast() {
        if let Ingress::Done(Decision::Punt(why)) = ing {
            punt_copy(x, r, rif, why, burst, v, out, i);
        }
        v.step[i] = Step::L2;
        return;
    }
    v.step[i] = Step::Done;
    let (class, lossless) = (v.class[i], v.lossless[i]);
    // Whatever reaches the kernel or is routed leaves untagged: the tag was the VLAN's,
    // or (on a routed port) a priority tag, VID 0 (docs/routing.md).
    let mut l3_offset = p.l3_offset as u16;
    if p.vlan.is_some() && matches!(ing, Ingress::Lookup | Ingress::Done(Decision::Punt(_))) {
        if !vlan_edit(m, Egress::Untag, true) {
            return count_forwarding_drop(x.c, x.in_port, class.tc, DropReason::Malformed);
        }
        l3_offset -= wire::VLAN_TAG_LEN as u16;
        v.len[i] = m.len() as u32;
    }
    if wd_rx & (1 << class.priority) != 0 && watchdog_rx_drops(x.shared, x.in_port, class, x.c) {
        return;
    }
    match ing {
        Ingress::Lookup => r.hold_at(i, Held { l3_offset, class, lossless, len: m.len() as u32, rif: rif as u16 }),
        Ingress::Done(Decision::Punt(why)) => {
            let group = TrapGroup::of(why, r.ingress_l3());
            punt(x, r, rif, (why, group), v, i)
        }
        Ingress::Done(Decision::Drop(why)) => count_forwarding_drop(x.c, x.in_port, class.tc, route_drop(why)),
        // `ingress` decides no route itself; bridging was handled above.
        Ingress::Done(Decision::Route(_) | Decision::Bridge | Decision::TooBig(_)) => {
            count_forwarding_drop(x.c, x.in_port, class.tc, DropReason::Malformed)
        }
    }
}

/// Pass 2: look the held packets up in bulk, then forward (rewrite, and point at the
/// egress port in the class pass 1 found), punt or drop each.
fn pass2(x: Ctx, burst: &mut MbufBurst, v: &mut Vector, r: &mut Router) {
    r.lookup_held();
    let down = x.shared.link_down_mask.load(Ordering::Relaxed);
    let (mut routed, mut bytes) = (0u64, 0u64);
    for k in 0..r.held() {
        // Its class and losslessness are pass 1's, in the vector already.
        let (i, h, d) = r.decide_at(k, down);
        match d {
            Decision::Route(to) => {
                let Some(m) = burst.get_mut(i) else { continue };
                // Pass 1 parsed the header and punted TTL <= 1, so this holds; a frame it
                // cannot rewrite is dropped, never sent on unchanged.
                if !wire::route_rewrite(m.data_mut(), usize::from(h.l3_offset), to.dst_mac, r.mac(to.port)) {
                    count_forwarding_drop(x.c, x.in_port, h.class.tc, DropReason::RouteMalformed);
                    continue;
                }
                routed += 1;
                bytes += u64::from(h.len);
                match r.vlan_of(to.port) {
                    None => (v.step[i], v.out[i]) = (Step::Out, to.port),
                    // Into a VLAN: the neighbour's port from the VLAN's FDB.
                    Some(vid) => (v.step[i], v.vid[i]) = (Step::Vlan, vid),
                }
            }
            Decision::Punt(why) => {
                let group = TrapGroup::of(why, r.held_l3(k));
                punt(x, r, usize::from(h.rif), (why, group), v, i)
            }
            Decision::TooBig(mtu) => too_big(x, r, burst, v, i, h, mtu),
            Decision::Drop(why) => count_forwarding_drop(x.c, x.in_port, h.class.tc, route_drop(why)),
            Decision::Bridge => count_forwarding_drop(x.c, x.in_port, h.class.tc, DropReason::Malformed),
        }
    }
    r.clear_held();
    let pc = &x.c.ports[x.in_port];
    pc.routed_packets.add(routed);
    pc.routed_bytes.add(bytes);
}

/// Up the representor of router interface `rif` (the port, or the VLAN interface it
/// arrived on) if the class's rate allows: an egress like any other, lossy (the kernel
/// cannot be paused), in the packet's queue.
#[inline]
fn punt(x: Ctx, r: &mut Router, rif: usize, (why, group): (PuntReason, TrapGroup), v: &mut Vector, i: usize) {
    let pc = &x.c.ports[x.in_port];
    match r.rep_of.get(rif).copied().flatten() {
        Some(rep) if r.limiter.admit(x.in_port, group, x.now) => {
            pc.punted[why.index()].inc();
            pc.copp_passed[group.index()].inc();
            (v.step[i], v.out[i], v.lossless[i]) = (Step::Out, rep, false);
        }
        _ => {
            v.step[i] = Step::Done;
            pc.punt_dropped[why.index()].inc();
            pc.copp_dropped[group.index()].inc();
            // A lossless-class packet lost here is a lossless discard (counters.rs).
            let class = v.class[i];
            pc.tc_rx[class.tc as usize & 7].inc();
            let site = DropSite {
                lossless_pg: v.lossless[i].then_some(class.pg),
                ..DropSite::classified(x.in_port, class.tc)
            };
            x.c.count_drop(site, DropReason::PuntRateLimited, 1);
        }
    }
}

/// A held packet larger than its egress MTU `mtu`: an IPv4 packet without DF goes to the
/// kernel to be fragmented (`mtu_exceeded`); otherwise the router answers ICMP
/// fragmentation needed / packet too big itself, from the ingress interface's address,
/// back to the previous hop (the kernel never receives a jumbo the representor refuses),
/// policed as CoPP group `mtu`; the packet is dropped as `too_big`, and its slot carries
/// the ICMP error on.
#[cold]
fn too_big(x: Ctx, r: &mut Router, burst: &mut MbufBurst, v: &mut Vector, i: usize, h: Held, mtu: u16) {
    let (rif, class) = (usize::from(h.rif), h.class);
    let port = r.ports[rif];
    let Some(m) = burst.take(i) else { return };
    let l3 = m.data().get(usize::from(h.l3_offset)..).unwrap_or(&[]);
    let v4 = l3.first().is_some_and(|b| b >> 4 == 4);
    let df = v4 && l3.get(6).is_some_and(|f| f & 0x40 != 0);
    let can_answer = if v4 { df && port.src4.is_some() } else { port.src6.is_some() };
    if !can_answer {
        let _ = burst.put(i, m);
        return punt(x, r, rif, (PuntReason::MtuExceeded, TrapGroup::Mtu), v, i);
    }
    v.step[i] = Step::Done;
    let pc = &x.c.ports[x.in_port];
    pc.tc_rx[class.tc as usize & 7].inc();
    let site = DropSite { lossless_pg: None, ..DropSite::classified(x.in_port, class.tc) };
    if !r.limiter.admit(x.in_port, TrapGroup::Mtu, x.now) {
        pc.copp_dropped[TrapGroup::Mtu.index()].inc();
        return x.c.count_drop(site, DropReason::TooBig, 1);
    }
    pc.copp_passed[TrapGroup::Mtu.index()].inc();
    x.c.count_drop(site, DropReason::TooBig, 1);
    let Some(mut icmp) = x.shared.pool.alloc() else { return };
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
    drop(m);
    if burst.put(i, icmp).is_err() {
        return;
    }
    (v.lossless[i], v.len[i]) = (false, n as u32);
    match r.vlan_of(rif as u16) {
        // On a VLAN interface: back to the previous hop's member port.
        Some(vid) => (v.step[i], v.vid[i]) = (Step::Vlan, vid),
        None => (v.step[i], v.out[i]) = (Step::Out, x.in_port as u16),
    }
}

/// A copy of a broadcast the kernel wants (ARP, ND) up VLAN interface `rif`'s
/// representor, if the class's rate allows; counted as a flood copy (the original is
/// bridged in the VLAN).
#[cold]
#[allow(clippy::too_many_arguments)]
fn punt_copy(
    x: Ctx,
    r: &mut Router,
    rif: usize,
    why: PuntReason,
    burst: &MbufBurst,
    v: &Vector,
    out: &mut Out,
    i: usize,
) {
    let pc = &x.c.ports[x.in_port];
    let class = v.class[i];
    let Some(rep) = r.rep_of.get(rif).copied().flatten() else { return };
    let group = TrapGroup::of(why, r.ingress_l3());
    if !r.limiter.admit(x.in_port, group, x.now) {
        pc.punt_dropped[why.index()].inc();
        pc.copp_dropped[group.index()].inc();
        return;
    }
    pc.copp_passed[group.index()].inc();
    pc.flood_copies.inc();
    pc.tc_copies[class.tc as usize & 7].inc();
    let Some(m) = burst.get(i) else { return };
    match copy_mbuf(x.shared, m) {
        Some(mut copy) => {
            if v.parsed[i].vlan.is_some() && !vlan_edit(&mut copy, Egress::Untag, true) {
                return x.c.count_drop(DropSite::classified(x.in_port, class.tc), DropReason::Malformed, 1);
            }
            pc.punted[why.index()].inc();
            out.admit_one(x.shared, x.in_port as u16, usize::from(rep), class, false, copy, x.now, x.c);
        }
        None => x.c.count_drop(DropSite::classified(x.in_port, class.tc), DropReason::FloodNoMbuf, 1),
    }
}
