//! Stage 2, ingress: the packet's VLAN (membership checked), its class (once per packet:
//! TC, PG, queue, priority, and whether the priority is lossless on this port), and which
//! way it goes: to the router when it arrived on a router interface (the port, or its
//! VLAN's interface), else to the bridge. A frame from a kernel representor goes straight
//! out of the port it represents, or into its VLAN interface's VLAN.

use crate::counters::{DropReason, DropSite};
use crate::dpdk::{MbufBurst, BURST_CAP};
use crate::wire;

use super::super::router::Router;
use super::vector::{Step, Vector};
use super::Ctx;

/// What a port's frames are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A switch port: bridged or routed.
    Port,
    /// A kernel representor: what the kernel sends leaves by this port.
    Kernel(u16),
    /// A VLAN interface's representor: what the kernel sends is bridged in this VLAN.
    VlanKernel(u16),
}

/// Classify and steer every packet arrival let through (`Step::L2` on entry). True if
/// any goes to the router.
#[inline]
pub fn run(x: Ctx, source: Source, burst: &MbufBurst, v: &mut Vector, router: Option<&Router>) -> bool {
    let mut to_router = false;
    let shared = x.shared;
    let plan = &shared.ports[x.in_port].plan;
    let pfc_mask = shared.ports[x.in_port].pfc.pfc_mask();
    let vlans = &shared.vlans;
    let vlan_aware = vlans.enabled();
    let routes_here = router.is_some_and(|r| r.routes_on(x.in_port));
    if source != Source::Port {
        representor(x, source, burst, v);
        return false;
    }
    for i in 0..burst.len().min(BURST_CAP) {
        if v.step[i] != Step::L2 {
            continue;
        }
        let p = &v.parsed[i];
        let class = plan.qos.classify(p);
        v.class[i] = class;
        v.lossless[i] = pfc_mask & (1 << class.priority) != 0;
        // The frame's VLAN (0: the VLAN-unaware domain, all of it without [vlan]).
        let vid = if vlan_aware {
            let s_tag = p.vlan.is_some()
                && burst.get(i).is_some_and(|m| m.data()[12..14] == wire::ETHERTYPE_QINQ.to_be_bytes());
            match vlans.ingress(x.in_port, p.vlan, s_tag) {
                Some(vid) => vid,
                None => {
                    v.step[i] = Step::Done;
                    x.c.count_drop(DropSite::arrival(x.in_port), DropReason::VlanNotMember, 1);
                    continue;
                }
            }
        } else {
            0
        };
        v.vid[i] = vid;
        // The router interface the frame arrived on: the port, or its VLAN's interface.
        let rif = if routes_here {
            Some(x.in_port)
        } else if vid != 0 {
            router.and_then(|r| r.vlan_rif(vid))
        } else {
            None
        };
        if let Some(rif) = rif {
            (v.step[i], v.rif[i]) = (Step::L3, rif as u16);
            to_router = true;
        }
    }
    to_router
}

/// A burst from a kernel representor: out of the port it represents, or bridged in its
/// VLAN interface's VLAN; lossy (the kernel is never paused), in its DSCP's class.
#[cold]
fn representor(x: Ctx, source: Source, burst: &MbufBurst, v: &mut Vector) {
    let plan = &x.shared.ports[x.in_port].plan;
    for i in 0..burst.len().min(BURST_CAP) {
        if v.step[i] != Step::L2 {
            continue;
        }
        let p = &v.parsed[i];
        (v.class[i], v.lossless[i]) = (plan.qos.classify(p), false);
        match source {
            Source::Port => {}
            Source::Kernel(out) => (v.step[i], v.out[i]) = (Step::Out, out),
            // The kernel's VLAN interface sends untagged frames; anything else is not ours.
            Source::VlanKernel(_) if p.vlan.is_some() => {
                v.step[i] = Step::Done;
                x.c.count_drop(DropSite::arrival(x.in_port), DropReason::Malformed, 1);
            }
            Source::VlanKernel(vid) => (v.step[i], v.vid[i]) = (Step::Vlan, vid),
        }
    }
}
