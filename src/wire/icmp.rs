//! The router's own ICMP errors for a packet too big for its egress link: ICMPv4
//! "fragmentation needed and DF set" (type 3 code 4, with the next-hop MTU of RFC 1191) and
//! ICMPv6 "packet too big" (type 2, RFC 4443 3.2). Built in place into a fresh frame sent
//! back to the previous hop: the kernel cannot answer a jumbo packet it never receives
//! (docs/routing.md, "A router's contract"). Pure: the caller gives the buffer.

use super::ip::ones_complement_sum;
use super::MacAddr;

const ETH: usize = 14;
/// RFC 1812 4.3.2.3: an ICMP error carries as much of the original as fits 576 bytes.
const V4_MAX: usize = 576;
/// RFC 4443 2.4(c): as much of the original as fits the IPv6 minimum MTU, 1280 bytes.
const V6_MAX: usize = 1280;

/// The frame length [`frag_needed`] / [`packet_too_big`] need at most.
pub const ICMP_ERROR_MAX_FRAME: usize = ETH + V6_MAX;

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn ethernet(out: &mut [u8], dst: MacAddr, src: MacAddr, ethertype: u16) {
    out[..6].copy_from_slice(&dst.0);
    out[6..12].copy_from_slice(&src.0);
    put16(out, 12, ethertype);
}

/// ICMPv4 fragmentation needed in answer to the IPv4 packet `orig` (from its header on),
/// from `src_ip` (the router's address on the ingress interface) to `orig`'s source, with
/// next-hop MTU `mtu`; Ethernet to `dst_mac` (the previous hop) from `src_mac`. Returns
/// the frame length written into `out`, or None if `orig` is no IPv4 header or `out` is
/// too small.
pub fn frag_needed(
    out: &mut [u8],
    dst_mac: MacAddr,
    src_mac: MacAddr,
    src_ip: [u8; 4],
    orig: &[u8],
    mtu: u16,
) -> Option<usize> {
    if orig.len() < 20 || orig[0] >> 4 != 4 {
        return None;
    }
    let quoted = orig.len().min(V4_MAX - 20 - 8);
    let ip_len = 20 + 8 + quoted;
    let frame = (ETH + ip_len).max(60);
    let out = out.get_mut(..frame)?;
    out.fill(0);
    ethernet(out, dst_mac, src_mac, 0x0800);
    let ip = &mut out[ETH..];
    ip[0] = 0x45;
    // DSCP CS6 (network control), as the kernel sends its ICMP errors.
    ip[1] = 0xc0;
    put16(ip, 2, ip_len as u16);
    ip[8] = 64;
    ip[9] = super::proto::ICMP;
    ip[12..16].copy_from_slice(&src_ip);
    ip[16..20].copy_from_slice(&orig[12..16]);
    let c = !ones_complement_sum(&ip[..20]);
    put16(ip, 10, c);
    let icmp = &mut ip[20..ip_len];
    icmp[0] = 3;
    icmp[1] = 4;
    put16(icmp, 6, mtu);
    icmp[8..].copy_from_slice(&orig[..quoted]);
    let c = !ones_complement_sum(icmp);
    put16(icmp, 2, c);
    Some(frame)
}

/// ICMPv6 packet too big in answer to the IPv6 packet `orig` (from its header on), from
/// `src_ip` to `orig`'s source, with MTU `mtu`. As [`frag_needed`] otherwise.
pub fn packet_too_big(
    out: &mut [u8],
    dst_mac: MacAddr,
    src_mac: MacAddr,
    src_ip: [u8; 16],
    orig: &[u8],
    mtu: u32,
) -> Option<usize> {
    if orig.len() < 40 || orig[0] >> 4 != 6 {
        return None;
    }
    let quoted = orig.len().min(V6_MAX - 40 - 8);
    let payload = 8 + quoted;
    let frame = ETH + 40 + payload;
    let out = out.get_mut(..frame)?;
    out.fill(0);
    ethernet(out, dst_mac, src_mac, 0x86dd);
    let ip = &mut out[ETH..];
    ip[0] = 0x6c; // version 6, traffic class CS6 (0xc0)
    put16(ip, 4, payload as u16);
    ip[6] = 58;
    ip[7] = 64;
    ip[8..24].copy_from_slice(&src_ip);
    ip[24..40].copy_from_slice(&orig[8..24]);
    let (hdr, icmp) = ip.split_at_mut(40);
    let icmp = &mut icmp[..payload];
    icmp[0] = 2;
    icmp[4..8].copy_from_slice(&mtu.to_be_bytes());
    icmp[8..].copy_from_slice(&orig[..quoted]);
    // Checksum over the pseudo-header (RFC 8200 8.1) and the message.
    let mut pseudo = [0u8; 40];
    pseudo[..32].copy_from_slice(&hdr[8..40]);
    pseudo[32..36].copy_from_slice(&(payload as u32).to_be_bytes());
    pseudo[39] = 58;
    let sum = u32::from(ones_complement_sum(&pseudo)) + u32::from(ones_complement_sum(icmp));
    let sum = (sum & 0xffff) + (sum >> 16);
    put16(icmp, 2, !(sum as u16));
    Some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{parse, parse_l3};

    const R: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const H: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn v4_orig(len: usize) -> Vec<u8> {
        let mut ip = vec![0u8; len];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ip[6] = 0x40;
        ip[8] = 63;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[198, 18, 1, 2]);
        ip[16..20].copy_from_slice(&[198, 18, 2, 2]);
        let c = crate::wire::ipv4_checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        ip
    }

    #[test]
    fn frag_needed_is_a_valid_icmp_error_to_the_source() {
        let orig = v4_orig(8000);
        let mut out = [0u8; ICMP_ERROR_MAX_FRAME];
        let n = frag_needed(&mut out, H, R, [198, 18, 1, 1], &orig, 1500).unwrap();
        assert_eq!(n, 14 + 576);
        let f = &out[..n];
        let p = parse(f).unwrap();
        assert_eq!((p.dst, p.src), (H, R));
        let l3 = parse_l3(f, &p).unwrap();
        assert!(l3.checksum_ok);
        assert_eq!(l3.addrs, crate::wire::IpPair::V4 { src: [198, 18, 1, 1], dst: [198, 18, 1, 2] });
        let icmp = &f[34..];
        assert_eq!((icmp[0], icmp[1]), (3, 4));
        assert_eq!(u16::from_be_bytes([icmp[6], icmp[7]]), 1500);
        assert_eq!(ones_complement_sum(icmp), 0xffff, "ICMP checksum");
        assert_eq!(&icmp[8..28], &orig[..20], "the original header is quoted");
        assert!(frag_needed(&mut out, H, R, [1; 4], &orig[..10], 1500).is_none());
    }

    #[test]
    fn packet_too_big_fits_the_minimum_mtu_with_a_valid_checksum() {
        let mut orig = vec![0u8; 9000];
        orig[0] = 0x60;
        orig[8..24].copy_from_slice(&[0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        let src = [0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut out = [0u8; ICMP_ERROR_MAX_FRAME];
        let n = packet_too_big(&mut out, H, R, src, &orig, 1500).unwrap();
        assert_eq!(n, 14 + 1280);
        let f = &out[..n];
        let ip = &f[14..];
        assert_eq!((ip[6], &ip[24..40]), (58, &orig[8..24]));
        let icmp = &ip[40..];
        assert_eq!(icmp[0], 2);
        assert_eq!(u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]]), 1500);
        let mut pseudo = [0u8; 40];
        pseudo[..32].copy_from_slice(&ip[8..40]);
        pseudo[32..36].copy_from_slice(&(icmp.len() as u32).to_be_bytes());
        pseudo[39] = 58;
        let sum = u32::from(ones_complement_sum(&pseudo)) + u32::from(ones_complement_sum(icmp));
        assert_eq!(((sum & 0xffff) + (sum >> 16)) as u16, 0xffff, "ICMPv6 checksum");
    }
}
