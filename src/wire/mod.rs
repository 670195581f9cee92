//! Frames on the wire: zero-copy views (`EthernetFrame`, `Ipv4Packet`, `Ipv6Packet`,
//! `PfcFrame`) and the one-pass [`parse`] the fast path uses, in the style of smoltcp's
//! `wire` module. Nothing here allocates or panics on any input.

mod ethernet;
mod icmp;
mod ip;
mod l3;
mod lldp;
mod mac;
mod mac_control;

pub use ethernet::{
    EthernetFrame, VlanTag, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_MAC_CONTROL, ETHERTYPE_QINQ, ETHERTYPE_VLAN,
    HEADER_LEN as ETHERNET_HEADER_LEN, VLAN_TAG_LEN,
};
pub use icmp::{frag_needed, packet_too_big, ICMP_ERROR_MAX_FRAME};
pub use ip::{ecn, ipv4_checksum, Ipv4Packet, Ipv6Packet, IPV4_MIN_HEADER_LEN, IPV6_HEADER_LEN};
pub use l3::{parse_l3, proto, route_rewrite, IpPair, L3Header};
pub use lldp::{
    id_text, selector, AppEntry, Ets, LldpError, Lldpdu, PfcTlv, Tsa, CHASSIS_MAC, ETHERTYPE_LLDP, LLDP_DST, OUI_8021,
    PORT_IFNAME,
};
pub use mac::{MacAddr, MacParseError};
pub use mac_control::{MacControl, MacControlError, PfcFrame, OPCODE_PAUSE, OPCODE_PFC};

use ethernet::be16;

/// Minimum Ethernet frame length without FCS (64 on the wire minus 4 FCS bytes).
pub const MIN_FRAME_LEN: usize = 60;

/// Traffic classes, priorities and priority groups of 802.1Q: eight of each.
pub const NUM_TC: usize = 8;

/// Frame check sequence: on the wire, not in an mbuf (the PMD strips it, the NIC adds it).
pub const FCS_LEN: u32 = 4;

/// Preamble and start delimiter (8) and the minimum inter-frame gap (12).
pub const PREAMBLE_IFG_LEN: u32 = 20;

/// The largest L2 header of a frame in an mbuf beyond its MTU payload: Ethernet and one
/// 802.1Q tag. A received frame longer than MTU + this is oversize.
pub const MAX_L2_HEADER: u32 = (ethernet::HEADER_LEN + ethernet::VLAN_TAG_LEN) as u32;

/// Bytes a frame holds beyond its MTU payload, FCS included (its size as buffers count it).
pub const L2_OVERHEAD: u32 = MAX_L2_HEADER + FCS_LEN;

/// What the line carries beyond a frame's bytes in an mbuf: FCS, preamble and gap (so a
/// shaper at line rate models the line).
pub const WIRE_OVERHEAD: u32 = FCS_LEN + PREAMBLE_IFG_LEN;

/// The longest frame (in an mbuf, no FCS) a port of this MTU accepts.
pub const fn max_frame_len(mtu: u32) -> u32 {
    mtu + MAX_L2_HEADER
}

/// The line time, in bytes, of the longest frame of this MTU: MTU + 42 for 1500 → 1542.
pub const fn max_wire_len(mtu: u32) -> u32 {
    max_frame_len(mtu) + WIRE_OVERHEAD
}

/// Which header a [`WireError::Malformed`] refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Header {
    /// 802.1Q / 802.1ad tag.
    Vlan,
    /// IPv4 header (bad version, IHL < 5, or truncated).
    Ipv4,
    /// IPv6 fixed header (bad version or truncated).
    Ipv6,
}

/// Why a frame could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A view needed `need` bytes and the buffer has `have`.
    #[error("buffer too short: need {need} bytes, have {have}")]
    TooShort { need: usize, have: usize },
    /// Shorter than the 60-byte minimum frame (no FCS): a runt the MAC should have
    /// discarded.
    #[error("runt frame: {len} bytes (minimum 60)")]
    Runt { len: usize },
    /// A header announced by the EtherType is truncated or invalid.
    #[error("malformed {0:?} header")]
    Malformed(Header),
}

/// Everything the fast path needs from a frame, decoded in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Destination MAC.
    pub dst: MacAddr,
    /// Source MAC.
    pub src: MacAddr,
    /// The outer tag (0x8100, or 0x88a8 for QinQ), if any. For QinQ an inner 0x8100
    /// tag is skipped; its PCP is not used (the S-tag's PCP classifies, as on ASICs).
    pub vlan: Option<VlanTag>,
    /// The EtherType after any tags. Values < 0x0600 are 802.3 lengths (LLC frames),
    /// reported as-is.
    pub ethertype: u16,
    /// Offset of the L3 header (14, 18 or 22).
    pub l3_offset: usize,
    /// DSCP of an IPv4/IPv6 packet.
    pub dscp: Option<u8>,
    /// ECN of an IPv4/IPv6 packet.
    pub ecn: Option<u8>,
}

impl Parsed {
    /// Nothing parsed (a placeholder in per-burst arrays).
    pub const EMPTY: Parsed = Parsed {
        dst: MacAddr([0; 6]),
        src: MacAddr([0; 6]),
        vlan: None,
        ethertype: 0,
        l3_offset: 0,
        dscp: None,
        ecn: None,
    };

    /// EtherType 0x8808 (after any tag): PAUSE/PFC/other MAC Control. Such frames are
    /// consumed by the port and never forwarded; decode them with [`MacControl::parse`]
    /// (which accepts only the untagged form, as 802.3 requires).
    #[inline]
    pub fn is_mac_control(&self) -> bool {
        self.ethertype == ETHERTYPE_MAC_CONTROL
    }

    /// True for IPv4 or IPv6.
    #[inline]
    pub fn is_ip(&self) -> bool {
        self.dscp.is_some()
    }
}

/// One-pass, branch-light parse of a whole frame (no FCS needed; trailing bytes such as
/// an FCS or padding are ignored).
///
/// * frames shorter than 60 bytes → [`WireError::Runt`];
/// * a truncated tag, or an IPv4/IPv6 header that is truncated or has the wrong version
///   (or IPv4 IHL < 5) → [`WireError::Malformed`];
/// * anything else (ARP, LLDP, MAC Control, 802.3/LLC, ...) parses with `dscp: None`.
#[inline(always)]
pub fn parse(frame: &[u8]) -> Result<Parsed, WireError> {
    let len = frame.len();
    if len < MIN_FRAME_LEN {
        return Err(WireError::Runt { len });
    }
    let dst = MacAddr::from_bytes(frame).unwrap_or_default();
    let src = frame.get(6..).and_then(MacAddr::from_bytes).unwrap_or_default();
    let mut ethertype = be16(frame, 12).unwrap_or(0);
    let mut off = ETHERNET_HEADER_LEN;
    let mut vlan = None;
    if ethertype == ETHERTYPE_VLAN || ethertype == ETHERTYPE_QINQ {
        // Always present in a >= 60-byte frame, but keep the decoder total.
        let tci = be16(frame, off).ok_or(WireError::Malformed(Header::Vlan))?;
        vlan = Some(VlanTag::from_tci(tci));
        ethertype = be16(frame, off + 2).ok_or(WireError::Malformed(Header::Vlan))?;
        off += VLAN_TAG_LEN;
        if ethertype == ETHERTYPE_VLAN {
            // QinQ inner C-tag: skip it.
            ethertype = be16(frame, off + 2).ok_or(WireError::Malformed(Header::Vlan))?;
            off += VLAN_TAG_LEN;
        }
    }
    let l3 = frame.get(off..).unwrap_or(&[]);
    let tos = match ethertype {
        ETHERTYPE_IPV4 => Some(Ipv4Packet::new_checked(l3)?.tos()),
        ETHERTYPE_IPV6 => Some(Ipv6Packet::new_checked(l3)?.traffic_class()),
        _ => None,
    };
    Ok(Parsed { dst, src, vlan, ethertype, l3_offset: off, dscp: tos.map(|t| t >> 2), ecn: tos.map(|t| t & 3) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untagged_ipv4() {
        let mut f = [0u8; 60];
        f[12] = 0x08;
        f[14] = 0x45;
        f[15] = (26 << 2) | 2;
        let p = parse(&f).unwrap();
        assert_eq!((p.ethertype, p.l3_offset, p.dscp, p.ecn, p.vlan), (0x0800, 14, Some(26), Some(2), None));
        assert!(!p.is_mac_control());
    }

    #[test]
    fn qinq_ipv6_truncated_is_malformed() {
        let mut f = [0u8; 60];
        f[12..14].copy_from_slice(&ETHERTYPE_QINQ.to_be_bytes());
        f[14..16].copy_from_slice(&0xa00au16.to_be_bytes());
        f[16..18].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        f[20..22].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        f[22] = 0x60;
        // 60 - 22 = 38 < 40 bytes of IPv6 header.
        assert_eq!(parse(&f), Err(WireError::Malformed(Header::Ipv6)));
        let mut g = [0u8; 62];
        g[..60].copy_from_slice(&f);
        let p = parse(&g).unwrap();
        assert_eq!(p.vlan, Some(VlanTag { pcp: 5, dei: false, vid: 10 }));
        assert_eq!((p.ethertype, p.l3_offset, p.dscp), (ETHERTYPE_IPV6, 22, Some(0)));
    }
}
