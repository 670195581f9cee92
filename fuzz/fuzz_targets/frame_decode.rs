//! Arbitrary bytes through every decoder: none may panic, and whatever decodes as MAC
//! Control must re-encode to a frame that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pfcswitch::classify::QosMaps;
use pfcswitch::wire::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = parse(data) {
        let _ = QosMaps::default().classify(&p);
    }
    if let Ok(m) = MacControl::parse(data) {
        let b = m.to_bytes(MacAddr([2, 0, 0, 0, 0, 1]));
        assert_eq!(MacControl::parse(&b), Ok(m));
    }
    let e = EthernetFrame::new_unchecked(data);
    let _ = (
        e.dst_addr(),
        e.src_addr(),
        e.ethertype(),
        e.vlan_tag(),
        e.payload().len(),
    );
    let _ = EthernetFrame::new_checked(data).map(|e| e.vlan_tag());
    for off in [0usize, 14, 18, 22] {
        let l3 = data.get(off..).unwrap_or(&[]);
        let v4 = Ipv4Packet::new_unchecked(l3);
        let _ = (v4.dscp(), v4.ecn(), v4.header_len(), v4.verify_checksum());
        let _ = Ipv4Packet::new_checked(l3).map(|p| p.dscp());
        let v6 = Ipv6Packet::new_unchecked(l3);
        let _ = (v6.dscp(), v6.ecn());
        let _ = Ipv6Packet::new_checked(l3).map(|p| p.ecn());
    }
    let f = PfcFrame::new_unchecked(data);
    let _ = (
        f.opcode(),
        f.class_enable_vector(),
        f.pause_time(),
        (0..9).fold(0u16, |a, i| a.wrapping_add(f.time(i))),
    );
    let _ = PfcFrame::new_checked(data).map(|f| f.opcode());
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = s.parse::<MacAddr>();
    }
});
