//! Jumbo frames and the kernel (docs/routing.md, "Jumbo frames to the kernel"): on a
//! 9000-MTU router interface the kernel representor carries what the port carries, so
//!
//! * an 8000-byte ping to the switch's own address (IPv4 and IPv6) gets its reply;
//! * an 8000-byte IPv4 packet without DF toward a 1500-MTU port is fragmented by the
//!   kernel and reassembled by the far host;
//! * with DF (and always in IPv6) the dataplane answers fragmentation needed / packet
//!   too big with MTU 1500;
//! * no punt is refused by a representor (`punt_undelivered` 0).
//!
//! Before, net_tap's fixed 1500 (DPDK 22.11) refused every punt over 1522 B: the jumbo
//! pings to the switch and the DF-clear jumbo never got through. `PFCSW_FAULT_TAP_MTU=1`
//! in the test's environment keeps that limit (the switch inherits it): this test then
//! fails. tests/router_contract.rs sets it to show a refused punt never wedges the port.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::path::PathBuf;
use std::time::Duration;

/// The value of `Ip: <field>` in `/proc/net/snmp` of host `i`.
fn ip_snmp(hosts: &Hosts, i: u32, field: &str) -> u64 {
    let snmp = text(&hosts.exec(i, "cat /proc/net/snmp"));
    let mut ip = snmp.lines().filter(|l| l.starts_with("Ip:"));
    let (names, values) = (ip.next().unwrap_or(""), ip.next().unwrap_or(""));
    let at = names.split_whitespace().position(|n| n == field).unwrap_or_else(|| panic!("no Ip: {field} in {snmp}"));
    values.split_whitespace().nth(at).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("Ip: {field} in {snmp}"))
}

/// Two routed hosts: host 1 behind a 9000-MTU port, host 2 behind a 1500-MTU one.
fn jumbo_switch(d: &TestDir, p: &str) -> (Hosts, PathBuf) {
    let hosts = Hosts::up_routed(p, 2);
    for (ns, iface) in [(format!("{p}sw"), format!("{p}v1a")), (format!("{p}h1"), format!("{p}v1b"))] {
        let o = sh(&format!("ip -n {ns} link set {iface} mtu 9000"));
        assert!(o.status.success(), "mtu: {}", text(&o));
    }
    // af_packet carries frames of at most framesz - 32 B (framesz dividing blocksz, a page
    // multiple), which must fit an mbuf (9022 B for MTU 9000): 8160 B, enough for the
    // 8042-byte frames of `ping -s 8000`.
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(2048)
        .port(
            Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a,framesz=8192,blocksz=8192"))
                .speed("10G")
                .mtu(9000),
        )
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G").mtu(1500))
        .toml(&format!(
            "[control_plane]\nnetns = \"{p}sw\"\n[interface]\nEthernet0 = [\"198.18.1.1/24\", \"fd00:1::1/64\"]\nEthernet4 = [\"198.18.2.1/24\", \"fd00:2::1/64\"]\n"
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    (hosts, cfg)
}

/// Small pings both ways through the switch: the neighbours are resolved and it routes.
fn warm_up(hosts: &Hosts, sw: RunningSwitch) -> RunningSwitch {
    for to in ["198.18.2.2", "fd00:2::2", "198.18.1.1", "fd00:1::1"] {
        let out = text(&hosts.exec(1, &format!("ping -c 3 -i 0.2 -W 2 {to}")));
        if !out.contains("bytes from") {
            let log = sw.stop();
            panic!("h1 -> {to}: {out}\n{log}");
        }
    }
    sw
}

#[test]
fn jumbo_pings_reach_the_kernel_and_jumbos_toward_a_small_mtu_are_fragmented_or_answered() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("jumbo");
    let p = format!("jb{}", std::process::id() % 100_000);
    let (hosts, cfg) = jumbo_switch(&d, &p);
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    let sw = warm_up(&hosts, sw);
    // (1) and (3): jumbo echo requests to the switch, answered by its kernel.
    let v4_us = text(&hosts.exec(1, "ping -c 3 -i 0.3 -W 3 -s 8000 198.18.1.1"));
    let v6_us = text(&hosts.exec(1, "ping -6 -c 3 -i 0.3 -W 3 -s 8000 fd00:1::1"));
    // (2) DF set / IPv6 toward the 1500-MTU port: the dataplane's ICMP errors.
    let v4_df = text(&hosts.exec(1, "ping -c 2 -i 0.3 -W 2 -M do -s 8000 198.18.2.2"));
    let v6_big = text(&hosts.exec(1, "ping -6 -c 2 -i 0.3 -W 2 -M do -s 8000 fd00:2::2"));
    // (2) DF clear: punted `mtu_exceeded`, fragmented by the switch's kernel, reassembled by
    // host 2 (whose 1500-byte link could carry it no other way). Host 2's reply comes back
    // in fragments, which af_packet's fanout joins again, larger than Ethernet4's MTU: it
    // is dropped there (docs/routing.md, "IPv4 fragments on net_af_packet ports").
    let (reasm0, echos0) = (ip_snmp(&hosts, 2, "ReasmOKs"), ip_snmp(&hosts, 2, "InDelivers"));
    let _ = hosts.exec(1, "ping -c 3 -i 0.3 -W 1 -M dont -s 8000 198.18.2.2");
    let (reasm1, echos1) = (ip_snmp(&hosts, 2, "ReasmOKs"), ip_snmp(&hosts, 2, "InDelivers"));
    let log = sw.stop();
    drop(hosts);
    eprintln!(
        "{v4_us}\n{v6_us}\n{v4_df}\n{v6_big}\nhost 2: ReasmOKs {reasm0} -> {reasm1}, InDelivers {echos0} -> {echos1}"
    );
    assert!(v4_us.contains("8008 bytes from 198.18.1.1"), "no reply to a jumbo ping to the switch: {v4_us}\n{log}");
    assert!(v6_us.contains("8008 bytes from fd00:1::1"), "no reply to a jumbo ping6 to the switch: {v6_us}\n{log}");
    assert!(v4_df.contains("From 198.18.1.1") && v4_df.contains("mtu = 1500"), "no fragmentation needed: {v4_df}");
    assert!(v6_big.contains("From fd00:1::1") && v6_big.contains("mtu=1500"), "no packet too big: {v6_big}");
    assert!(reasm1 > reasm0, "host 2 reassembled nothing: the DF-clear jumbo was not fragmented\n{log}");
    let j = read_json(&json);
    assert_conserved(&j);
    let e0 = port(&j, "Ethernet0");
    assert!(e0["punted"]["mtu_exceeded"].as_u64().unwrap_or(0) >= 1, "punted: {}", e0["punted"]);
    assert!(e0["punted"]["to_us"].as_u64().unwrap_or(0) >= 6, "punted: {}", e0["punted"]);
    assert!(e0["drops"]["too_big"].as_u64().unwrap_or(0) >= 2, "drops: {}", e0["drops"]);
    let rep = port(&j, "cpu/Ethernet0");
    assert_eq!(rep["drops"]["punt_undelivered"].as_u64().unwrap_or(0), 0, "refused punts: {}", rep["drops"]);
    assert!(!log.contains("PUNT UNDELIVERED"), "{log}");
    assert!(log.contains("port cpu/Ethernet0: MTU 9000 (past net_tap's 1500"), "{log}");
}
