//! The frames a probe sends and the pcap files it writes and reads (classic pcap,
//! microsecond timestamps, Ethernet).

use crate::classify::{QosMaps, Trust};
use crate::wire::{ipv4_checksum, MacControl};

/// Source of the burst (a host behind the ingress port).
pub const SRC: [u8; 6] = [0x02, 0x50, 0x52, 0, 0, 1];
/// The sink behind the stalled egress port: learned there before the burst arrives.
pub const SINK: [u8; 6] = [0x02, 0x50, 0x52, 0, 0, 2];
/// Destination of the learning frame (unknown: it is flooded, lossy).
const NOBODY: [u8; 6] = [0x02, 0x50, 0x52, 0, 0, 3];
/// IEEE local experimental EtherType: a non-IP payload.
const ETH_EXPERIMENTAL: u16 = 0x88b5;

/// How a frame is made to classify into a TC on a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marking {
    /// Untagged IPv4 with this DSCP.
    Dscp(u8),
    /// 802.1Q priority tag (VID 0) with this PCP, non-IP payload.
    Pcp(u8),
    /// Untagged non-IP: the port's `default_tc`.
    Default,
}

/// A marking that `maps` classifies into `tc`, preferring what the port trusts.
pub fn marking_for(maps: &QosMaps, tc: u8) -> Option<Marking> {
    let dscp = || (0..64u8).find(|&d| maps.dscp_to_tc[usize::from(d)] & 7 == tc).map(Marking::Dscp);
    let pcp = || (0..8u8).find(|&p| maps.dot1p_to_tc[usize::from(p)] & 7 == tc).map(Marking::Pcp);
    let default = || (maps.default_tc & 7 == tc).then_some(Marking::Default);
    match maps.trust {
        Trust::Dscp => dscp().or_else(pcp).or_else(default),
        Trust::Pcp => pcp().or_else(default),
    }
}

/// One burst frame of `len` bytes (without FCS, at least 64) from [`SRC`] to [`SINK`].
pub fn burst_frame(marking: Marking, len: usize, seq: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(len.max(64));
    f.extend_from_slice(&SINK);
    f.extend_from_slice(&SRC);
    match marking {
        Marking::Dscp(d) => {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let total = (len.max(64) - 14) as u16;
            let [t0, t1] = total.to_be_bytes();
            let [s0, s1] = seq.to_be_bytes();
            let mut ip = [0x45, d << 2, t0, t1, s0, s1, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2];
            let sum = ipv4_checksum(&ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            f.extend_from_slice(&ip);
            // UDP 4791 (RoCEv2), no checksum.
            let udp_len = total - 20;
            f.extend_from_slice(&[0xc0, 0x00, 0x12, 0xb7]);
            f.extend_from_slice(&udp_len.to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
        Marking::Pcp(p) => {
            f.extend_from_slice(&0x8100u16.to_be_bytes());
            f.extend_from_slice(&(u16::from(p & 7) << 13).to_be_bytes());
            f.extend_from_slice(&ETH_EXPERIMENTAL.to_be_bytes());
            f.extend_from_slice(&seq.to_be_bytes());
        }
        Marking::Default => {
            f.extend_from_slice(&ETH_EXPERIMENTAL.to_be_bytes());
            f.extend_from_slice(&seq.to_be_bytes());
        }
    }
    f.resize(len.max(64), 0x5a);
    f
}

/// The frame the egress port receives first, so that the switch learns [`SINK`] there.
pub fn learning_frame() -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&NOBODY);
    f.extend_from_slice(&SINK);
    f.extend_from_slice(&ETH_EXPERIMENTAL.to_be_bytes());
    f.resize(64, 0);
    f
}

/// A classic little-endian pcap file of `frames` (timestamps 1 s + i µs).
pub fn pcap_bytes(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [0xa1b2_c3d4u32.to_le_bytes(), [2, 0, 4, 0], 0u32.to_le_bytes(), 0u32.to_le_bytes()] {
        b.extend_from_slice(&v);
    }
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    for (i, f) in frames.iter().enumerate() {
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(i as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    b
}

/// The frames of a classic pcap file (either byte order); what does not parse ends it.
pub fn pcap_frames(b: &[u8]) -> Vec<Vec<u8>> {
    let Some(magic) = b.get(0..4) else { return Vec::new() };
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => return Vec::new(),
    };
    let u32_at = |o: usize| {
        b.get(o..o + 4).map(|w| {
            let w = [w[0], w[1], w[2], w[3]];
            if le {
                u32::from_le_bytes(w)
            } else {
                u32::from_be_bytes(w)
            }
        })
    };
    let mut out = Vec::new();
    let mut o = 24;
    while let Some(incl) = u32_at(o + 8) {
        let start = o + 16;
        let Some(f) = b.get(start..start + incl as usize) else { break };
        out.push(f.to_vec());
        o = start + incl as usize;
    }
    out
}

/// A PFC frame's class-enable vector and its eight times, if `f` is one (decoded by the
/// switch's own [`MacControl`] codec).
pub fn pfc_frame(f: &[u8]) -> Option<(u8, [u16; 8])> {
    match MacControl::parse(f) {
        Ok(MacControl::Pfc { class_enable, quanta }) => Some((class_enable, quanta)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::parse;

    #[test]
    fn frames_classify_as_asked() {
        let mut maps = QosMaps::default();
        for tc in [3u8, 4] {
            let m = marking_for(&maps, tc).unwrap();
            assert!(matches!(m, Marking::Dscp(_)));
            let f = burst_frame(m, 1000, 7);
            assert_eq!(f.len(), 1000);
            let p = parse(&f).unwrap();
            assert_eq!(maps.classify(&p).tc, tc);
            assert_eq!(p.dst.0, SINK);
        }
        maps.trust = Trust::Pcp;
        let m = marking_for(&maps, 4).unwrap();
        assert_eq!(m, Marking::Pcp(4));
        assert_eq!(maps.classify(&parse(&burst_frame(m, 64, 1)).unwrap()).tc, 4);
        maps.dot1p_to_tc = [0; 8];
        maps.default_tc = 5;
        assert_eq!(marking_for(&maps, 5), Some(Marking::Default));
        assert_eq!(marking_for(&maps, 4), None);
    }

    #[test]
    fn pcap_round_trip_and_pfc() {
        let pfc = MacControl::pfc_pause(0x08, 0xffff).to_bytes(crate::wire::MacAddr::default()).to_vec();
        let frames = vec![learning_frame(), pfc];
        let back = pcap_frames(&pcap_bytes(&frames));
        assert_eq!(back, frames);
        assert_eq!(pfc_frame(&back[1]), Some((0x08, [0, 0, 0, 0xffff, 0, 0, 0, 0])));
        assert_eq!(pfc_frame(&back[0]), None);
        assert!(pcap_frames(&[1, 2, 3]).is_empty());
    }
}
