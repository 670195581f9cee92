//! The two bytes of IPv4/IPv6 a switch classifies on: DSCP (6 bits) and ECN (2 bits),
//! plus setters for ECN marking (IPv4 keeps its header checksum valid).

use super::ethernet::{be16, put_be16};
use super::WireError;

/// Minimum IPv4 header length.
pub const IPV4_MIN_HEADER_LEN: usize = 20;
/// IPv6 fixed header length.
pub const IPV6_HEADER_LEN: usize = 40;

/// ECN codepoints (RFC 3168).
pub mod ecn {
    /// Not ECN-capable transport.
    pub const NOT_ECT: u8 = 0;
    /// ECT(1).
    pub const ECT1: u8 = 1;
    /// ECT(0).
    pub const ECT0: u8 = 2;
    /// Congestion experienced.
    pub const CE: u8 = 3;
}

/// A view of an IPv4 header.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps without checks; accessors return 0 for missing bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Checks version 4, IHL >= 5 and that the whole header (IHL*4 bytes) is present.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let v_ihl = *b.first().ok_or(WireError::Malformed(super::Header::Ipv4))?;
        let ihl = usize::from(v_ihl & 0x0f) * 4;
        if v_ihl >> 4 != 4 || ihl < IPV4_MIN_HEADER_LEN || b.len() < ihl {
            return Err(WireError::Malformed(super::Header::Ipv4));
        }
        Ok(Ipv4Packet { buffer })
    }

    /// Gives back the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// IP version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref().first().map_or(0, |b| b >> 4)
    }

    /// Header length in bytes (IHL * 4).
    pub fn header_len(&self) -> usize {
        self.buffer.as_ref().first().map_or(0, |b| usize::from(b & 0x0f) * 4)
    }

    /// The former TOS byte (DSCP << 2 | ECN).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref().get(1).copied().unwrap_or(0)
    }

    /// Differentiated Services Code Point, 0..=63.
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// ECN field, 0..=3.
    pub fn ecn(&self) -> u8 {
        self.tos() & 3
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 10).unwrap_or(0)
    }

    /// True if the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        let hl = self.header_len();
        match self.buffer.as_ref().get(..hl) {
            Some(h) => ones_complement_sum(h) == 0xffff,
            None => false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Rewrites the TOS byte and updates the checksum incrementally (RFC 1624, eqn. 3).
    pub fn set_tos(&mut self, tos: u8) {
        let old = self.tos();
        if old == tos {
            return;
        }
        let b = self.buffer.as_mut();
        let Some(slot) = b.get_mut(1) else { return };
        *slot = tos;
        let ver_ihl = b.first().copied().unwrap_or(0);
        let old_word = u16::from_be_bytes([ver_ihl, old]);
        let new_word = u16::from_be_bytes([ver_ihl, tos]);
        let hc = be16(b, 10).unwrap_or(0);
        // HC' = ~(~HC + ~m + m')
        let mut sum = u32::from(!hc) + u32::from(!old_word) + u32::from(new_word);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        put_be16(b, 10, !(sum as u16));
    }

    /// Sets the ECN field (e.g. to [`ecn::CE`]), keeping DSCP.
    pub fn set_ecn(&mut self, e: u8) {
        let tos = (self.tos() & !3) | (e & 3);
        self.set_tos(tos);
    }

    /// Sets DSCP, keeping ECN.
    pub fn set_dscp(&mut self, d: u8) {
        let tos = ((d & 0x3f) << 2) | (self.tos() & 3);
        self.set_tos(tos);
    }
}

/// One's-complement sum of 16-bit words (RFC 1071), folded. Summed 32 bits at a time
/// (RFC 1071 2(B): the sum is the same in any word size, folded at the end): an IPv4
/// header is five loads, checked on every routed packet (RFC 1812 5.2.2).
#[inline]
pub(super) fn ones_complement_sum(b: &[u8]) -> u16 {
    // The common case, an IPv4 header without options: five loads, no loop.
    if let Ok(h) = <&[u8; 20]>::try_from(b) {
        let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
        return fold(w(0) + w(4) + w(8) + w(12) + w(16));
    }
    let mut sum: u64 = 0;
    let mut chunks = b.chunks_exact(4);
    for c in &mut chunks {
        sum += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    match *chunks.remainder() {
        [a, b, c] => sum += u64::from(u16::from_be_bytes([a, b])) + (u64::from(c) << 8),
        [a, b] => sum += u64::from(u16::from_be_bytes([a, b])),
        [a] => sum += u64::from(a) << 8,
        _ => {}
    }
    fold(sum)
}

/// A sum of 32-bit words (below 2^48: any header) folded to 16 bits, end-around carry.
#[inline(always)]
fn fold(mut sum: u64) -> u16 {
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum as u16
}

/// Computes the IPv4 header checksum of `header` (checksum field treated as zero by the
/// caller zeroing it first). Used by tests and packet builders.
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    !ones_complement_sum(header)
}

/// A view of an IPv6 fixed header.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps without checks; accessors return 0 for missing bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Checks version 6 and that the 40-byte fixed header is present.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < IPV6_HEADER_LEN || b.first().map_or(0, |v| v >> 4) != 6 {
            return Err(WireError::Malformed(super::Header::Ipv6));
        }
        Ok(Ipv6Packet { buffer })
    }

    /// Gives back the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// IP version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref().first().map_or(0, |b| b >> 4)
    }

    /// Traffic Class (DSCP << 2 | ECN), spread over the first two bytes.
    pub fn traffic_class(&self) -> u8 {
        let w = be16(self.buffer.as_ref(), 0).unwrap_or(0);
        (w >> 4) as u8
    }

    /// DSCP, 0..=63.
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// ECN, 0..=3.
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 3
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Rewrites the Traffic Class (IPv6 has no header checksum).
    pub fn set_traffic_class(&mut self, tc: u8) {
        let b = self.buffer.as_mut();
        let w = be16(b, 0).unwrap_or(0);
        let w = (w & 0xf00f) | (u16::from(tc) << 4);
        put_be16(b, 0, w);
    }

    /// Sets ECN, keeping DSCP.
    pub fn set_ecn(&mut self, e: u8) {
        let tc = (self.traffic_class() & !3) | (e & 3);
        self.set_traffic_class(tc);
    }

    /// Sets DSCP, keeping ECN.
    pub fn set_dscp(&mut self, d: u8) {
        let tc = ((d & 0x3f) << 2) | (self.traffic_class() & 3);
        self.set_traffic_class(tc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_header(tos: u8) -> [u8; 20] {
        let mut h = [0x45, tos, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        let c = ipv4_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    /// The 32-bit-at-a-time sum is RFC 1071's 16-bit sum, for every length and content.
    #[test]
    fn ones_complement_sum_is_the_16_bit_sum() {
        fn reference(b: &[u8]) -> u16 {
            let mut sum: u32 = 0;
            for c in b.chunks(2) {
                sum += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
            }
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            sum as u16
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..200 {
            for _ in 0..20 {
                let b: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                assert_eq!(ones_complement_sum(&b), reference(&b), "{b:?}");
            }
            assert_eq!(ones_complement_sum(&vec![0xff; len]), reference(&vec![0xff; len]));
        }
    }

    #[test]
    fn ipv4_dscp_ecn_and_incremental_checksum() {
        let mut h = v4_header((46 << 2) | 1);
        let mut p = Ipv4Packet::new_checked(&mut h[..]).unwrap();
        assert_eq!((p.dscp(), p.ecn()), (46, 1));
        assert!(p.verify_checksum());
        p.set_ecn(ecn::CE);
        assert_eq!((p.dscp(), p.ecn()), (46, 3));
        assert!(p.verify_checksum());
        p.set_dscp(3);
        assert_eq!((p.dscp(), p.ecn()), (3, 3));
        assert!(p.verify_checksum());
        // Full recompute agrees with the incremental update.
        let mut z = h;
        z[10] = 0;
        z[11] = 0;
        assert_eq!(ipv4_checksum(&z).to_be_bytes(), [h[10], h[11]]);
    }

    #[test]
    fn ipv4_rejects() {
        assert!(Ipv4Packet::new_checked(&[][..]).is_err());
        assert!(Ipv4Packet::new_checked(&[0x65; 20][..]).is_err()); // version 6
        assert!(Ipv4Packet::new_checked(&[0x44; 20][..]).is_err()); // IHL 4
        assert!(Ipv4Packet::new_checked(&[0x46; 20][..]).is_err()); // IHL 6 but 20 bytes
        assert!(Ipv4Packet::new_checked(&[0x46; 24][..]).is_ok());
    }

    #[test]
    fn ipv6_traffic_class() {
        let mut h = [0u8; 40];
        h[0] = 0x6b; // version 6, TC high nibble 0xb
        h[1] = 0x8f; // TC low nibble 0x8, flow label bits 0xf
        let mut p = Ipv6Packet::new_checked(&mut h[..]).unwrap();
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!((p.dscp(), p.ecn()), (46, 0));
        p.set_ecn(ecn::CE);
        assert_eq!((p.dscp(), p.ecn()), (46, 3));
        assert_eq!(h[1] & 0x0f, 0x0f, "flow label untouched");
        assert!(Ipv6Packet::new_checked(&[0x60; 39][..]).is_err());
        assert!(Ipv6Packet::new_checked(&[0x40; 40][..]).is_err());
    }
}
