//! RoCEv2 on the wire: the Base Transport Header, the invariant CRC (ICRC) and the
//! Congestion Notification Packet (CNP). Pure. Reference: `docs/dcqcn.md`.
//!
//! A RoCEv2 packet is IPv4 / UDP (destination port 4791) / BTH (12 bytes) / payload /
//! ICRC (4 bytes). The ICRC is CRC-32 (the Ethernet polynomial, reflected, as zlib's
//! `crc32`) over 8 bytes of 0xFF (the masked LRH of InfiniBand), then the IP header, UDP
//! header and BTH with the fields a router may change masked to ones (IPv4 TOS, TTL and
//! header checksum; the UDP checksum; the BTH's reserved byte `resv8a`, where RoCE NICs
//! carry FECN/BECN), then the payload; it goes on the wire least significant byte first.
//! The test vector is a CNP a ConnectX-4 Lx sent (scapy's RoCE tests carry it).
//!
//! A CNP is a BTH with opcode 0x81 and the destination QP of the flow it throttles, 16
//! reserved bytes of zero and the ICRC: 60 bytes of IPv4.

/// UDP destination port of RoCEv2.
pub const UDP_PORT: u16 = 4791;
/// Bytes of the Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Bytes of the invariant CRC.
pub const ICRC_LEN: usize = 4;
/// RC SEND Only: a whole message in one packet, no extra header (what pfcgen sends).
pub const OPCODE_RC_SEND_ONLY: u8 = 0x04;
/// The Congestion Notification Packet (RoCEv2 annex A17).
pub const OPCODE_CNP: u8 = 0x81;
/// The default partition key.
pub const PKEY_DEFAULT: u16 = 0xffff;
/// Reserved bytes after a CNP's BTH.
pub const CNP_PAD: usize = 16;
/// Bytes of a CNP's IPv4 packet: IPv4 + UDP + BTH + reserved + ICRC.
pub const CNP_IP_LEN: usize = 20 + 8 + BTH_LEN + CNP_PAD + ICRC_LEN;
/// A stream's QP is `QP_BASE + stream id`: the data's destination QP and the QP its CNPs
/// name, so the sender finds the stream a CNP throttles.
pub const QP_BASE: u32 = 0x0001_0000;
/// Bytes from the IP header's start to the end of a RoCEv2 frame's fixed headers, with
/// the ICRC: what a RoCEv2 stream adds to a frame of UDP is `BTH_LEN + ICRC_LEN`.
pub const OVERHEAD: usize = BTH_LEN + ICRC_LEN;

const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC: [u32; 256] = crc_table();

/// CRC-32 register after `data`, from `crc` (no final inversion).
#[inline]
fn crc_update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = CRC[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// CRC-32 as zlib's `crc32` (the Ethernet FCS).
pub fn crc32(data: &[u8]) -> u32 {
    !crc_update(!0, data)
}

/// The ICRC of an IPv4 RoCEv2 packet `ip` (from the IP header to the end of the payload,
/// the ICRC itself excluded): masked headers as the RoCEv2 annex defines, then the rest.
/// None if `ip` is not long enough for its headers and a BTH.
pub fn icrc(ip: &[u8]) -> Option<u32> {
    let ihl = usize::from(*ip.first()? & 0x0f) * 4;
    if ihl < 20 || ip.len() < ihl + 8 + BTH_LEN {
        return None;
    }
    let mut c = crc_update(!0, &[0xff; 8]);
    c = crc_update(c, &ip[0..1]);
    c = crc_update(c, &[0xff]); // TOS
    c = crc_update(c, &ip[2..8]);
    c = crc_update(c, &[0xff]); // TTL
    c = crc_update(c, &ip[9..10]);
    c = crc_update(c, &[0xff, 0xff]); // header checksum
    c = crc_update(c, &ip[12..ihl]);
    let udp = ihl;
    c = crc_update(c, &ip[udp..udp + 6]);
    c = crc_update(c, &[0xff, 0xff]); // UDP checksum
    let bth = udp + 8;
    c = crc_update(c, &ip[bth..bth + 4]);
    c = crc_update(c, &[0xff]); // resv8a (FECN/BECN)
    c = crc_update(c, &ip[bth + 5..]);
    Some(!c)
}

/// Write the ICRC into the last 4 bytes of the IPv4 packet `ip` (its total length).
/// Returns false (nothing written) if `ip` is too short.
pub fn seal(ip: &mut [u8]) -> bool {
    let Some(body) = ip.len().checked_sub(ICRC_LEN) else { return false };
    let Some(c) = icrc(&ip[..body]) else { return false };
    ip[body..].copy_from_slice(&c.to_le_bytes());
    true
}

/// Whether the IPv4 packet `ip` (ICRC in its last 4 bytes) carries the right ICRC.
pub fn icrc_ok(ip: &[u8]) -> bool {
    let Some(body) = ip.len().checked_sub(ICRC_LEN) else { return false };
    icrc(&ip[..body]).is_some_and(|c| ip[body..] == c.to_le_bytes())
}

/// The fields of a BTH pfcgen writes and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bth {
    pub opcode: u8,
    /// Bytes of padding before the ICRC (0..=3).
    pub pad: u8,
    pub pkey: u16,
    /// The BECN bit of `resv8a` (a CNP from a ConnectX sets it).
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dqp: u32,
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// Write into the first [`BTH_LEN`] bytes of `out` (nothing if shorter).
    #[inline]
    pub fn write(&self, out: &mut [u8]) {
        let Some(b) = out.get_mut(..BTH_LEN) else { return };
        b[0] = self.opcode;
        b[1] = (self.pad & 3) << 4; // SE 0, M 0, TVer 0
        b[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        b[4] = if self.becn { 0x40 } else { 0 };
        b[5..8].copy_from_slice(&self.dqp.to_be_bytes()[1..]);
        b[8] = if self.ack_req { 0x80 } else { 0 };
        b[9..12].copy_from_slice(&self.psn.to_be_bytes()[1..]);
    }

    /// Read from a UDP payload; None if short.
    #[inline]
    pub fn read(b: &[u8]) -> Option<Bth> {
        let b = b.get(..BTH_LEN)?;
        Some(Bth {
            opcode: b[0],
            pad: (b[1] >> 4) & 3,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            becn: b[4] & 0x40 != 0,
            dqp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
            ack_req: b[8] & 0x80 != 0,
            psn: u32::from_be_bytes([0, b[9], b[10], b[11]]),
        })
    }
}

/// How a notification point marks its CNPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CnpMark {
    /// DSCP of the CNP (ECN is always Not-ECT).
    pub dscp: u8,
    /// PCP of the CNP when the data it answers was 802.1Q-tagged (same VID).
    pub pcp: u8,
}

/// Build into `out` the CNP answering the RoCEv2 frame `rx` (no FCS): MACs and IPs
/// swapped, the same VLAN with `mark.pcp`, DSCP `mark.dscp`, Not-ECT, UDP from the data's
/// source port (same ECMP path back, in reverse) to 4791, BTH opcode 0x81 naming the
/// data's destination QP, BECN set, PSN 0. Returns the frame's length (0 if `rx` is not
/// an IPv4/UDP/BTH frame or `out` is too short).
pub fn build_cnp(rx: &[u8], out: &mut [u8], mark: CnpMark) -> usize {
    let tagged = rx.get(12..14) == Some(&crate::wire::ETHERTYPE_VLAN.to_be_bytes());
    let l2 = if tagged { 18 } else { 14 };
    let Some(ihl) = rx.get(l2).map(|b| usize::from(b & 0x0f) * 4) else { return 0 };
    let udp = l2 + ihl;
    let (Some(rip), Some(rudp), Some(rbth)) =
        (rx.get(l2..udp), rx.get(udp..udp + 8), rx.get(udp + 8..udp + 8 + BTH_LEN))
    else {
        return 0;
    };
    if ihl < 20 || rip[9] != 17 {
        return 0;
    }
    let len = l2 + CNP_IP_LEN;
    let Some(f) = out.get_mut(..len) else { return 0 };
    f[0..6].copy_from_slice(&rx[6..12]);
    f[6..12].copy_from_slice(&rx[0..6]);
    f[12..l2].copy_from_slice(&rx[12..l2]);
    if tagged {
        f[14] = (f[14] & 0x1f) | (mark.pcp << 5);
    }
    let ip = &mut f[l2..];
    ip[0] = 0x45;
    ip[1] = mark.dscp << 2;
    ip[2..4].copy_from_slice(&(CNP_IP_LEN as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&rip[4..6]);
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&rip[16..20]);
    ip[16..20].copy_from_slice(&rip[12..16]);
    let c = crate::wire::ipv4_checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip[20..22].copy_from_slice(&rudp[0..2]);
    ip[22..24].copy_from_slice(&UDP_PORT.to_be_bytes());
    ip[24..26].copy_from_slice(&((CNP_IP_LEN - 20) as u16).to_be_bytes());
    ip[26..28].fill(0);
    let dqp = Bth::read(rbth).map_or(0, |b| b.dqp);
    Bth { opcode: OPCODE_CNP, pad: 0, pkey: PKEY_DEFAULT, becn: true, dqp, ack_req: false, psn: 0 }
        .write(&mut ip[28..]);
    ip[28 + BTH_LEN..28 + BTH_LEN + CNP_PAD].fill(0);
    seal(&mut ip[..CNP_IP_LEN]);
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CNP captured from a ConnectX-4 Lx (scapy, test/contrib/roce.uts): ICRC 82 fd 00 2a.
    const CX4_CNP: &str = "e41d2dab2bc27cfe90643b32080045c2003c718c400040119161\
                           0a0011010a001201000012b7002800008100ffff40000118\
                           000000000000000000000000000000000000000082fd002a";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn icrc_of_a_connectx4_cnp() {
        let f = hex(CX4_CNP);
        assert_eq!(f.len(), 74);
        let ip = &f[14..];
        assert_eq!(icrc(&ip[..ip.len() - 4]), Some(0x2a00_fd82));
        assert!(icrc_ok(ip));
        let b = Bth::read(&ip[28..]).unwrap();
        assert_eq!((b.opcode, b.pkey, b.becn, b.dqp, b.psn), (OPCODE_CNP, 0xffff, true, 0x118, 0));
        // The masked fields do not change it; any other does.
        let mut m = ip.to_vec();
        (m[1], m[8], m[10], m[26], m[32]) = (0x03, 1, 0, 0x12, 0);
        assert!(icrc_ok(&m));
        m[40] = 1;
        assert!(!icrc_ok(&m));
        let mut z = ip.to_vec();
        assert!(seal(&mut z) && z == ip, "seal writes the captured ICRC back");
    }

    #[test]
    fn cnp_answers_the_data_frame() {
        // A tagged RoCEv2 frame: VID 100 PCP 3, 10.0.0.1:50000 → 10.0.1.1:4791, QP 0x10005.
        let mut rx = vec![0u8; 18 + 20 + 8 + BTH_LEN + 16 + ICRC_LEN];
        rx[0..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        rx[12..18].copy_from_slice(&[0x81, 0, 0x60, 100, 0x08, 0]);
        let ip_len = (rx.len() - 18) as u16;
        rx[18] = 0x45;
        rx[19] = (26 << 2) | 3;
        rx[20..22].copy_from_slice(&ip_len.to_be_bytes());
        rx[26] = 64;
        rx[27] = 17;
        rx[30..34].copy_from_slice(&[10, 0, 0, 1]);
        rx[34..38].copy_from_slice(&[10, 0, 1, 1]);
        rx[38..40].copy_from_slice(&50000u16.to_be_bytes());
        rx[40..42].copy_from_slice(&UDP_PORT.to_be_bytes());
        Bth {
            opcode: OPCODE_RC_SEND_ONLY,
            pad: 0,
            pkey: PKEY_DEFAULT,
            becn: false,
            dqp: 0x10005,
            ack_req: false,
            psn: 7,
        }
        .write(&mut rx[46..]);
        let mut out = [0u8; 128];
        let n = build_cnp(&rx, &mut out, CnpMark { dscp: 48, pcp: 6 });
        assert_eq!(n, 18 + CNP_IP_LEN);
        let c = &out[..n];
        assert_eq!(&c[0..12], &[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]);
        let p = crate::wire::parse(c).unwrap();
        assert_eq!(p.vlan, Some(crate::wire::VlanTag { pcp: 6, dei: false, vid: 100 }));
        assert_eq!((p.dscp, p.ecn), (Some(48), Some(0)));
        assert!(crate::wire::Ipv4Packet::new_checked(&c[18..]).unwrap().verify_checksum());
        assert_eq!(&c[30..38], &[10, 0, 1, 1, 10, 0, 0, 1]);
        assert_eq!(u16::from_be_bytes([c[38], c[39]]), 50000);
        assert_eq!(u16::from_be_bytes([c[40], c[41]]), UDP_PORT);
        let b = Bth::read(&c[46..]).unwrap();
        assert_eq!((b.opcode, b.dqp, b.becn, b.psn), (OPCODE_CNP, 0x10005, true, 0));
        assert!(icrc_ok(&c[18..]));
        assert_eq!(build_cnp(&rx[..40], &mut out, CnpMark { dscp: 48, pcp: 6 }), 0, "runt");
        assert_eq!(build_cnp(&rx, &mut [0u8; 40], CnpMark { dscp: 48, pcp: 6 }), 0, "no room");
    }
}
