//! Byte-exact MAC Control vectors written from 802.1Qbb / 802.3 Annex 31B, round trips,
//! every rejection, and `parse` on the frame shapes the fast path sees.

use pfcswitch::wire::*;

const SRC: MacAddr = MacAddr([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]);

/// PFC pausing priority 3 for 0xFFFF quanta, from src 00:11:22:33:44:55.
#[rustfmt::skip]
const PFC_P3_FFFF: [u8; 60] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x01,             // dst 01-80-C2-00-00-01
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55,             // src
    0x88, 0x08,                                     // EtherType MAC Control
    0x01, 0x01,                                     // opcode PFC
    0x00, 0x08,                                     // class-enable vector: priority 3
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00,             // time[0..3]
    0xff, 0xff,                                     // time[3] = 0xFFFF
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // time[4..8]
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,          // 26 bytes of zero padding
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// 802.3x PAUSE for 0x1234 quanta.
#[rustfmt::skip]
const PAUSE_1234: [u8; 60] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x01,
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
    0x88, 0x08,
    0x00, 0x01,                                     // opcode PAUSE
    0x12, 0x34,                                     // pause_time
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,       // 42 bytes of zero padding
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn pfc_vector_encode_decode() {
    assert_eq!(MacControl::pfc_pause(1 << 3, 0xffff).to_bytes(SRC), PFC_P3_FFFF);
    let mut out = [0xaau8; 60]; // emit must overwrite every byte, padding included
    MacControl::pfc_pause(1 << 3, 0xffff).emit(SRC, &mut out);
    assert_eq!(out, PFC_P3_FFFF);
    assert_eq!(
        MacControl::parse(&PFC_P3_FFFF),
        Ok(MacControl::Pfc { class_enable: 0x08, quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0] })
    );
    let v = PfcFrame::new_checked(&PFC_P3_FFFF[..]).unwrap();
    assert_eq!((v.opcode(), v.class_enable_vector(), v.time(3)), (OPCODE_PFC, 8, 0xffff));
    // With a 4-byte FCS still attached, decoding ignores it.
    let mut with_fcs = [0u8; 64];
    with_fcs[..60].copy_from_slice(&PFC_P3_FFFF);
    with_fcs[60..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    assert!(MacControl::parse(&with_fcs).is_ok());
}

#[test]
fn pause_vector_encode_decode() {
    assert_eq!(MacControl::Pause { quanta: 0x1234 }.to_bytes(SRC), PAUSE_1234);
    assert_eq!(MacControl::parse(&PAUSE_1234), Ok(MacControl::Pause { quanta: 0x1234 }));
    assert_eq!(PfcFrame::new_unchecked(&PAUSE_1234[..]).pause_time(), 0x1234);
}

#[test]
fn resume_and_multi_class_round_trip() {
    let cases = [
        MacControl::pfc_resume(0b0001_1000),
        MacControl::Pfc { class_enable: 0xff, quanta: [1, 2, 3, 4, 5, 6, 7, 0xffff] },
        MacControl::Pfc { class_enable: 0x01, quanta: [9, 0, 0, 0, 0, 0, 0, 0x77] },
        MacControl::Pause { quanta: 0 },
        MacControl::Pause { quanta: 0xffff },
    ];
    for m in cases {
        let b = m.to_bytes(SRC);
        assert_eq!(b.len(), MIN_FRAME_LEN);
        assert_eq!(&b[..6], &MacAddr::PFC_DST.0);
        assert_eq!(&b[6..12], &SRC.0);
        assert_eq!(MacControl::parse(&b), Ok(m));
        let p = parse(&b).unwrap();
        assert!(p.is_mac_control() && p.dst.is_link_local_reserved());
    }
}

#[test]
fn mac_control_rejections() {
    // Too short: 59 bytes.
    assert_eq!(MacControl::parse(&PFC_P3_FFFF[..59]), Err(MacControlError::TooShort { len: 59 }));
    assert_eq!(MacControl::parse(&[]), Err(MacControlError::TooShort { len: 0 }));
    // Wrong EtherType.
    let mut f = PFC_P3_FFFF;
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    assert_eq!(MacControl::parse(&f), Err(MacControlError::NotMacControl { ethertype: 0x0800 }));
    // Tagged MAC control is not MAC control.
    f[12..14].copy_from_slice(&[0x81, 0x00]);
    assert_eq!(MacControl::parse(&f), Err(MacControlError::NotMacControl { ethertype: 0x8100 }));
    // Unknown opcodes (GATE 0x0002, 0x0000, 0x0102).
    for op in [0x0002u16, 0x0000, 0x0102, 0xffff] {
        let mut f = PFC_P3_FFFF;
        f[14..16].copy_from_slice(&op.to_be_bytes());
        assert_eq!(MacControl::parse(&f), Err(MacControlError::UnknownOpcode(op)));
    }
    // Reserved vector bits (the high octet, 802.3 Annex 31D): ignored on receipt, the valid
    // bits obeyed.
    for hi in [0x01u8, 0x80, 0xff] {
        let mut f = PFC_P3_FFFF;
        f[16] = hi;
        assert_eq!(MacControl::parse(&f), MacControl::parse(&PFC_P3_FFFF), "high octet {hi:#04x}");
    }
    // A PAUSE frame's time may have its high byte set: no vector check for opcode 1.
    let mut f = PAUSE_1234;
    f[16] = 0xff;
    assert_eq!(MacControl::parse(&f), Ok(MacControl::Pause { quanta: 0xff34 }));
    assert!(PfcFrame::new_checked(&PFC_P3_FFFF[..40]).is_err());
}

fn frame(len: usize, head: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..head.len()].copy_from_slice(head);
    f
}

const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const SRCB: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

fn eth(ethertype: u16) -> Vec<u8> {
    [&DST[..], &SRCB[..], &ethertype.to_be_bytes()[..]].concat()
}

fn tagged(pcp: u8, vid: u16, inner: u16) -> Vec<u8> {
    let tci = (u16::from(pcp) << 13) | vid;
    [&DST[..], &SRCB[..], &[0x81, 0x00][..], &tci.to_be_bytes()[..], &inner.to_be_bytes()[..]].concat()
}

#[test]
fn parse_untagged_and_tagged_ip() {
    // Untagged IPv4, DSCP 46 (EF), ECN CE.
    let h = [eth(ETHERTYPE_IPV4), vec![0x45, (46 << 2) | 3]].concat();
    let p = parse(&frame(60, &h)).unwrap();
    assert_eq!(p.dst, MacAddr(DST));
    assert_eq!(p.src, MacAddr(SRCB));
    assert_eq!((p.vlan, p.ethertype, p.l3_offset, p.dscp, p.ecn), (None, 0x0800, 14, Some(46), Some(3)));
    // Tagged (PCP 3, VID 100) IPv4 DSCP 3 ECT(0).
    let h = [tagged(3, 100, ETHERTYPE_IPV4), vec![0x45, (3 << 2) | 2]].concat();
    let p = parse(&frame(64, &h)).unwrap();
    assert_eq!(p.vlan, Some(VlanTag { pcp: 3, dei: false, vid: 100 }));
    assert_eq!((p.ethertype, p.l3_offset, p.dscp, p.ecn), (0x0800, 18, Some(3), Some(2)));
    // Untagged IPv6, traffic class 0xb8 (DSCP 46, ECN 0).
    let h = [eth(ETHERTYPE_IPV6), vec![0x6b, 0x80]].concat();
    let p = parse(&frame(60, &h)).unwrap();
    assert_eq!((p.ethertype, p.l3_offset, p.dscp, p.ecn), (0x86dd, 14, Some(46), Some(0)));
    // Tagged IPv6 DSCP 26 ECN 1: TC = 0x69.
    let h = [tagged(5, 7, ETHERTYPE_IPV6), vec![0x66, 0x90]].concat();
    let p = parse(&frame(78, &h)).unwrap();
    assert_eq!((p.vlan.map(|v| v.pcp), p.l3_offset, p.dscp, p.ecn), (Some(5), 18, Some(26), Some(1)));
    // IPv4 with options (IHL 15) fully present.
    let h = [eth(ETHERTYPE_IPV4), vec![0x4f, 8 << 2]].concat();
    assert_eq!(parse(&frame(14 + 60, &h)).unwrap().dscp, Some(8));
}

#[test]
fn parse_non_ip() {
    for et in [0x0806u16, 0x88cc, 0x8808, 0x0040 /* 802.3 length */] {
        let p = parse(&frame(60, &eth(et))).unwrap();
        assert_eq!((p.ethertype, p.dscp, p.ecn, p.vlan), (et, None, None, None));
        assert_eq!(p.is_mac_control(), et == 0x8808);
    }
    let p = parse(&frame(60, &tagged(6, 4095, 0x0806))).unwrap();
    assert_eq!((p.vlan, p.ethertype, p.dscp), (Some(VlanTag { pcp: 6, dei: false, vid: 4095 }), 0x0806, None));
}

#[test]
fn parse_runts_and_truncated_headers() {
    for len in [0usize, 1, 13, 14, 59] {
        assert_eq!(parse(&frame(len, &[])), Err(WireError::Runt { len }));
    }
    // IPv4 with IHL 15 (60-byte header) in a 60-byte frame: truncated.
    let h = [eth(ETHERTYPE_IPV4), vec![0x4f, 0]].concat();
    assert_eq!(parse(&frame(60, &h)), Err(WireError::Malformed(Header::Ipv4)));
    // Wrong IP version / IHL < 5.
    let h = [eth(ETHERTYPE_IPV4), vec![0x65, 0]].concat();
    assert_eq!(parse(&frame(60, &h)), Err(WireError::Malformed(Header::Ipv4)));
    let h = [eth(ETHERTYPE_IPV4), vec![0x44, 0]].concat();
    assert_eq!(parse(&frame(60, &h)), Err(WireError::Malformed(Header::Ipv4)));
    let h = [eth(ETHERTYPE_IPV6), vec![0x45, 0]].concat();
    assert_eq!(parse(&frame(60, &h)), Err(WireError::Malformed(Header::Ipv6)));
    // QinQ + IPv6 needs 62 bytes.
    let h = [&DST[..], &SRCB[..], &[0x88, 0xa8, 0x20, 0x01, 0x81, 0x00, 0x00, 0x02, 0x86, 0xdd, 0x60][..]].concat();
    assert_eq!(parse(&frame(61, &h)), Err(WireError::Malformed(Header::Ipv6)));
    let p = parse(&frame(62, &h)).unwrap();
    assert_eq!((p.vlan.map(|v| (v.pcp, v.vid)), p.l3_offset, p.ethertype), (Some((1, 1)), 22, ETHERTYPE_IPV6));
    // Ethernet view on a short buffer.
    assert_eq!(EthernetFrame::new_checked(&[0u8; 10][..]).err(), Some(WireError::TooShort { need: 14, have: 10 }));
}

#[test]
fn every_decoder_is_total_on_prefixes() {
    // Every prefix of valid frames, through every decoder: no panic.
    let h = [tagged(3, 1, ETHERTYPE_IPV4), vec![0x45, 0xb8]].concat();
    let long = frame(80, &h);
    for buf in [&long[..], &PFC_P3_FFFF[..], &PAUSE_1234[..]] {
        for n in 0..=buf.len() {
            let b = &buf[..n];
            let _ = parse(b);
            let _ = MacControl::parse(b);
            let e = EthernetFrame::new_unchecked(b);
            let _ = (e.dst_addr(), e.src_addr(), e.ethertype(), e.vlan_tag(), e.payload());
            let v4 = Ipv4Packet::new_unchecked(b);
            let _ = (v4.dscp(), v4.ecn(), v4.header_len(), v4.verify_checksum(), Ipv4Packet::new_checked(b).is_ok());
            let v6 = Ipv6Packet::new_unchecked(b);
            let _ = (v6.dscp(), v6.ecn(), Ipv6Packet::new_checked(b).is_ok());
            let p = PfcFrame::new_unchecked(b);
            let _ = (p.opcode(), p.class_enable_vector(), p.time(7), p.pause_time());
        }
    }
}
