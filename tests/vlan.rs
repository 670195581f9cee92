//! 802.1Q VLANs on real EAL (net_pcap ports, one worker): two VLANs on four ports.
//!
//! Vlan10: Ethernet0 and Ethernet4 untagged. Vlan20: Ethernet8 untagged, Ethernet12
//! tagged. Every port trusts PCP. One worker reads each port's file a 32-frame burst at a
//! time, ports in order: round 1 is each file's first burst (padded with runts, which are
//! dropped before anything else looks at them), round 2 its second, so everything round 1
//! learns is known in round 2. A PFC frame is never tagged on the way out (the port builds
//! it) and a tagged one received is not obeyed.

mod common;
use common::*;

/// The frame's payload tag: its last byte (both frame helpers fill with it; untagging a
/// 64-byte frame leaves 60 bytes, no padding).
fn tag_of(f: &[u8]) -> u8 {
    *f.last().unwrap()
}

/// `(vid, pcp)` of an 802.1Q-tagged frame.
fn vlan_of(f: &[u8]) -> Option<(u16, u8)> {
    (f.len() >= 16 && f[12..14] == [0x81, 0x00]).then(|| (u16::from_be_bytes([f[14], f[15]]) & 0xfff, f[14] >> 5))
}

/// Round-1 frames then runts up to a full burst, then the round-2 frames.
fn rounds(r1: Vec<Vec<u8>>, r2: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut v = r1;
    assert!(v.len() <= 32);
    while v.len() < 32 {
        v.push(eth_frame(mac(0xee), mac(0xef), 0, 40));
    }
    v.extend(r2);
    v
}

#[test]
fn two_vlans_on_four_ports() {
    let d = TestDir::new("vlan");
    let (a, b, m, x) = (mac(0xa), mac(0xb), mac(0x4d), mac(0x58));
    let mut s_tagged = vlan_frame(BCAST, a, 1, 10, 0x07, 0, 64);
    s_tagged[12..14].copy_from_slice(&[0x88, 0xa8]);
    let pfc = pfc_frame(m, 0b1000, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
    let tagged_pfc = [&pfc[..12], &[0x81, 0x00, 0x60, 20], &pfc[12..]].concat();
    // Ethernet0 (Vlan10 untagged).
    let in0 = rounds(
        vec![
            eth_frame(BCAST, a, 0x01, 64),            // broadcast: Ethernet4 only
            eth_frame(x, a, 0x02, 64),                // unknown unicast: Ethernet4 only
            vlan_frame(BCAST, a, 1, 20, 0x03, 0, 64), // Vlan20 on a non-member: dropped
            vlan_frame(BCAST, a, 1, 10, 0x04, 0, 64), // its own VLAN, tagged: accepted, leaves untagged
            s_tagged,                                 // 802.1ad S-tag: dropped
        ],
        vec![
            eth_frame(m, a, 0x05, 64), // M as learned in Vlan10: Ethernet4 only
            eth_frame(b, a, 0x06, 64), // B is known in Vlan20 only: flooded in Vlan10
        ],
    );
    // Ethernet4 (Vlan10 untagged): M learned here in Vlan10.
    let in1 = rounds(vec![eth_frame(BCAST, m, 0x11, 64)], vec![]);
    // Ethernet8 (Vlan20 untagged).
    let in2 = rounds(
        vec![
            eth_frame(BCAST, b, 0x21, 64),           // untagged, TC 0: Ethernet12 tagged PCP 0
            vlan_frame(BCAST, b, 5, 0, 0x22, 0, 64), // priority-tagged PCP 5: Vlan20, TC 5
        ],
        vec![vlan_frame(m, b, 6, 0, 0x25, 0, 64)], // M as learned in Vlan20: Ethernet12 only
    );
    // Ethernet12 (Vlan20 tagged): M learned here in Vlan20.
    let in3 = rounds(
        vec![
            vlan_frame(BCAST, m, 6, 20, 0x31, 0, 64), // to Ethernet8, untagged
            vlan_frame(BCAST, m, 1, 10, 0x32, 0, 64), // Vlan10: not a member, dropped
            eth_frame(BCAST, m, 0x33, 64),            // untagged, no untagged VLAN: dropped
            tagged_pfc,                               // a tagged PFC frame: not obeyed, not forwarded
        ],
        vec![],
    );
    for (i, f) in [in0, in1, in2, in3].iter().enumerate() {
        write_pcap(&d.join(&format!("in{i}.pcap")), f);
    }
    let dir = d.path.display();
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1").toml(
        r#"[switch]
burst_size = 32

[vlan.Vlan10]
[vlan.Vlan20]
vlanid = 20

[vlan_member]
"Vlan10|Ethernet0" = { tagging_mode = "untagged" }
"Vlan10|Ethernet4" = { tagging_mode = "untagged" }
"Vlan20|Ethernet8" = { tagging_mode = "untagged" }
"Vlan20|Ethernet12" = { tagging_mode = "tagged" }
"#,
    );
    for i in 0..4 {
        cfg = cfg.port(
            Port::new(
                &format!("Ethernet{}", 4 * i),
                &format!("net_pcap{i},rx_pcap={dir}/in{i}.pcap,tx_pcap={dir}/out{i}.pcap"),
            )
            .speed("10G")
            .set("trust", "\"pcp\""),
        );
    }
    let cfg = cfg.one_worker().write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "1.5");
    let out: Vec<Vec<Vec<u8>>> = (0..4).map(|i| read_pcap(&d.join(&format!("out{i}.pcap")))).collect();
    let tags = |i: usize| {
        let mut t: Vec<u8> = out[i].iter().map(|f| tag_of(f)).collect();
        t.sort();
        t
    };
    assert_eq!(tags(0), [0x11], "Ethernet0 gets Vlan10's floods only");
    assert_eq!(tags(1), [0x01, 0x02, 0x04, 0x05, 0x06], "Ethernet4: Vlan10 only, M's own frame");
    assert_eq!(tags(2), [0x31], "Ethernet8: Vlan20 only; M's unicast went to Ethernet12");
    assert_eq!(tags(3), [0x21, 0x22, 0x25], "Ethernet12: Vlan20 only");
    // Untagged members send untagged; the tagged member sends VID 20 with PCP = TC.
    for (i, o) in out.iter().enumerate().take(3) {
        for f in o {
            assert_eq!(vlan_of(f), None, "Ethernet{} sent a tagged frame {:x?}", 4 * i, &f[..18]);
            assert!(f.len() >= 60, "runt sent: {} bytes", f.len());
        }
    }
    let vl: Vec<(u8, Option<(u16, u8)>)> = out[3].iter().map(|f| (tag_of(f), vlan_of(f))).collect();
    let want = [(0x21, Some((20, 0))), (0x22, Some((20, 5))), (0x25, Some((20, 6)))];
    for w in want {
        assert!(vl.contains(&w), "Ethernet12 sent {vl:x?}, want {w:x?}");
    }
    // The payload behind the inserted tag is intact: EtherType 0x88b5 at 16.
    assert!(out[3].iter().all(|f| f[16..18] == [0x88, 0xb5] && f.len() == 68 || f.len() == 64));
    let drops = |p: &str| port(&j, p)["drops"]["vlan_not_member"].as_u64().unwrap();
    assert_eq!(
        (drops("Ethernet0"), drops("Ethernet4"), drops("Ethernet8"), drops("Ethernet12")),
        (2, 0, 0, 2),
        "vlan_not_member"
    );
    let e12 = port(&j, "Ethernet12");
    assert_eq!(e12["drops"]["bad_mac_control"], 1, "a tagged PFC frame is not MAC control: {}", e12["drops"]);
    assert_conserved(&j);
}
