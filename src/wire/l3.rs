//! What a router reads from an IPv4/IPv6 packet (addresses, protocol, TTL/hop limit, length,
//! the first four L4 bytes) and the rewrite it makes when it forwards one: destination and
//! source MAC, TTL or hop limit − 1 with the IPv4 header checksum updated incrementally
//! (RFC 1624, as ECN marking does), DSCP and ECN untouched. Nothing here allocates.

use super::ethernet::{be16, put_be16};
use super::{Header, MacAddr, Parsed, WireError, ETHERTYPE_IPV4, ETHERTYPE_IPV6, IPV6_HEADER_LEN};

/// Source and destination of an IP packet, in network byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpPair {
    /// IPv4.
    V4 { src: [u8; 4], dst: [u8; 4] },
    /// IPv6.
    V6 { src: [u8; 16], dst: [u8; 16] },
}

/// IP protocol numbers the router looks at.
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP.
    pub const SCTP: u8 = 132;
}

/// The routing-relevant fields of an IPv4 or IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3Header {
    pub addrs: IpPair,
    /// IPv4 protocol, or the IPv6 Next Header of the fixed header (extension headers are
    /// not walked: such a packet hashes on its addresses and that value).
    pub proto: u8,
    /// TTL or hop limit.
    pub ttl: u8,
    /// The IP packet's length (IPv4 total length; IPv6 40 + payload length): what must fit
    /// the egress MTU.
    pub len: u16,
    /// The first two and next two bytes after the IP header (TCP/UDP/SCTP source and
    /// destination port; ICMP type and code in `l4_a`), 0 when absent or in a non-first
    /// fragment.
    pub l4_a: u16,
    pub l4_b: u16,
    /// An IPv4 fragment (MF set or offset ≠ 0): its ports are not used, so every fragment
    /// of a datagram hashes alike.
    pub fragment: bool,
    /// IPv4 header checksum verified (RFC 1812 5.2.2); always true for IPv6 (no checksum).
    pub checksum_ok: bool,
    /// IPv4 options present (IHL > 5).
    pub options: bool,
}

impl L3Header {
    /// A placeholder (IPv4, all zero): the router's per-burst slots start as this.
    pub const EMPTY: L3Header = L3Header {
        addrs: IpPair::V4 { src: [0; 4], dst: [0; 4] },
        proto: 0,
        ttl: 0,
        len: 0,
        l4_a: 0,
        l4_b: 0,
        fragment: false,
        checksum_ok: true,
        options: false,
    };

    /// True for IPv6.
    #[inline]
    pub fn is_v6(&self) -> bool {
        matches!(self.addrs, IpPair::V6 { .. })
    }

    /// An ICMPv6 Neighbour Discovery message (router/neighbour solicitation and
    /// advertisement, redirect: types 133..=137) directly after the fixed header.
    #[inline]
    pub fn is_nd(&self) -> bool {
        self.is_v6() && self.proto == proto::ICMPV6 && (133..=137).contains(&(self.l4_a >> 8))
    }

    /// TCP, UDP or SCTP, first fragment or unfragmented: `l4_a`/`l4_b` are ports.
    #[inline]
    pub fn has_ports(&self) -> bool {
        !self.fragment && matches!(self.proto, proto::TCP | proto::UDP | proto::SCTP)
    }
}

/// Reads the L3 header of a frame [`super::parse`] found to be IPv4/IPv6 (`p.l3_offset`).
/// A header whose length fields overrun the frame is [`WireError::Malformed`]; trailing
/// bytes (Ethernet padding) are allowed.
#[inline]
pub fn parse_l3(frame: &[u8], p: &Parsed) -> Result<L3Header, WireError> {
    let l3 = frame.get(p.l3_offset..).unwrap_or(&[]);
    match p.ethertype {
        ETHERTYPE_IPV4 => {
            let bad = WireError::Malformed(Header::Ipv4);
            let ihl = usize::from(l3.first().ok_or(bad)? & 0x0f) * 4;
            let total = be16(l3, 2).ok_or(bad)?;
            if ihl < 20 || usize::from(total) < ihl || usize::from(total) > l3.len() {
                return Err(bad);
            }
            let frag = be16(l3, 6).ok_or(bad)?;
            let fragment = frag & 0x3fff != 0;
            let first = frag & 0x1fff == 0;
            let (l4_a, l4_b) =
                if first { (be16(l3, ihl).unwrap_or(0), be16(l3, ihl + 2).unwrap_or(0)) } else { (0, 0) };
            let mut src = [0u8; 4];
            let mut dst = [0u8; 4];
            src.copy_from_slice(l3.get(12..16).ok_or(bad)?);
            dst.copy_from_slice(l3.get(16..20).ok_or(bad)?);
            // A valid header sums to 0xffff in one's complement (its checksum included).
            let checksum_ok = super::ip::ones_complement_sum(l3.get(..ihl).ok_or(bad)?) == 0xffff;
            Ok(L3Header {
                addrs: IpPair::V4 { src, dst },
                proto: l3.get(9).copied().unwrap_or(0),
                ttl: l3.get(8).copied().unwrap_or(0),
                len: total,
                l4_a,
                l4_b,
                fragment,
                checksum_ok,
                options: ihl > 20,
            })
        }
        ETHERTYPE_IPV6 => {
            let bad = WireError::Malformed(Header::Ipv6);
            let payload = be16(l3, 4).ok_or(bad)?;
            let len = usize::from(payload) + IPV6_HEADER_LEN;
            if l3.len() < IPV6_HEADER_LEN || len > l3.len() || len > usize::from(u16::MAX) {
                return Err(bad);
            }
            let mut src = [0u8; 16];
            let mut dst = [0u8; 16];
            src.copy_from_slice(l3.get(8..24).ok_or(bad)?);
            dst.copy_from_slice(l3.get(24..40).ok_or(bad)?);
            Ok(L3Header {
                addrs: IpPair::V6 { src, dst },
                proto: l3.get(6).copied().unwrap_or(0),
                ttl: l3.get(7).copied().unwrap_or(0),
                len: len as u16,
                l4_a: be16(l3, 40).unwrap_or(0),
                l4_b: be16(l3, 42).unwrap_or(0),
                fragment: false,
                checksum_ok: true,
                options: false,
            })
        }
        _ => Err(WireError::Malformed(Header::Ipv4)),
    }
}

/// The forwarding rewrite: `dst`/`src` MAC, TTL (IPv4, checksum updated incrementally) or
/// hop limit (IPv6) − 1. DSCP, ECN and everything else untouched, a VLAN tag kept. Returns
/// false (frame unchanged) if there is no IP header at `l3_offset` or its TTL is already 0:
/// the router punts TTL ≤ 1 before it gets here.
#[inline]
pub fn route_rewrite(frame: &mut [u8], l3_offset: usize, dst: MacAddr, src: MacAddr) -> bool {
    let Some(l3) = frame.get_mut(l3_offset..) else { return false };
    match l3.first().map(|b| b >> 4) {
        Some(4) if l3.len() >= 20 => {
            let ttl = l3[8];
            if ttl == 0 {
                return false;
            }
            let proto = l3[9];
            l3[8] = ttl - 1;
            // RFC 1624 eqn. 3 on the 16-bit word TTL|protocol: HC' = ~(~HC + ~m + m').
            let old = u16::from_be_bytes([ttl, proto]);
            let new = u16::from_be_bytes([ttl - 1, proto]);
            let hc = be16(l3, 10).unwrap_or(0);
            let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
            sum = (sum & 0xffff) + (sum >> 16);
            sum = (sum & 0xffff) + (sum >> 16);
            put_be16(l3, 10, !(sum as u16));
        }
        Some(6) if l3.len() >= IPV6_HEADER_LEN => {
            if l3[7] == 0 {
                return false;
            }
            l3[7] -= 1;
        }
        _ => return false,
    }
    if let Some(d) = frame.get_mut(0..6) {
        d.copy_from_slice(&dst.0);
    }
    if let Some(s) = frame.get_mut(6..12) {
        s.copy_from_slice(&src.0);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::{ipv4_checksum, parse, Ipv4Packet};
    use super::*;
    use proptest::prelude::*;

    /// An untagged IPv4/UDP frame with a valid checksum.
    pub(crate) fn v4_udp(ttl: u8, tos: u8, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len.max(60)];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0xaa]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0xbb]);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let total = (len.max(60) - 14) as u16;
        let h = &mut f[14..];
        h[0] = 0x45;
        h[1] = tos;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[6] = 0x40; // DF
        h[8] = ttl;
        h[9] = proto::UDP;
        h[12..16].copy_from_slice(&src);
        h[16..20].copy_from_slice(&dst);
        let c = ipv4_checksum(&h[..20]);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h[20..22].copy_from_slice(&sport.to_be_bytes());
        h[22..24].copy_from_slice(&dport.to_be_bytes());
        f
    }

    #[test]
    fn parses_v4_udp() {
        let f = v4_udp(64, (26 << 2) | 2, [10, 0, 0, 1], [10, 1, 0, 2], 49152, 4791, 100);
        let p = parse(&f).unwrap();
        let l3 = parse_l3(&f, &p).unwrap();
        assert_eq!(l3.addrs, IpPair::V4 { src: [10, 0, 0, 1], dst: [10, 1, 0, 2] });
        assert_eq!((l3.proto, l3.ttl, l3.len, l3.l4_a, l3.l4_b), (proto::UDP, 64, 86, 49152, 4791));
        assert!(l3.has_ports() && !l3.is_v6() && !l3.fragment);
    }

    #[test]
    fn rejects_lengths_that_overrun() {
        let mut f = v4_udp(64, 0, [1; 4], [2; 4], 1, 2, 60);
        f[16..18].copy_from_slice(&100u16.to_be_bytes()); // total length 100 > 46 present
        let p = parse(&f).unwrap();
        assert_eq!(parse_l3(&f, &p), Err(WireError::Malformed(Header::Ipv4)));
        f[16..18].copy_from_slice(&19u16.to_be_bytes()); // shorter than the header
        assert!(parse_l3(&f, &p).is_err());
    }

    #[test]
    fn v6_hop_limit_and_nd() {
        let mut f = vec![0u8; 90];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        f[14] = 0x60;
        f[18..20].copy_from_slice(&24u16.to_be_bytes());
        f[20] = proto::ICMPV6;
        f[21] = 255;
        f[54] = 135; // neighbour solicitation
        let p = parse(&f).unwrap();
        let l3 = parse_l3(&f, &p).unwrap();
        assert!(l3.is_nd() && l3.is_v6());
        assert_eq!((l3.ttl, l3.len), (255, 64));
        assert!(route_rewrite(&mut f, 14, MacAddr([1; 6]), MacAddr([2; 6])));
        assert_eq!(f[21], 254);
        assert_eq!(&f[..12], &[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn non_first_fragment_has_no_ports() {
        let mut f = v4_udp(64, 0, [1; 4], [2; 4], 7, 8, 80);
        f[20..22].copy_from_slice(&0x0010u16.to_be_bytes()); // offset 16 × 8
        let p = parse(&f).unwrap();
        let l3 = parse_l3(&f, &p).unwrap();
        assert!(l3.fragment && !l3.has_ports());
        assert_eq!((l3.l4_a, l3.l4_b), (0, 0));
    }

    #[test]
    fn ttl_zero_is_left_alone() {
        let mut f = v4_udp(0, 0, [1; 4], [2; 4], 7, 8, 60);
        let before = f.clone();
        assert!(!route_rewrite(&mut f, 14, MacAddr([1; 6]), MacAddr([2; 6])));
        assert_eq!(f, before);
    }

    proptest! {
        /// The incremental checksum after TTL − 1 equals a full recomputation, for any
        /// header (random addresses, TOS, options bytes, TTL ≥ 1, identification), and DSCP
        /// and ECN are kept.
        #[test]
        fn ttl_checksum_matches_full_recompute(
            ttl in 1u8..=255, tos: u8, id: u16, src: [u8; 4], dst: [u8; 4], proto_: u8,
            opts in proptest::collection::vec(any::<u8>(), 0..=10usize),
        ) {
            let words = opts.len() / 4;
            let ihl = 5 + words;
            let mut h = vec![0u8; ihl * 4 + 8];
            h[0] = 0x40 | ihl as u8;
            h[1] = tos;
            let total = h.len() as u16;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            h[4..6].copy_from_slice(&id.to_be_bytes());
            h[8] = ttl;
            h[9] = proto_;
            h[12..16].copy_from_slice(&src);
            h[16..20].copy_from_slice(&dst);
            h[20..20 + words * 4].copy_from_slice(&opts[..words * 4]);
            let c = ipv4_checksum(&h[..ihl * 4]);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            let mut f = vec![0u8; 14];
            f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
            f.extend_from_slice(&h);
            prop_assert!(route_rewrite(&mut f, 14, MacAddr([1; 6]), MacAddr([2; 6])));
            let mut z = f[14..14 + ihl * 4].to_vec();
            let incremental = [z[10], z[11]];
            z[10] = 0;
            z[11] = 0;
            prop_assert_eq!(ipv4_checksum(&z).to_be_bytes(), incremental);
            let p = Ipv4Packet::new_checked(&f[14..]).unwrap();
            prop_assert!(p.verify_checksum());
            prop_assert_eq!(p.tos(), tos);
            prop_assert_eq!(f[14 + 8], ttl - 1);
        }
    }
}
