//! Kernel hosts on net_af_packet ports: `scripts/hosts.sh up 2` puts two hosts in network
//! namespaces behind veth pairs, the switch's ports are the root-side ends. Host 1 pings
//! host 2 through the switch; host 2 sends a PFC frame for priority 3 from a raw socket
//! (`scripts/send_pfc.py`, as a NIC would), and the switch pauses exactly that priority on
//! that port. Needs root; skipped otherwise.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn hosts_ping_through_the_switch_and_a_host_pfc_frame_pauses_its_priority() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("afp");
    let p = format!("t{}", std::process::id() % 100_000);
    let hosts = Hosts::up(&p, 2);
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a")).speed("10G"))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G"))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    let ping = sh(&format!("ip netns exec {p}h1 ping -c 5 -i 0.2 -W 2 198.18.0.2"));
    let ping_out = String::from_utf8_lossy(&ping.stdout).into_owned();
    let pfc = Command::new("ip")
        .args(["netns", "exec", &format!("{p}h2"), "python3", &format!("{ROOT}/scripts/send_pfc.py")])
        .args([&format!("{p}v2b"), "3", "65535"])
        .output()
        .unwrap();
    assert!(pfc.status.success(), "send_pfc.py: {}", show(&pfc));
    std::thread::sleep(Duration::from_millis(300));
    let log = sw.stop();
    drop(hosts);
    assert!(ping_out.contains(" 0% packet loss"), "{ping_out}\n{log}");
    let j = read_json(&json);
    let e4 = port(&j, "Ethernet4");
    assert_eq!(e4["pfc"]["rx_pause"], serde_json::json!([0, 0, 0, 1, 0, 0, 0, 0]), "{}", e4["pfc"]);
    assert_eq!(e4["pfc"]["rx_on2off"], serde_json::json!([0, 0, 0, 1, 0, 0, 0, 0]));
    assert_eq!(port(&j, "Ethernet0")["pfc"]["rx_on2off"], serde_json::json!([0, 0, 0, 0, 0, 0, 0, 0]));
    assert_conserved(&j);
}
