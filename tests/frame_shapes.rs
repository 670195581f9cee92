//! Every frame shape is accounted for honestly: on an MTU-1500 port, frames up to
//! MTU + 18 (Ethernet + 802.1Q) are forwarded whole; 1519 and 1600 B frames are dropped as
//! `drops.oversize`; 9000 B frames, which net_pcap delivers as chained mbufs, are dropped
//! as `drops.multi_segment` (the switch handles single-segment frames only and requests no
//! RX scatter). `rx_bytes` counts whole frames; conservation holds.

mod common;
use common::*;

#[test]
fn oversize_and_chained_frames_are_dropped_and_counted() {
    let d = TestDir::new("shapes");
    let (a, b) = (mac(0xa), mac(0xb));
    let sizes = [1518usize, 1518, 1519, 1600, 1600, 1519, 9000, 9000, 64];
    let frames: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| eth_frame(b, a, i as u8, n)).collect();
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = pcap_pair(&d, "10G")
        .edit_port("Ethernet0", |p| p.mtu(1500))
        .edit_port("Ethernet4", |p| p.mtu(1500).set("tx_enable", "true"))
        .one_worker()
        .write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "1.5");
    let e0 = port(&j, "Ethernet0");
    assert_eq!(e0["rx_packets"], sizes.len() as u64, "{e0}");
    assert_eq!(e0["rx_bytes"], sizes.iter().sum::<usize>() as u64, "rx_bytes counts whole frames: {e0}");
    assert_eq!(e0["drops"]["oversize"], 4, "{}", e0["drops"]);
    assert_eq!(e0["drops"]["multi_segment"], 2, "{}", e0["drops"]);
    let got = read_pcap(&d.join("out1.pcap"));
    let lens: Vec<usize> = got.iter().map(|f| f.len()).collect();
    assert_eq!(lens, vec![1518, 1518, 64], "forwarded frames");
    assert_eq!(got[0], frames[0]);
    assert_conserved(&j);
}
