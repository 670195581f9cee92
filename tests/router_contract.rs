//! A router's contract (docs/routing.md), tried from outside as a network would: kernel
//! hosts on af_packet veths send a routed pfcswitch what a router must never relay
//! (`scripts/router_probe.py`), and a capture at the other hosts shows what crossed.
//!
//! * routed ports never bridge: broadcast, multicast, a non-IP frame to the router MAC,
//!   unicast to the far host's MAC (TTL 1 too) never reach another router interface;
//! * RFC 1812 / RFC 4291 on the routed path: a wrong IPv4 header checksum, martian sources
//!   (IPv4 and IPv6), a VLAN tag other than VID 0 are dropped and counted by reason; IPv4
//!   options go to the kernel, which forwards them; a priority tag (VID 0) is routed;
//! * two switches joined by three parallel routed links: one broadcast from a host never
//!   circulates (the inter-switch TX counters stay flat);
//! * an ARP flood on one port leaves another port's BGP session (FRR on both ends), its
//!   neighbour and the traffic routed over it alone (skipped without FRR).
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::time::Duration;

use pfcswitch::dpdk::telemetry::{socket_path, Client};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn iface_mac(ns: &str, iface: &str) -> String {
    String::from_utf8_lossy(&sh(&format!("ip netns exec {ns} cat /sys/class/net/{iface}/address")).stdout)
        .trim()
        .to_string()
}

/// How many frames of case `name` a capture file holds (the marker is in the payload,
/// which pcap and pcapng both store verbatim).
fn seen(capture: &[u8], name: &str) -> usize {
    let needle = format!("PFCSW-RC:{name}\0").into_bytes();
    capture.windows(needle.len()).filter(|w| *w == needle.as_slice()).count()
}

#[test]
fn routed_ports_never_bridge_and_rfc1812_drops_are_counted() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("rcontract");
    let p = format!("rc{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    let cfg = three_host_routed_switch(&d, &p, "");
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    // Neighbours resolved both ways (the good cases must be routed, not punted).
    for (h, to) in [(1, "198.18.2.2"), (1, "198.18.3.2")] {
        let out = text(&hosts.exec(h, &format!("ping -c 3 -i 0.2 -W 2 {to}")));
        assert!(out.contains("ttl=63"), "h{h} -> {to}: {out}");
    }
    let out = text(&hosts.exec(1, "ping -6 -c 3 -i 0.2 -W 2 fd00:2::2"));
    assert!(out.contains("ttl=63"), "h1 -> h2 IPv6: {out}");

    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let before = counters(&mut tel, "Ethernet0");
    let (cap2, cap3) = (d.join("h2.pcapng"), d.join("h3.pcapng"));
    let dump2 = hosts.capture(2, &format!("{p}v2b"), &cap2);
    let dump3 = hosts.capture(3, &format!("{p}v3b"), &cap3);
    let router_mac = iface_mac(&format!("{p}sw"), &format!("{p}v1a"));
    let h2_mac = iface_mac(&format!("{p}h2"), &format!("{p}v2b"));
    const COUNT: u64 = 3;
    let o = hosts.exec(
        1,
        &format!(
            "python3 {ROOT}/scripts/router_probe.py send {p}v1b {router_mac} {h2_mac} 198.18.1.2 198.18.2.2 fd00:1::2 fd00:2::2 {COUNT}"
        ),
    );
    assert!(o.status.success(), "router_probe.py: {}", text(&o));
    // Wait for the good cases to arrive (the kernel-forwarded one is the slowest).
    let crossed = until(Duration::from_secs(10), || {
        let c = std::fs::read(&cap2).unwrap_or_default();
        ["good", "good6", "priority_tagged", "record_route"].iter().all(|n| seen(&c, n) >= COUNT as usize)
    });
    std::thread::sleep(Duration::from_millis(500));
    stop_capture(dump2);
    stop_capture(dump3);
    let (c2, c3) = (std::fs::read(&cap2).unwrap(), std::fs::read(&cap3).unwrap());
    let after = counters(&mut tel, "Ethernet0");
    let log = sw.stop();
    drop(hosts);

    let never = [
        "bcast_udp",
        "bcast_88b5",
        "mcast_239",
        "foreign_ttl1",
        "foreign",
        "nonip_router",
        "bad_checksum",
        "martian_127.0.0.1",
        "martian_0.0.0.0",
        "martian_224.1.1.1",
        "martian_240.0.0.1",
        "martian_255.255.255.255",
        "martian6_::",
        "martian6_::1",
        "martian6_ff02::1",
        "martian6_fe80::2",
        "tagged_100",
    ];
    let leaked: Vec<String> = never
        .iter()
        .flat_map(|n| [("h2", &c2), ("h3", &c3)].map(|(h, c)| (h, n, seen(c, n))))
        .filter(|(_, _, k)| *k > 0)
        .map(|(h, n, k)| format!("{n} x{k} at {h}"))
        .collect();
    assert!(leaked.is_empty(), "crossed the router: {leaked:?}\n{log}");
    assert!(
        crossed.is_some(),
        "routed cases missing at h2: good {} good6 {} priority_tagged {} record_route {}",
        seen(&c2, "good"),
        seen(&c2, "good6"),
        seen(&c2, "priority_tagged"),
        seen(&c2, "record_route")
    );
    let delta = |k: &str| n(&after, k) - n(&before, k);
    for (k, at_least) in [
        ("drop_not_router_mac", 2 * COUNT),
        ("drop_not_routed", 3 * COUNT),
        ("drop_route_bad_checksum", COUNT),
        ("drop_route_martian_source", 9 * COUNT),
        ("drop_vlan_not_member", COUNT),
        ("punted_ip_options", COUNT),
        ("punted_to_us", COUNT),
    ] {
        assert!(delta(k) >= at_least, "{k}: {} (expected >= {at_least})", delta(k));
    }
    let j = read_json(&json);
    assert_conserved(&j);
}

/// Two switches, three parallel routed /31 links between them, a host on the first: one
/// broadcast from the host must not circulate. Before routed ports stopped bridging, it
/// grew to hundreds of thousands of copies within seconds.
#[test]
fn a_broadcast_never_loops_between_routed_links() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("rloop");
    let p = format!("rl{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 1);
    let (ns_a, ns_b) = (format!("{p}sw"), format!("{p}sb"));
    let _nsb = Netns::add(&ns_b);
    // Links A:Ethernet{4,8,12} <-> B:Ethernet{4,8,12} (veths {p}l<k>a in A, {p}l<k>b in B).
    for k in 1..=3 {
        let o = sh(&format!(
            "ip link add {p}l{k}a netns {ns_a} type veth peer name {p}l{k}b netns {ns_b} && \
             ip -n {ns_a} link set {p}l{k}a promisc on up && ip -n {ns_b} link set {p}l{k}b promisc on up"
        ));
        assert!(o.status.success(), "veth {k}: {}", text(&o));
    }
    let sw_a = SwitchConfig::new(&format!("{}a", d.prefix()), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a")).speed("10G"))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}l1a")).speed("10G"))
        .port(Port::new("Ethernet8", &format!("net_af_packet2,iface={p}l2a")).speed("10G"))
        .port(Port::new("Ethernet12", &format!("net_af_packet3,iface={p}l3a")).speed("10G"))
        .toml(&format!(
            "[control_plane]\nnetns = \"{ns_a}\"\n[interface]\nEthernet0 = [\"198.18.1.1/24\"]\n\
             Ethernet4 = [\"10.0.0.0/31\"]\nEthernet8 = [\"10.0.0.2/31\"]\nEthernet12 = [\"10.0.0.4/31\"]\n"
        ))
        .one_worker()
        .write(&d.join("a.toml"));
    let sw_b = SwitchConfig::new(&format!("{}b", d.prefix()), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet4", &format!("net_af_packet0,iface={p}l1b")).speed("10G"))
        .port(Port::new("Ethernet8", &format!("net_af_packet1,iface={p}l2b")).speed("10G"))
        .port(Port::new("Ethernet12", &format!("net_af_packet2,iface={p}l3b")).speed("10G"))
        .toml(&format!(
            "[control_plane]\nnetns = \"{ns_b}\"\n[interface]\nEthernet4 = [\"10.0.0.1/31\"]\n\
             Ethernet8 = [\"10.0.0.3/31\"]\nEthernet12 = [\"10.0.0.5/31\"]\n"
        ))
        .one_worker()
        .write(&d.join("b.toml"));
    let (json_a, json_b) = (d.join("a.json"), d.join("b.json"));
    let mut a = RunningSwitch::spawn(&sw_a, &json_a, &[]);
    a.wait_forwarding(Duration::from_secs(60));
    let mut b = RunningSwitch::spawn(&sw_b, &json_b, &[]);
    b.wait_forwarding(Duration::from_secs(60));
    let mut tel = Client::connect(&socket_path(&format!("{}a", d.prefix()))).expect("telemetry socket");
    let tx = |tel: &mut Client| -> u64 {
        ["Ethernet4", "Ethernet8", "Ethernet12"].iter().map(|port| n(&counters(tel, port), "tx_packets")).sum()
    };
    // Quiet first: what the kernels themselves send (ND/IGMP at link up) settles.
    std::thread::sleep(Duration::from_secs(2));
    let t0 = tx(&mut tel);
    let script = format!("{ROOT}/scripts/router_probe.py");
    for ethertype in ["88b5", "0800"] {
        let o = hosts.exec(1, &format!("python3 {script} broadcast {p}v1b {ethertype}"));
        assert!(o.status.success(), "broadcast: {}", text(&o));
    }
    std::thread::sleep(Duration::from_millis(100));
    let t1 = tx(&mut tel);
    std::thread::sleep(Duration::from_secs(1));
    let t2 = tx(&mut tel);
    let e0 = counters(&mut tel, "Ethernet0");
    let log_b = b.stop();
    let log_a = a.stop();
    drop(hosts);
    eprintln!("inter-switch tx: before {t0}, +100 ms {t1}, +1.1 s {t2}");
    // Kernel chatter (an ND or IGMP report) may add a few frames; a loop adds thousands.
    assert!(t2 - t0 <= 8, "broadcast circulated: inter-switch TX {t0} -> {t1} -> {t2}\n{log_a}\n{log_b}");
    assert!(n(&e0, "drop_not_routed") >= 1, "the broadcast was not dropped as not_routed: {e0}");
    assert_conserved(&read_json(&json_a));
    assert_conserved(&read_json(&json_b));
}

/// A punt larger than the kernel representor takes (net_tap's driver in DPDK 22.11 refuses
/// frames over 1500 + 22 B, a limit the switch raises; `PFCSW_FAULT_TAP_MTU` keeps it
/// here) is dropped and counted `punt_undelivered`, and
/// the port's path to the kernel keeps working: before, the refused frame was retried at the
/// head of the representor's queue forever and every later ARP, ND, ping or BGP packet of
/// that port waited behind it.
#[test]
fn a_punt_the_representor_refuses_never_wedges_the_port() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("rwedge");
    let p = format!("rw{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 2);
    for (ns, iface) in [(format!("{p}sw"), format!("{p}v1a")), (format!("{p}h1"), format!("{p}v1b"))] {
        let o = sh(&format!("ip -n {ns} link set {iface} mtu 2000"));
        assert!(o.status.success(), "mtu: {}", text(&o));
    }
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a")).speed("10G").mtu(2000))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G"))
        .toml(&format!(
            "[control_plane]\nnetns = \"{p}sw\"\n[interface]\nEthernet0 = [\"198.18.1.1/24\"]\nEthernet4 = [\"198.18.2.1/24\"]\n"
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn_env(&cfg, &json, &[], &[("PFCSW_FAULT_TAP_MTU", "1")]);
    sw.wait_forwarding(Duration::from_secs(60));
    let out = text(&hosts.exec(1, "ping -c 2 -i 0.2 -W 2 198.18.1.1"));
    assert!(out.contains("bytes from 198.18.1.1"), "ping the switch before: {out}");
    // A 1600-byte ping to the switch: refused by the representor (at most 1 reply, if the
    // driver ever takes it), then ordinary pings and ARP must still reach the kernel.
    let _ = hosts.exec(1, "ping -c 2 -i 0.2 -W 1 -s 1600 198.18.1.1");
    let _ = hosts.exec(1, &format!("ip neigh flush dev {p}v1b"));
    let out = text(&hosts.exec(1, "ping -c 3 -i 0.2 -W 2 198.18.1.1"));
    let ok = out.contains("bytes from 198.18.1.1");
    let routed = text(&hosts.exec(1, "ping -c 2 -i 0.2 -W 2 198.18.2.2"));
    let log = sw.stop();
    drop(hosts);
    assert!(ok, "the port's path to the kernel is wedged after a jumbo punt: {out}\n{log}");
    assert!(routed.contains("ttl=63"), "routing after the jumbo punt: {routed}");
    let j = read_json(&json);
    assert_conserved(&j);
    let rep = port(&j, "cpu/Ethernet0");
    let undelivered = rep["drops"]["punt_undelivered"].as_u64().unwrap_or(0);
    assert!(undelivered >= 1, "no punt_undelivered on cpu/Ethernet0: {}", rep["drops"]);
    assert!(log.contains("PUNT UNDELIVERED on cpu/Ethernet0"), "the stop report does not say so: {log}");
}

/// A port whose link dies: the router moves its ECMP flows to the live member at once (the
/// dataplane skips dead members before the kernel's withdrawals arrive), the port's kernel
/// representor goes down with it (the kernel drops its connected route and neighbours) and
/// comes back with the link. Before, the representor stayed up and traffic kept going to
/// the dead member until BGP or BFD noticed.
#[test]
fn a_dead_link_leaves_ecmp_at_once_and_takes_its_representor_down() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("rlink");
    let p = format!("rk{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    let cfg = three_host_routed_switch(&d, &p, "");
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    let sw_ns = format!("{p}sw");
    for to in ["198.18.2.2", "198.18.3.2"] {
        let out = text(&hosts.exec(1, &format!("ping -c 3 -i 0.2 -W 2 {to}")));
        assert!(out.contains("ttl=63"), "h1 -> {to}: {out}");
    }
    for h in [2, 3] {
        assert!(hosts.exec(h, "ip addr add 10.60.0.1/32 dev lo").status.success());
    }
    let o = sh(&format!(
        "ip -n {sw_ns} route add 10.60.0.0/16 nexthop via 198.18.2.2 dev Ethernet4 nexthop via 198.18.3.2 dev Ethernet8"
    ));
    assert!(o.status.success(), "ip route add: {}", text(&o));
    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let installed = wait_route_members(&mut tel, "10.60.0.0/16", 2, Duration::from_secs(5));
    assert!(installed, "the multipath route is not in the dataplane with both members resolved");
    let script = format!("{ROOT}/scripts/host_traffic.py");
    let rx: Vec<_> = [2, 3].iter().map(|&h| hosts.spawn(h, &format!("python3 {script} udp-sports 5000 7"))).collect();
    for h in [2, 3] {
        hosts.wait_udp_bound(h, 5000);
    }
    // 16 flows, a datagram each per ~1 ms round for ~4 s; host 2's link is pulled after 1.5 s.
    let tx = hosts.spawn(1, &format!("python3 {script} udp-flows 10.60.0.1 5000 16 4000"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(hosts.exec(2, &format!("ip link set {p}v2b down")).status.success());
    let rep_down = until(Duration::from_secs(2), || {
        text(&sh(&format!("ip -n {sw_ns} -o link show Ethernet4"))).contains("state DOWN")
    });
    let route_gone = until(Duration::from_secs(2), || {
        !text(&sh(&format!("ip -n {sw_ns} route show 198.18.2.0/24"))).contains("198.18.2.0/24")
    });
    let sent = tx.wait_with_output().unwrap();
    assert!(sent.status.success(), "udp-flows: {}", text(&sent));
    let got: Vec<Value> = rx
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("udp-sports: {e}: {}", text(&o)))
        })
        .collect();
    // The link back: the representor follows, and h2 is reachable again.
    // (Host 2's own default route went with its link.)
    assert!(hosts
        .exec(2, &format!("ip link set {p}v2b up && ip route replace default via 198.18.2.1"))
        .status
        .success());
    let rep_up = until(Duration::from_secs(3), || {
        !text(&sh(&format!("ip -n {sw_ns} -o link show Ethernet4"))).contains("state DOWN")
    });
    let back = until(Duration::from_secs(10), || text(&hosts.exec(1, "ping -c 1 -W 1 198.18.2.2")).contains("ttl=63"));
    let log = sw.stop();
    drop(hosts);
    assert!(rep_down.is_some(), "representor Ethernet4 not down after its link went down\n{log}");
    assert!(route_gone.is_some(), "the kernel kept 198.18.2.0/24 on a dead link\n{log}");
    assert!(rep_up.is_some(), "representor Ethernet4 not up again with its link\n{log}");
    assert!(back.is_some(), "h2 unreachable after its link came back\n{log}");
    // Flows that were on h2 moved to h3: the gap between a flow's last datagram at h2 and
    // its first at h3 (one CLOCK_MONOTONIC for both hosts) is the failover time.
    let times = |v: &Value| -> std::collections::BTreeMap<String, (f64, f64)> {
        v["times"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, t)| (k.clone(), (t[0].as_f64().unwrap(), t[1].as_f64().unwrap())))
            .collect()
    };
    let (h2, h3) = (times(&got[0]), times(&got[1]));
    let gaps: Vec<f64> = h2.iter().filter_map(|(k, (_, last2))| h3.get(k).map(|(first3, _)| first3 - last2)).collect();
    assert!(!gaps.is_empty(), "no flow moved from h2 to h3: h2 {h2:?} h3 {h3:?}");
    let mut sorted = gaps.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median_ms = sorted[sorted.len() / 2] * 1e3;
    eprintln!(
        "failover: {} flows moved, gap median {median_ms:.1} ms, max {:.1} ms",
        gaps.len(),
        sorted[sorted.len() - 1] * 1e3
    );
    // The link is read every ~16 ms (kernel operstate); a loaded machine adds scheduling.
    assert!(median_ms <= 100.0, "flows moved after {median_ms:.1} ms (median): {gaps:?}");
    assert_conserved(&read_json(&json));
}

/// Control-plane policing per port and trap group: an ARP flood and a flood to the switch's
/// own address on one port leave another port's ARP and pings to the switch untouched (each
/// port has its own buckets). Before, ARP/ND shared one 600 pps bucket and everything to the
/// switch one 6000 pps bucket, switch-wide: a flood on one port starved every other port.
#[test]
fn one_ports_flood_never_starves_another_ports_control_plane() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("rcopp");
    let p = format!("rp{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    let cfg = three_host_routed_switch(&d, &p, "");
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    for h in [1, 2] {
        let out = text(&hosts.exec(h, &format!("ping -c 2 -i 0.2 -W 2 198.18.{h}.1")));
        assert!(out.contains(&format!("bytes from 198.18.{h}.1")), "h{h} -> switch: {out}");
    }
    let probe = format!("{ROOT}/scripts/router_probe.py");
    let traffic = format!("{ROOT}/scripts/host_traffic.py");
    let router_mac = iface_mac(&format!("{p}sw"), &format!("{p}v1a"));
    // Host 1 floods ARP and the switch's own address for 8 s, the latter in DSCP 3 (the
    // lossless class): what the punt limiter drops of it is lossless loss, counted apart.
    let floods = [
        hosts.spawn(1, &format!("python3 {probe} arp-flood {p}v1b 198.18.1.2 8")),
        hosts.spawn(1, &format!("python3 {traffic} flood-ip {p}v1b {router_mac} 198.18.1.2 198.18.1.1 8 3")),
    ];
    std::thread::sleep(Duration::from_secs(1));
    // Meanwhile host 2 resolves the switch's address and pings it.
    let ask = hosts.exec(2, &format!("python3 {probe} arp-ask {p}v2b 198.18.2.2 198.18.2.1 20 0.1"));
    let ping = text(&hosts.exec(2, "ping -c 20 -i 0.1 -W 1 198.18.2.1"));
    for f in floods {
        let o = f.wait_with_output().unwrap();
        assert!(o.status.success(), "flood: {}", text(&o));
    }
    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let (e0, e4) = (counters(&mut tel, "Ethernet0"), counters(&mut tel, "Ethernet4"));
    let log = sw.stop();
    drop(hosts);
    let v: Value = serde_json::from_slice(&ask.stdout).unwrap_or_else(|e| panic!("arp-ask: {e}: {}", text(&ask)));
    let answered = v["answered"].as_u64().unwrap();
    let received =
        ping.split(" received").next().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse::<u64>().ok());
    eprintln!(
        "h2 during h1's floods: {answered}/20 ARP answered, {received:?}/20 pings; Ethernet0 copp dropped arp_nd {} ip2me {}",
        n(&e0, "copp_arp_nd_dropped"),
        n(&e0, "copp_ip2me_dropped")
    );
    assert!(n(&e0, "copp_arp_nd_dropped") > 0 && n(&e0, "copp_ip2me_dropped") > 0, "the floods were not policed: {e0}");
    assert_eq!(n(&e4, "copp_arp_nd_dropped") + n(&e4, "copp_ip2me_dropped"), 0, "Ethernet4 was policed: {e4}");
    assert!(answered >= 18, "h2's ARP starved by h1's flood: {answered}/20\n{log}");
    assert!(received.is_some_and(|r| r >= 18), "h2's pings starved by h1's flood: {ping}");
    let st = read_json(&json);
    // A lossless-class packet the punt limiter drops is a lossless
    // discard (beside `lossless_drops`, which stays the buffer's: 0), in its PG (3).
    let s0 = port(&st, "Ethernet0");
    let (discards, policed) =
        (s0["lossless_discards"].as_u64().unwrap(), s0["drops"]["punt_rate_limited"].as_u64().unwrap());
    assert!(discards > 0, "the DSCP 3 flood's policed punts are not lossless discards: {s0}");
    assert!(discards <= policed, "{discards} lossless discards of {policed} policed punts");
    assert_eq!(s0["pg_lossless_discards"][3].as_u64(), Some(discards), "PG 3 holds them: {s0}");
    assert_eq!(s0["lossless_drops"].as_u64(), Some(0), "no buffer loss: {s0}");
    assert_conserved(&st);
}

/// A jumbo toward a smaller egress MTU: IPv4 with DF gets ICMP fragmentation needed with the
/// next-hop MTU, IPv6 gets packet too big, both from the switch's address on the ingress
/// interface (built by the dataplane: the kernel cannot receive a jumbo through its
/// representor). Before, the punted jumbo was refused by the representor and no answer
/// ever came (the host's path MTU discovery black-holed).
#[test]
fn a_jumbo_toward_a_smaller_mtu_gets_frag_needed_and_packet_too_big() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("rtoobig");
    let p = format!("rb{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 2);
    // (af_packet: frames of at most framesz - 32 B; its ring needs framesz to divide
    // blocksz, and the mbufs, sized from the largest port MTU, must hold a frame.)
    for (ns, iface) in [(format!("{p}sw"), format!("{p}v1a")), (format!("{p}h1"), format!("{p}v1b"))] {
        let o = sh(&format!("ip -n {ns} link set {iface} mtu 4000"));
        assert!(o.status.success(), "mtu: {}", text(&o));
    }
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a,framesz=4096,blocksz=4096")).speed("10G").mtu(4096))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G").mtu(1500))
        .toml(&format!(
            "[control_plane]\nnetns = \"{p}sw\"\n[interface]\nEthernet0 = [\"198.18.1.1/24\", \"fd00:1::1/64\"]\nEthernet4 = [\"198.18.2.1/24\", \"fd00:2::1/64\"]\n"
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    for to in ["198.18.2.2", "fd00:2::2"] {
        let out = text(&hosts.exec(1, &format!("ping -c 3 -i 0.2 -W 2 {to}")));
        if !out.contains("ttl=63") {
            let log = sw.stop();
            panic!("h1 -> {to}: {out}\n{log}");
        }
    }
    let v4 = text(&hosts.exec(1, "ping -c 2 -i 0.3 -W 2 -M do -s 2000 198.18.2.2"));
    let v6 = text(&hosts.exec(1, "ping -6 -c 2 -i 0.3 -W 2 -M do -s 2000 fd00:2::2"));
    // Small packets still cross.
    let small = text(&hosts.exec(1, "ping -c 2 -i 0.2 -W 2 198.18.2.2"));
    let log = sw.stop();
    drop(hosts);
    eprintln!("{v4}\n{v6}");
    assert!(v4.contains("From 198.18.1.1") && v4.contains("mtu = 1500"), "no fragmentation needed: {v4}\n{log}");
    assert!(v6.contains("From fd00:1::1") && v6.contains("mtu=1500"), "no packet too big: {v6}\n{log}");
    assert!(small.contains("ttl=63"), "h1 -> h2 after: {small}");
    let j = read_json(&json);
    assert_conserved(&j);
    let e0 = port(&j, "Ethernet0");
    assert!(e0["drops"]["too_big"].as_u64().unwrap() >= 2, "{}", e0["drops"]);
    assert!(e0["generated"].as_u64().unwrap() >= 2, "generated: {}", e0["generated"]);
}

/// The state of the kernel's neighbour `addr` on `dev` in namespace `ns` ("REACHABLE",
/// "STALE", "FAILED"...; "none" when absent).
fn neigh_state(ns: &str, addr: &str, dev: &str) -> String {
    let v: Value = serde_json::from_slice(&sh(&format!("ip -n {ns} -j neigh show {addr} dev {dev}")).stdout)
        .unwrap_or(Value::Null);
    v[0]["state"].as_array().and_then(|s| s.first()).and_then(|s| s.as_str()).unwrap_or("none").to_string()
}

/// FRR's view of one BGP neighbour: (state, sessions established, sessions dropped).
fn bgp_peer(frr: &Frr, peer: &str) -> (String, u64, u64) {
    let out = frr.vtysh(&format!("show bgp neighbors {peer} json"));
    let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    let p = &v[peer];
    (
        p["bgpState"].as_str().unwrap_or("?").to_string(),
        p["connectionsEstablished"].as_u64().unwrap_or(0),
        p["connectionsDropped"].as_u64().unwrap_or(0),
    )
}

/// An ARP flood on one port (far above its CoPP arp rate, half of it asking for the
/// switch's own address) while another port's BGP session (FRR in the switch's namespace,
/// eBGP to FRR on the host behind it, keepalive 1 s, hold 3 s: a starved session would
/// drop within the flood) carries the route a third port's traffic takes. For the whole
/// flood: the session stays Established (never dropped), the neighbour behind it never
/// fails, the routed traffic to the BGP-learned prefix flows, and only the flooded port is
/// policed. Before CoPP was per port, one port's ARP flood left a neighbour on another
/// port FAILED and the traffic routed to it lost.
#[test]
fn an_arp_flood_on_one_port_leaves_another_ports_bgp_session_and_neighbour_up() {
    if !is_root() || !Frr::installed() {
        eprintln!("SKIP: needs root (namespaces, veth) and FRR (scripts/setup.sh)");
        return;
    }
    const FLOOD_S: u64 = 15;
    let d = TestDir::new("rbgp");
    let p = format!("rg{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    let sw_ns = format!("{p}sw");
    let cfg = three_host_routed_switch(&d, &p, "");
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    // Host 2 owns 10.70.0.0/24 and announces it over eBGP to the switch's FRR, which
    // installs it in the switch namespace's kernel; the switch mirrors it into its FIB.
    assert!(hosts.exec(2, "ip addr add 10.70.0.1/32 dev lo").status.success());
    let timers = "timers bgp 1 3\n";
    let frr_host = Frr::start(
        &format!("{p}h2"),
        &d.join("frr-h2"),
        &format!(
            "router bgp 65002\n bgp router-id 198.18.2.2\n no bgp ebgp-requires-policy\n no bgp network import-check\n \
             {timers} neighbor 198.18.2.1 remote-as 65001\n neighbor 198.18.2.1 timers connect 1\n !\n \
             address-family ipv4 unicast\n  network 10.70.0.0/24\n exit-address-family\n!\n"
        ),
    );
    let frr_sw = Frr::start(
        &sw_ns,
        &d.join("frr-sw"),
        &format!(
            "router bgp 65001\n bgp router-id 198.18.2.1\n no bgp ebgp-requires-policy\n \
             {timers} neighbor 198.18.2.2 remote-as 65002\n neighbor 198.18.2.2 timers connect 1\n!\n"
        ),
    );
    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let learned = wait_route_members(&mut tel, "10.70.0.0/24", 1, Duration::from_secs(90));
    if !learned {
        let log = sw.stop();
        panic!(
            "10.70.0.0/24 never reached the dataplane: {:?}\n{}\n{}\n{log}",
            bgp_peer(&frr_sw, "198.18.2.2"),
            frr_sw.log("bgpd"),
            frr_host.log("bgpd")
        );
    }
    let out = text(&hosts.exec(3, "ping -c 3 -i 0.2 -W 2 10.70.0.1"));
    assert!(out.contains("bytes from 10.70.0.1"), "h3 -> 10.70.0.1 before the flood: {out}");
    let (state0, est0, dropped0) = bgp_peer(&frr_sw, "198.18.2.2");
    assert_eq!(state0, "Established", "BGP before the flood");
    let before: Vec<Value> = ["Ethernet0", "Ethernet4", "Ethernet8"].iter().map(|e| counters(&mut tel, e)).collect();

    // Host 1 floods ARP for FLOOD_S seconds; host 3 pings the BGP-learned prefix meanwhile.
    let probe = format!("{ROOT}/scripts/router_probe.py");
    let flood = hosts.spawn(1, &format!("python3 {probe} arp-flood {p}v1b 198.18.1.2 {FLOOD_S} 198.18.1.1"));
    let pings = FLOOD_S * 10 - 10;
    let ping = hosts.spawn(3, &format!("sleep 0.5; ping -c {pings} -i 0.1 -W 1 10.70.0.1"));
    // The neighbour every 100 ms; FRR's session state as often as vtysh answers (it takes
    // seconds on a loaded machine), beside it.
    let t0 = std::time::Instant::now();
    let during = || t0.elapsed() < Duration::from_secs(FLOOD_S);
    let (states, bgp) = std::thread::scope(|s| {
        let bgp = s.spawn(|| {
            let mut v = Vec::new();
            while during() {
                v.push(bgp_peer(&frr_sw, "198.18.2.2").0);
                std::thread::sleep(Duration::from_millis(100));
            }
            v
        });
        let mut states = Vec::new();
        while during() {
            states.push(neigh_state(&sw_ns, "198.18.2.2", "Ethernet4"));
            std::thread::sleep(Duration::from_millis(100));
        }
        (states, bgp.join().unwrap())
    });
    let flood = flood.wait_with_output().unwrap();
    let ping = text(&ping.wait_with_output().unwrap());
    let (state1, est1, dropped1) = bgp_peer(&frr_sw, "198.18.2.2");
    let end_state = neigh_state(&sw_ns, "198.18.2.2", "Ethernet4");
    let after: Vec<Value> = ["Ethernet0", "Ethernet4", "Ethernet8"].iter().map(|e| counters(&mut tel, e)).collect();
    let bgpd_log = frr_sw.log("bgpd");
    drop(frr_sw);
    drop(frr_host);
    let log = sw.stop();
    drop(hosts);

    assert!(flood.status.success(), "arp-flood: {}", text(&flood));
    let sent: Value = serde_json::from_slice(&flood.stdout).unwrap();
    let sent = sent["sent"].as_u64().unwrap();
    let received =
        ping.split(" received").next().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse::<u64>().ok());
    let reachable = states.iter().filter(|s| *s == "REACHABLE").count();
    let delta = |i: usize, k: &str| n(&after[i], k) - n(&before[i], k);
    eprintln!(
        "{sent} ARP requests in {FLOOD_S} s ({} pps) on Ethernet0: copp arp_nd passed {} dropped {}; \
         BGP {state0} -> {state1}, sessions {est0}/{dropped0} -> {est1}/{dropped1}; neighbour 198.18.2.2 \
         REACHABLE in {reachable} of {} samples (end: {end_state}), BGP Established in {} of {} samples; \
         h3 -> 10.70.0.1: {received:?}/{pings} replies",
        sent / FLOOD_S,
        delta(0, "copp_arp_nd_passed"),
        delta(0, "copp_arp_nd_dropped"),
        states.len(),
        bgp.iter().filter(|s| *s == "Established").count(),
        bgp.len()
    );
    // The flood was far above the arp_nd rate and policed on Ethernet0 only.
    assert!(delta(0, "copp_arp_nd_dropped") > 0, "the flood was not policed on Ethernet0: {}", after[0]);
    for (i, port) in [(1, "Ethernet4"), (2, "Ethernet8")] {
        let policed: Vec<String> = after[i]
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.starts_with("copp_") && k.ends_with("_dropped") && delta(i, k) > 0)
            .map(|k| format!("{k} {}", delta(i, k)))
            .collect();
        assert!(policed.is_empty(), "{port} was policed during Ethernet0's flood: {policed:?}");
    }
    // The session never left Established ("?": vtysh gave no JSON that time, which a
    // loaded machine can make it do; the session counters below decide).
    let not_up: Vec<&String> = bgp.iter().filter(|s| *s != "Established" && *s != "?").collect();
    assert!(not_up.is_empty() && state1 == "Established", "BGP left Established: {bgp:?}\n{bgpd_log}\n{log}");
    assert_eq!((est1, dropped1), (est0, dropped0), "the BGP session was dropped and re-established\n{bgpd_log}");
    // The neighbour behind Ethernet4 was never lost.
    let bad: Vec<&String> = states.iter().filter(|s| matches!(s.as_str(), "FAILED" | "INCOMPLETE" | "none")).collect();
    assert!(bad.is_empty(), "neighbour 198.18.2.2 on Ethernet4 during the flood: {states:?}");
    assert!(reachable > 0 || end_state == "REACHABLE", "neighbour 198.18.2.2 never REACHABLE: {states:?}");
    // Routed traffic to the BGP-learned prefix kept flowing (a loaded machine may lose a few).
    assert!(received.is_some_and(|r| r * 10 >= pings * 9), "h3 -> 10.70.0.1 during the flood: {ping}");
    assert_conserved(&read_json(&json));
}
