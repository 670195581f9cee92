//! MAC moves, damped (docs/switching.md "MAC moves"). One MAC X sends from two
//! ports served by two workers at once (a loop, a flapping bond): Ethernet0 (worker 1) and
//! Ethernet4 (worker 2) both replay frames from X for the whole run (`infinite_rx`). Y, on
//! Ethernet8 (transmit off: X's frames to Y go no further), sends to X meanwhile, after
//! 100 000 runts (dropped) so that both workers run by then. X moves a few times, then is
//! held on one port: every frame to X leaves by that one port (without damping X changes
//! port every burst and Y's frames are split between both), the moves are counted (a
//! handful, not one per burst) and the hold too.

mod common;
use common::*;

const FROM_X: usize = 1000;
const TO_X: usize = 2000;

#[test]
fn a_mac_flapping_between_two_workers_ports_is_held_and_counted() {
    let d = TestDir::new("fdbmoves");
    let (x, y) = (mac(0x0a), mac(0x0b));
    let flap: Vec<Vec<u8>> = (0..FROM_X).map(|i| eth_frame(y, x, i as u8, 64)).collect();
    write_pcap(&d.join("in0.pcap"), &flap);
    write_pcap(&d.join("in1.pcap"), &flap);
    // Y announces itself, then a short run of runts (dropped, never learned) so X is
    // flapping by the time Y's frames to it come.
    let mut in2 = vec![eth_frame(BCAST, y, 1, 64)];
    in2.extend((0..100_000).map(|_| eth_frame(BCAST, y, 0, 40)));
    in2.extend((0..TO_X).map(|i| eth_frame(x, y, i as u8, 64)));
    write_pcap(&d.join("in2.pcap"), &in2);
    let dir = d.path.display();
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1,2@0");
    for i in 0..3 {
        cfg = cfg.port(
            Port::new(
                &format!("Ethernet{}", 4 * i),
                &format!(
                    "net_pcap{i},rx_pcap={dir}/in{i}.pcap,tx_pcap={dir}/out{i}.pcap{}",
                    if i < 2 { ",infinite_rx=1" } else { "" }
                ),
            )
            .speed("10G"),
        );
    }
    let cfg = cfg.edit_port("Ethernet8", |p| p.set("tx_enable", "false"));
    let cfg = cfg
        .worker(1, &["Ethernet0:0", "Ethernet8:0"], &["Ethernet0", "Ethernet8"])
        .worker(2, &["Ethernet4:0"], &["Ethernet4"])
        .write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "3");
    let to_x =
        |i: usize| read_pcap(&d.join(&format!("out{i}.pcap"))).iter().filter(|f| f[0..6] == x && f[6..12] == y).count();
    let (a, b) = (to_x(0), to_x(1));
    let fdb = &j["fdb"];
    eprintln!("fdb_moves: frames to X on Ethernet0 {a}, on Ethernet4 {b}; fdb {fdb}");
    // On a loaded machine worker 1 may not read all of Ethernet8's file within the run.
    assert!(a + b <= TO_X && a + b >= 100, "Y's frames to X: {a} + {b} of {TO_X} out");
    assert!(a == 0 || b == 0, "X changed port while held: {a} frames to X on Ethernet0, {b} on Ethernet4");
    let moves = fdb["mac_moves"].as_u64().expect("fdb.mac_moves in the stats JSON");
    assert!(fdb["mac_flaps"].as_u64().unwrap() >= 1, "X never held: {fdb}");
    // 5 moves allowed per 10 s; two workers may each count a move the other's store hid.
    let from_x: u64 = ["Ethernet0", "Ethernet4"].iter().map(|p| port(&j, p)["rx_packets"].as_u64().unwrap()).sum();
    assert!((1..=20).contains(&moves), "{moves} moves counted for {from_x} frames from X");
    assert!(from_x > 100_000, "X sent too little to flap: {from_x} frames");
    assert_eq!(fdb["learn_full"].as_u64(), Some(0));
    assert_conserved(&j);
}
