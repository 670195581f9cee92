//! 802.1Q VLANs as a ToR uses them (SONiC's `VLAN` / `VLAN_MEMBER`): which VLAN a
//! received frame belongs to, which ports a VLAN floods to, and what its tag becomes on
//! the way out. Pure logic, no DPDK types: the worker asks, the mbuf is edited there.
//!
//! # Domains
//!
//! Every frame is bridged in one domain, named by a VID that is also the high bits of
//! its FDB key (see [`crate::fdb`]):
//!
//! * VID 1..=4094: a configured VLAN; its members are the ports of its `[vlan_member]`
//!   rows, each tagged or untagged;
//! * VID 0: the ports in no VLAN. They bridge as before VLANs existed: tags are neither
//!   read nor changed, and their floods stay among themselves. Without any `[vlan]` every
//!   port is here: the switch is VLAN-unaware.
//!
//! # Ingress (on a port in at least one VLAN)
//!
//! * untagged, or priority-tagged (VID 0): the port's untagged VLAN (its PCP still
//!   classifies under `trust pcp`); without one, dropped;
//! * tagged with VID v (TPID 0x8100): v if the port is a member, else dropped;
//! * an 802.1ad S-tag (0x88a8) outermost: dropped (a C-VLAN bridge has no S-VLANs).
//!
//! Every such drop is counted as `vlan_not_member` on the ingress port.
//!
//! # Egress
//!
//! A tagged member sends the frame with the VLAN's tag, PCP from the frame's TC
//! (`tc_to_dot1p`, SONiC's `TC_TO_DOT1P_MAP`, identity by default) so a host that pauses
//! by PCP sees its priority; an untagged member sends it untagged. PFC frames never come
//! here: they are built by the port itself, untagged as 802.1Qbb requires.

use crate::config::VlanConfig;
use crate::wire::{VlanTag, ETHERTYPE_VLAN, MIN_FRAME_LEN, VLAN_TAG_LEN};

/// VIDs: 0..=4095.
const NVID: usize = 4096;

/// The switch's VLAN tables, built once from the configuration.
#[derive(Debug, Clone)]
pub struct Vlans {
    /// Per VID: member ports (bit p = port p). VID 0: the ports in no VLAN.
    members: Box<[u64]>,
    /// Per VID: the tagged members.
    tagged: Box<[u64]>,
    /// Per port: its untagged VLAN (0 = none).
    untagged: Box<[u16]>,
    /// Per port: member of some VLAN (VLAN-aware).
    aware: u64,
    tc_to_dot1p: [u8; 8],
    enabled: bool,
}

/// What a frame's tag becomes on its way out of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Egress {
    /// Leave the frame as it is.
    Keep,
    /// Remove its (outer) tag.
    Untag,
    /// Give it this tag: rewrite the TCI of the tag it has, or insert one.
    Tag(VlanTag),
}

impl Vlans {
    /// The tables for `nports` ports (at most 64 when any VLAN is configured; the config
    /// resolver checks it) and a TC→PCP map.
    pub fn new(cfg: &VlanConfig, nports: usize, tc_to_dot1p: [u8; 8]) -> Vlans {
        let mut v = Vlans {
            members: vec![0; NVID].into_boxed_slice(),
            tagged: vec![0; NVID].into_boxed_slice(),
            untagged: vec![0; nports].into_boxed_slice(),
            aware: 0,
            tc_to_dot1p: tc_to_dot1p.map(|p| p & 7),
            enabled: cfg.enabled(),
        };
        for d in &cfg.vlans {
            for m in &d.members {
                let bit = 1u64 << (m.port & 63);
                v.members[usize::from(d.vid)] |= bit;
                v.aware |= bit;
                if m.tagged {
                    v.tagged[usize::from(d.vid)] |= bit;
                } else {
                    v.untagged[m.port] = d.vid;
                }
            }
        }
        v.members[0] = (0..nports.min(64)).map(|p| 1u64 << p).fold(0, |a, b| a | b) & !v.aware;
        v
    }

    /// True when any VLAN is configured (else every port is VLAN-unaware and the worker
    /// takes its VLAN-less path).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The VID of a frame received on `port` with outer tag `tag` (`s_tag`: its TPID is
    /// 0x88a8), or None when the port must drop it (`vlan_not_member`). Per packet.
    #[inline]
    pub fn ingress(&self, port: usize, tag: Option<VlanTag>, s_tag: bool) -> Option<u16> {
        let bit = 1u64 << (port & 63);
        if self.aware & bit == 0 || port >= 64 {
            return Some(0);
        }
        if s_tag {
            return None;
        }
        match tag {
            None | Some(VlanTag { vid: 0, .. }) => {
                let u = self.untagged.get(port).copied().unwrap_or(0);
                (u != 0).then_some(u)
            }
            Some(t) => (self.members[usize::from(t.vid & 0xfff)] & bit != 0).then_some(t.vid),
        }
    }

    /// The ports a frame of `vid` floods to (the ingress port included: the caller skips
    /// it). Per packet.
    #[inline]
    pub fn flood_mask(&self, vid: u16) -> u64 {
        self.members[usize::from(vid & 0xfff)]
    }

    /// Is `port` a member of `vid`'s domain?
    #[inline]
    pub fn is_member(&self, vid: u16, port: usize) -> bool {
        port < 64 && self.members[usize::from(vid & 0xfff)] & (1 << port) != 0
    }

    /// What a frame of `vid` and traffic class `tc`, received with a tag (`tagged_in`) or
    /// without, becomes on its way out of `out`. Per packet.
    #[inline]
    pub fn egress(&self, vid: u16, out: usize, tagged_in: bool, tc: u8) -> Egress {
        if vid == 0 {
            return Egress::Keep;
        }
        if out < 64 && self.tagged[usize::from(vid & 0xfff)] & (1 << out) != 0 {
            Egress::Tag(VlanTag { pcp: self.tc_to_dot1p[usize::from(tc & 7)], dei: false, vid })
        } else if tagged_in {
            Egress::Untag
        } else {
            Egress::Keep
        }
    }
}

/// Insert `tag` into a frame whose buffer was just grown by [`VLAN_TAG_LEN`] bytes at the
/// front (`frame` = 4 new bytes, then the untagged frame): the MACs move to the front and
/// the tag goes in after them. False (nothing written) if the frame is too short.
#[inline]
pub fn write_inserted_tag(frame: &mut [u8], tag: VlanTag) -> bool {
    if frame.len() < 12 + 2 * VLAN_TAG_LEN {
        return false;
    }
    frame.copy_within(VLAN_TAG_LEN..VLAN_TAG_LEN + 12, 0);
    frame[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
    frame[14..16].copy_from_slice(&tag.tci().to_be_bytes());
    true
}

/// Rewrite the TCI of a tagged frame's outer tag (TPID set to 0x8100).
#[inline]
pub fn write_tci(frame: &mut [u8], tag: VlanTag) -> bool {
    let Some(h) = frame.get_mut(12..16) else { return false };
    h[..2].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
    h[2..].copy_from_slice(&tag.tci().to_be_bytes());
    true
}

/// Untag in place: move the MACs over the tag, so that the frame starts
/// [`VLAN_TAG_LEN`] bytes later (the caller then trims those from the front). Returns
/// the zero padding the shorter frame needs to stay at the Ethernet minimum.
#[inline]
pub fn write_removed_tag(frame: &mut [u8]) -> Option<usize> {
    if frame.len() < 12 + VLAN_TAG_LEN {
        return None;
    }
    frame.copy_within(0..12, VLAN_TAG_LEN);
    Some(MIN_FRAME_LEN.saturating_sub(frame.len() - VLAN_TAG_LEN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{VlanDef, VlanMember};
    use proptest::prelude::*;

    fn tag(pcp: u8, vid: u16) -> Option<VlanTag> {
        Some(VlanTag { pcp, dei: false, vid })
    }

    /// Ports 0,1 untagged in VLAN 10; port 2 untagged in 20 and tagged in 10; port 3
    /// tagged in 20 only; port 4 in no VLAN; port 5 neither.
    fn two_vlans() -> Vlans {
        let m = |port, tagged| VlanMember { port, tagged };
        let cfg = VlanConfig {
            vlans: vec![
                VlanDef {
                    name: "Vlan10".into(),
                    vid: 10,
                    members: vec![m(0, false), m(1, false), m(2, true)],
                    interface: None,
                },
                VlanDef { name: "Vlan20".into(), vid: 20, members: vec![m(2, false), m(3, true)], interface: None },
            ],
        };
        Vlans::new(&cfg, 6, [0, 1, 2, 3, 4, 5, 6, 7])
    }

    #[test]
    fn ingress_decisions() {
        let v = two_vlans();
        assert_eq!(v.ingress(0, None, false), Some(10), "untagged → the untagged VLAN");
        assert_eq!(v.ingress(0, tag(3, 0), false), Some(10), "priority-tagged → the untagged VLAN");
        assert_eq!(v.ingress(0, tag(0, 10), false), Some(10), "tagged with its own untagged VLAN");
        assert_eq!(v.ingress(0, tag(0, 20), false), None, "not a member of 20");
        assert_eq!(v.ingress(2, tag(5, 10), false), Some(10));
        assert_eq!(v.ingress(2, None, false), Some(20));
        assert_eq!(v.ingress(3, None, false), None, "tagged-only port: no untagged VLAN");
        assert_eq!(v.ingress(3, tag(0, 0), false), None);
        assert_eq!(v.ingress(3, tag(0, 4095), false), None, "VID 4095 is reserved");
        assert_eq!(v.ingress(3, tag(0, 20), true), None, "S-tag on a VLAN-aware port");
        // VLAN-unaware ports: everything in domain 0, whatever the tag.
        assert_eq!(v.ingress(4, tag(0, 20), false), Some(0));
        assert_eq!(v.ingress(5, None, true), Some(0));
        assert_eq!(v.flood_mask(10), 0b111);
        assert_eq!(v.flood_mask(20), 0b1100);
        assert_eq!(v.flood_mask(0), 0b11_0000);
        assert!(v.enabled() && v.is_member(20, 3) && !v.is_member(20, 0));
    }

    #[test]
    fn egress_decisions() {
        let v = two_vlans();
        let t = |pcp, vid| Egress::Tag(VlanTag { pcp, dei: false, vid });
        assert_eq!(v.egress(10, 2, false, 3), t(3, 10), "tagged member: PCP = TC");
        assert_eq!(v.egress(10, 2, true, 7), t(7, 10));
        assert_eq!(v.egress(10, 1, true, 3), Egress::Untag);
        assert_eq!(v.egress(10, 1, false, 3), Egress::Keep);
        assert_eq!(v.egress(0, 4, true, 3), Egress::Keep, "domain 0 carries tags through");
        let mut cfg = VlanConfig::default();
        cfg.vlans.push(VlanDef {
            name: "Vlan5".into(),
            vid: 5,
            members: vec![VlanMember { port: 0, tagged: true }],
            interface: None,
        });
        let w = Vlans::new(&cfg, 1, [1, 1, 1, 5, 4, 1, 1, 7]);
        assert_eq!(w.egress(5, 0, false, 3), t(5, 5), "tc_to_dot1p");
        // No VLAN configured: every port in domain 0, all flood to all.
        let n = Vlans::new(&VlanConfig::default(), 3, [0; 8]);
        assert!(!n.enabled());
        assert_eq!((n.ingress(1, tag(0, 7), false), n.flood_mask(0)), (Some(0), 0b111));
    }

    #[test]
    fn tag_edits_round_trip() {
        let frame: Vec<u8> = (0..60u8).collect();
        // Insert: 4 bytes of headroom in front, then the frame.
        let mut buf = vec![0xee; 4];
        buf.extend_from_slice(&frame);
        let t = VlanTag { pcp: 3, dei: false, vid: 1000 };
        assert!(write_inserted_tag(&mut buf, t));
        assert_eq!(&buf[..12], &frame[..12]);
        assert_eq!(crate::wire::parse(&buf).unwrap().vlan, Some(t));
        assert_eq!(&buf[16..], &frame[12..]);
        // Rewrite the TCI.
        let u = VlanTag { pcp: 6, dei: false, vid: 20 };
        assert!(write_tci(&mut buf, u));
        assert_eq!(crate::wire::parse(&buf).unwrap().vlan, Some(u));
        // Remove: back to the original frame, 4 bytes further on; 60 → 60 needs no pad.
        assert_eq!(write_removed_tag(&mut buf), Some(0));
        assert_eq!(&buf[4..], &frame[..]);
        // A 60-byte tagged frame untagged is 56 bytes: 4 of padding.
        let mut short = vec![0u8; 60];
        assert_eq!(write_removed_tag(&mut short), Some(4));
        assert!(!write_inserted_tag(&mut [0u8; 19], t) && write_removed_tag(&mut [0u8; 15]).is_none());
    }

    proptest! {
        /// Against a plain model over any port, tag, VID (0..=4095 included) and TPID: a
        /// VLAN-aware port accepts exactly its memberships, a VLAN-unaware one everything;
        /// an accepted frame's VLAN has the port as a member, and egress tags exactly on
        /// tagged members.
        #[test]
        fn matches_model(port in 0usize..6, vid in prop_oneof![0u16..=4095, Just(0u16), Just(4095), Just(10), Just(20)],
                         tagged in any::<bool>(), s_tag in any::<bool>(), pcp in 0u8..8, out in 0usize..6, tc in 0u8..8) {
            let v = two_vlans();
            let t = tagged.then_some(VlanTag { pcp, dei: false, vid });
            let got = v.ingress(port, t, s_tag);
            let member = |p: usize, vid: u16| matches!((p, vid), (0..=2, 10) | (2 | 3, 20));
            let untagged = [10u16, 10, 20, 0, 0, 0][port];
            let want = if port >= 4 {
                Some(0)
            } else if s_tag {
                None
            } else if !tagged || vid == 0 {
                (untagged != 0).then_some(untagged)
            } else {
                member(port, vid).then_some(vid)
            };
            prop_assert_eq!(got, want);
            if let Some(d) = got {
                prop_assert!(v.is_member(d, port));
                let e = v.egress(d, out, tagged, tc);
                let tagged_out = matches!((out, d), (2, 10) | (3, 20));
                prop_assert_eq!(matches!(e, Egress::Tag(_)), tagged_out);
                if let Egress::Tag(x) = e {
                    prop_assert_eq!((x.vid, x.pcp), (d, tc));
                }
                if d == 0 {
                    prop_assert_eq!(e, Egress::Keep);
                }
            }
        }
    }
}
