//! Arbitrary bytes through the LLDP/DCBX decoder and the agent that keeps a port's peer:
//! none may panic; whatever decodes re-encodes to a frame that decodes to the same value
//! (less the TLVs it skipped). An odd first byte puts the LLDP header in front of the rest,
//! so the fuzzer spends its time in the TLVs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pfcswitch::wire::{Lldpdu, MacAddr};

fuzz_target!(|data: &[u8]| {
    let frame: Vec<u8> = match data.split_first() {
        Some((b, rest)) if b & 1 == 1 => {
            let mut f = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 2, 0, 0, 0, 0, 9, 0x88, 0xcc];
            f.extend_from_slice(rest);
            f
        }
        _ => data.to_vec(),
    };
    if let Ok(d) = Lldpdu::parse(&frame) {
        let again = Lldpdu::parse(&d.to_bytes(MacAddr([2, 0, 0, 0, 0, 1]))).expect("our own frame parses");
        assert_eq!(again, Lldpdu { skipped: 0, ..d.clone() });
        let _ = (d.chassis_text(), d.port_text(), pfcswitch::lldp::du_json(&d));
    }
    // The agent on the same bytes: a peer kept, compared, aged out.
    let local = Lldpdu { ttl: 120, ..Lldpdu::default() };
    let mut a = pfcswitch::lldp::Agent::new(vec![local], 30, 1000, 0);
    let _ = a.receive(0, &frame, 1);
    let _ = a.port_json(0, 2);
    let _ = a.expire(u64::MAX / 2);
});
