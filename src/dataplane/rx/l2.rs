//! Stage 4, the bridge: learn the source (once per run of one source in the burst), look
//! the destination up in the FDB (once per run of one destination), and decide: unicast
//! to a learned port (its egress VLAN tag written here), a flood (to one other port it is
//! a unicast), or a drop (back where it came from, or a lossless unknown unicast). The
//! flood's copies are made in burst order by the admit stage ([`Bridge::flood`]).

use crate::classify::Class;
use crate::counters::{DropReason, DropSite};
use crate::dpdk::{Mbuf, MbufBurst, BURST_CAP};

use super::super::spec::SwitchSpec;
use super::drops::{count_forwarding_drop, watchdog_rx_drops};
use super::edit::{copy_mbuf, vlan_edit};
use super::out::Out;
use super::vector::{Step, Vector};
use super::Ctx;

/// No key is this: (VID, MAC) keys leave the top bits 0.
const NO_KEY: u64 = u64::MAX;

/// The bridge's configuration.
pub struct Bridge {
    /// Flood lossless-class frames to unknown unicast destinations.
    flood_lossless: bool,
    /// The configured ports (bridged and flooded over); the representors come after them.
    nswitch: usize,
    /// The bridge ports (bit p: port p): every port but the routed ones, which have no L2
    /// domain (docs/routing.md, "A router's contract"); floods never reach a routed port.
    l2_ports: u64,
    /// No port is routed and no VLAN configured: a flood reaches every port (also those
    /// past 64).
    all_l2: bool,
}

impl Bridge {
    pub fn new(spec: &SwitchSpec) -> Bridge {
        Bridge {
            flood_lossless: spec.flood_lossless,
            nswitch: spec.switch_ports(),
            l2_ports: (0..spec.switch_ports().min(64))
                .filter(|&p| !spec.config.routing.is_routed(p))
                .fold(0, |a, p| a | 1u64 << p),
            all_l2: spec.config.routing.interfaces.is_empty(),
        }
    }

    /// Decide every packet marked `Step::L2`.
    #[inline]
    pub fn run(&self, x: Ctx, burst: &mut MbufBurst, v: &mut Vector) {
        let shared = x.shared;
        let (vlans, fdb) = (&shared.vlans, &shared.fdb);
        let vlan_aware = vlans.enabled();
        let wide = !vlan_aware && self.all_l2;
        let wd_rx = shared.ports[x.in_port].pfcwd.as_ref().map_or(0, |w| w.ignore_pfc_mask());
        let me = bit(x.in_port);
        // Within one burst `now` is fixed: a source learned once needs no refresh, and a
        // destination's lookup holds until the next learn changes the table.
        let mut learned = NO_KEY;
        let mut looked_up: (u64, Option<u16>) = (NO_KEY, None);
        for i in 0..burst.len().min(BURST_CAP) {
            if v.step[i] != Step::L2 {
                continue;
            }
            let (p, vid, class) = (&v.parsed[i], v.vid[i], v.class[i]);
            let src_key = v.src[i] | u64::from(vid) << 48;
            if learned != src_key {
                fdb.learn_word(vid, v.src[i], x.in_port as u16, x.now);
                learned = src_key;
                looked_up.0 = NO_KEY;
            }
            if wd_rx & (1 << class.priority) != 0 && watchdog_rx_drops(shared, x.in_port, class, x.c) {
                v.step[i] = Step::Done;
                continue;
            }
            let multicast = p.dst.is_multicast();
            let found = if multicast {
                None
            } else {
                let dst_key = v.dst[i] | u64::from(vid) << 48;
                if looked_up.0 != dst_key {
                    looked_up = (dst_key, fdb.lookup_word(vid, v.dst[i], x.now));
                }
                looked_up.1
            };
            // The flood domain: every bridge port, or the frame's VLAN's members; a flood
            // with one other port in it is a unicast.
            let domain = || (if vlan_aware { vlans.flood_mask(vid) & self.l2_ports } else { self.l2_ports }) & !me;
            let to = match found {
                Some(o) if usize::from(o) == x.in_port => {
                    v.step[i] = Step::Done;
                    count_forwarding_drop(x.c, x.in_port, class.tc, DropReason::SamePort);
                    continue;
                }
                Some(o) => o,
                None if v.lossless[i] && !self.flood_lossless && !multicast => {
                    v.step[i] = Step::Done;
                    count_forwarding_drop(x.c, x.in_port, class.tc, DropReason::LosslessUnknownUnicast);
                    continue;
                }
                None if wide && self.nswitch == 2 => 1 - x.in_port as u16,
                None if !wide && domain().count_ones() == 1 => domain().trailing_zeros() as u16,
                None => {
                    v.step[i] = Step::Flood;
                    continue;
                }
            };
            let tagged_in = p.vlan.is_some();
            let Some(m) = burst.get_mut(i) else { continue };
            if vlan_aware {
                if !vlan_edit(m, vlans.egress(vid, usize::from(to), tagged_in, class.tc), tagged_in) {
                    v.step[i] = Step::Done;
                    count_forwarding_drop(x.c, x.in_port, class.tc, DropReason::Malformed);
                    continue;
                }
                v.len[i] = m.len() as u32;
            }
            (v.step[i], v.out[i]) = (Step::Out, to);
        }
    }

    /// Lossless-class frames to unknown unicast destinations are flooded, not dropped.
    #[inline(always)]
    pub fn flood_lossless(&self) -> bool {
        self.flood_lossless
    }

    /// The L2 flood domain of a frame in `vid` received on `in_port` (bit p: port p),
    /// and whether ports past 64 are in it.
    #[inline]
    pub fn domain(&self, x: Ctx, vid: u16) -> (u64, bool) {
        let vlans = &x.shared.vlans;
        let mask = if vlans.enabled() { vlans.flood_mask(vid) & self.l2_ports } else { self.l2_ports };
        (mask & !bit(x.in_port), !vlans.enabled() && self.all_l2)
    }

    /// The members of `vid` (a frame routed into the VLAN or from its interface).
    #[inline]
    pub fn vlan_domain(&self, x: Ctx, vid: u16) -> u64 {
        x.shared.vlans.flood_mask(vid)
    }

    /// Flood `m` (in `vid`, received tagged or not) to the ports of `domain` (`wide`:
    /// and every port past 64): the original to the last one, a copy to each other, each
    /// admitted by the MMU on its own.
    #[allow(clippy::too_many_arguments)]
    pub fn flood(
        &self,
        x: Ctx,
        out: &mut Out,
        mut m: Mbuf,
        (domain, wide): (u64, bool),
        (vid, tagged_in): (u16, bool),
        class: Class,
        lossless: bool,
    ) {
        let (pc, site) = (&x.c.ports[x.in_port], DropSite::classified(x.in_port, class.tc));
        let vlans = &x.shared.vlans;
        let vlan_aware = vlans.enabled();
        let ip = x.in_port as u16;
        pc.tc_rx[class.tc as usize & 7].inc();
        let in_domain = |p: usize| if p < 64 { domain & (1 << p) != 0 } else { wide && p != x.in_port };
        let Some(last) = (0..self.nswitch).rev().find(|&p| in_domain(p)) else {
            return x.c.count_drop(site, DropReason::SamePort, 1);
        };
        for p in (0..last).filter(|&p| in_domain(p)) {
            pc.flood_copies.inc();
            pc.tc_copies[class.tc as usize & 7].inc();
            match copy_mbuf(x.shared, &m) {
                Some(mut copy) => {
                    if vlan_aware && !vlan_edit(&mut copy, vlans.egress(vid, p, tagged_in, class.tc), tagged_in) {
                        x.c.count_drop(site, DropReason::Malformed, 1);
                        continue;
                    }
                    out.admit_one(x.shared, ip, p, class, lossless, copy, x.now, x.c)
                }
                None => x.c.count_drop(site, DropReason::FloodNoMbuf, 1),
            }
        }
        if vlan_aware && !vlan_edit(&mut m, vlans.egress(vid, last, tagged_in, class.tc), tagged_in) {
            return x.c.count_drop(site, DropReason::Malformed, 1);
        }
        out.admit_one(x.shared, ip, last, class, lossless, m, x.now, x.c);
    }
}

/// Bit p of a port mask (0 past 63: with VLANs the config allows at most 64 ports).
#[inline(always)]
fn bit(p: usize) -> u64 {
    1u64.checked_shl(p as u32).unwrap_or(0)
}
