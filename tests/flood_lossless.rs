//! `[switch] flood_lossless = false`: a lossless-class frame to an unknown unicast
//! destination is dropped and counted (`drops.lossless_unknown_unicast`) instead of flooded
//! (flooding lossless traffic in a looped fabric is a known PFC-deadlock source); lossy
//! frames still flood, and once the destination is learned lossless frames go to it.
//! One worker reads each port's file a 32-frame burst at a time, ports in order, so the
//! destination is learned (from Ethernet8's file) between Ethernet0's first and second burst.

mod common;
use common::*;

#[test]
fn lossless_unknown_unicast_is_dropped_not_flooded() {
    let d = TestDir::new("floodll");
    let (a, x) = (mac(0xa), mac(0x58));
    let mut in0: Vec<Vec<u8>> = Vec::new();
    in0.extend((0..5).map(|i| vlan_frame(x, a, 3, 1, 0x33, i, 64))); // lossless, X unknown
    in0.extend((0..5).map(|i| vlan_frame(x, a, 1, 1, 0x11, i, 64))); // lossy, X unknown
    in0.extend((0..22).map(|_| eth_frame(x, a, 0, 40))); // runts: fill the first burst
    in0.extend((0..5).map(|i| vlan_frame(x, a, 3, 1, 0x3b, i, 64))); // lossless, X known
    write_pcap(&d.join("in0.pcap"), &in0);
    write_pcap(&d.join("in1.pcap"), &[]);
    write_pcap(&d.join("in2.pcap"), &[eth_frame(BCAST, x, 9, 64)]);
    let dir = d.path.display();
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1").toml("[switch]\nflood_lossless = false\nburst_size = 32");
    for i in 0..3 {
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
    let e0 = port(&j, "Ethernet0");
    assert_eq!(e0["drops"]["lossless_unknown_unicast"], 5, "{}", e0["drops"]);
    let tags = |i: usize, tag: u8| {
        read_pcap(&d.join(&format!("out{i}.pcap")))
            .iter()
            .filter(|f| f.len() > 20 && f[18] == tag && f[0..6] == x)
            .count()
    };
    assert_eq!((tags(1, 0x33), tags(2, 0x33)), (0, 0), "unknown lossless flooded");
    assert_eq!((tags(1, 0x11), tags(2, 0x11)), (5, 5), "lossy unknown unicast still floods");
    assert_eq!((tags(1, 0x3b), tags(2, 0x3b)), (0, 5), "known lossless goes to its port");
    assert_conserved(&j);
}
