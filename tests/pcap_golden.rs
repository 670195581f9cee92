//! Golden files on net_pcap: three hosts on three ports. First frames flood, later unicast
//! goes only to the learned port, broadcast and multicast flood, a PFC frame
//! (01-80-C2-00-00-01) and a 40-byte runt are not forwarded. Output pcaps are compared
//! frame by frame with the expected ones.

mod common;
use common::*;

#[test]
fn learning_bridge_golden_pcaps() {
    let d = TestDir::new("pcap");
    let (a, b, c) = (mac(0xa), mac(0xb), mac(0xc));
    let mcast = [0x01, 0x00, 0x5e, 0x00, 0x00, 0x07];
    // The worker polls port 0, then 1, then 2, each reading its whole (small) file in one
    // burst, so hosts on lower ports are learned before higher ports' frames are switched.
    let a_bcast = eth_frame(BCAST, a, 1, 64);
    let a_to_b = eth_frame(b, a, 2, 100); // B unknown yet: flooded
    let a_pfc = pfc_frame(a, 0x08, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
    let a_runt = eth_frame(b, a, 3, 40);
    let b_to_a = eth_frame(a, b, 4, 64); // A known on port 0: unicast
    let b_bcast = eth_frame(BCAST, b, 5, 128);
    let c_to_a = eth_frame(a, c, 6, 64);
    let c_to_b = eth_frame(b, c, 7, 1514);
    let c_mcast = eth_frame(mcast, c, 8, 64);
    write_pcap(&d.join("in0.pcap"), &[a_bcast.clone(), a_to_b.clone(), a_pfc, a_runt]);
    write_pcap(&d.join("in1.pcap"), &[b_to_a.clone(), b_bcast.clone()]);
    write_pcap(&d.join("in2.pcap"), &[c_to_a.clone(), c_to_b.clone(), c_mcast.clone()]);

    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1");
    for i in 0..3 {
        let dir = d.path.display();
        let devargs = format!("net_pcap{i},rx_pcap={dir}/in{i}.pcap,tx_pcap={dir}/out{i}.pcap");
        cfg = cfg.port(
            Port::new(&format!("Ethernet{}", i * 4), &devargs).speed("10G").set("cable_length", "\"5m\"").mtu(1514),
        );
    }
    let cfg_path = cfg.one_worker().write(&d.join("pcap.toml"));
    let json = d.join("stats.json");
    let out = run_switch(&[
        "run",
        "--config",
        cfg_path.to_str().unwrap(),
        "--duration",
        "1.5",
        "--stats-json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", show(&out));

    let expect0 = vec![b_to_a, b_bcast.clone(), c_to_a, c_mcast.clone()];
    let expect1 = vec![a_bcast.clone(), a_to_b.clone(), c_to_b, c_mcast];
    let expect2 = vec![a_bcast, a_to_b, b_bcast];
    for (i, expect) in [expect0, expect1, expect2].iter().enumerate() {
        let got = read_pcap(&d.join(&format!("out{i}.pcap")));
        assert_eq!(
            got.len(),
            expect.len(),
            "out{i}.pcap: {} frames, expected {}\n{}",
            got.len(),
            expect.len(),
            show(&out)
        );
        for (k, (g, e)) in got.iter().zip(expect.iter()).enumerate() {
            assert_eq!(g, e, "out{i}.pcap frame {k} differs (tags: got {}, expected {})", g[14], e[14]);
        }
    }
    let j = read_json(&json);
    let p0 = port(&j, "Ethernet0");
    assert_eq!(p0["rx_packets"], 4);
    assert_eq!(p0["drops"]["runt"], 1);
    assert_eq!(p0["mac_control_rx"], 1);
    assert_eq!(port(&j, "Ethernet8")["rx_packets"], 3);
    assert_conserved(&j);
}
