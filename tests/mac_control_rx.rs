//! Which MAC-control frames the switch obeys, counted on net_pcap ports (every frame is
//! read once, in order). Ports are promiscuous, so a PFC or PAUSE frame addressed neither
//! to 01-80-C2-00-00-01 nor to the port's own MAC is dropped as `bad_mac_control`, never
//! obeyed; the reserved upper octet of the class-enable vector is ignored and the valid
//! bits obeyed (802.3 Annex 31D); on a port with PFC an 802.3x PAUSE is ignored and
//! counted (`rx_8023x_ignored`) unless `pause_8023x = "obey"`; a PFC frame that arrives on
//! RX queue 1, polled by another worker than queue 0, is obeyed all the same.

mod common;
use common::*;

const OWN: [u8; 6] = [0x02, 0, 0, 0, 0, 0xe0];
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x77];

fn to(dst: [u8; 6], mut f: Vec<u8>) -> Vec<u8> {
    f[0..6].copy_from_slice(&dst);
    f
}

fn pfc(u: &serde_json::Value, field: &str, prio: usize) -> u64 {
    u["pfc"][field][prio].as_u64().unwrap()
}

#[test]
fn mac_control_from_the_right_place_only() {
    let d = TestDir::new("macctl");
    let p3 = pfc_frame(PEER, 0x08, [0, 0, 0, 1000, 0, 0, 0, 0]);
    let mut p4_reserved = pfc_frame(PEER, 0x10, [0, 0, 0, 0, 1000, 0, 0, 0]);
    p4_reserved[16] = 0xff; // the reserved upper octet of the class-enable vector
    let frames = vec![
        p3.clone(),                                                  // obeyed
        p4_reserved,                                                 // obeyed: reserved bits ignored
        to([0x02, 0, 0, 0, 0, 0x99], p3.clone()),                    // someone else's: dropped
        to(OWN, p3.clone()),                                         // to our own MAC: obeyed
        to([0x02, 0, 0, 0, 0, 0x99], pause_8023x_frame(PEER, 1000)), // dropped
        pause_8023x_frame(PEER, 1000),                               // port with PFC: ignored, counted
    ];
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[pause_8023x_frame(PEER, 1000)]);
    // Ethernet4 has PFC too but obeys 802.3x as configured.
    let cfg = pcap_pair(&d, "10G")
        .edit_port("Ethernet0", |p| p.set("mac", &format!("\"{}\"", fmt_mac(OWN))))
        .edit_port("Ethernet4", |p| p.set("pause_8023x", "\"obey\""))
        .write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "1.5");
    let e0 = port(&j, "Ethernet0");
    assert_eq!(e0["drops"]["bad_mac_control"], 2, "{}", e0["drops"]);
    assert_eq!(e0["mac_control_rx"], 4, "{e0}");
    assert_eq!(pfc(e0, "rx_pause", 3), 2, "{}", e0["pfc"]);
    assert_eq!(pfc(e0, "rx_pause", 4), 1, "reserved bits must not void the frame: {}", e0["pfc"]);
    assert_eq!(e0["pfc"]["rx_8023x_pause"], 1);
    assert_eq!(e0["pfc"]["rx_8023x_ignored"], 1);
    assert_eq!(pfc(e0, "rx_on2off", 0), 0, "the ignored PAUSE stopped priority 0");
    let e4 = port(&j, "Ethernet4");
    assert_eq!(e4["pfc"]["rx_8023x_ignored"], 0);
    assert_eq!(pfc(e4, "rx_on2off", 0), 1, "pause_8023x = obey: {}", e4["pfc"]);
    assert_conserved(&j);
}

#[test]
fn pfc_on_any_rx_queue_is_obeyed() {
    let d = TestDir::new("pfcq1");
    let dir = d.path.display();
    write_pcap(&d.join("q0.pcap"), &[]);
    write_pcap(&d.join("q1.pcap"), &[pfc_frame(PEER, 0x08, [0, 0, 0, 1000, 0, 0, 0, 0])]);
    write_pcap(&d.join("in1.pcap"), &[]);
    // Ethernet0 has two RX queues (one pcap file each): worker 1 polls queue 0 and owns the
    // port's receive-side PFC state, worker 2 polls queue 1, where the frame arrives.
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1,2@1")
        .port(
            Port::new(
                "Ethernet0",
                &format!("net_pcap0,rx_pcap={dir}/q0.pcap,rx_pcap={dir}/q1.pcap,tx_pcap={dir}/out0.pcap"),
            )
            .speed("10G"),
        )
        .port(Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={dir}/in1.pcap,tx_pcap={dir}/out1.pcap")).speed("10G"))
        .worker(1, &["Ethernet0:0", "Ethernet4:0"], &["Ethernet0", "Ethernet4"])
        .worker(2, &["Ethernet0:1"], &[])
        .write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "1.5");
    let e0 = port(&j, "Ethernet0");
    assert_eq!(e0["mac_control_rx"], 1, "{e0}");
    assert_eq!(pfc(e0, "rx_pause", 3), 1, "the frame on queue 1 was not applied: {}", e0["pfc"]);
    assert_eq!(pfc(e0, "rx_on2off", 3), 1);
    assert_conserved(&j);
}

fn fmt_mac(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}
