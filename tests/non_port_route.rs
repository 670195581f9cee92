//! Routes that leave through an interface that is not a switch port (docs/routing.md,
//! "Routes through interfaces that are not ports"): in the switch's namespace a veth
//! (`npdum0`, its peer beside it) stands in for the management port, with a connected subnet, a route through
//! it and the default route. Packets the dataplane routes by them are dropped and counted
//! `route_non_port` on the ingress port; none is punted, so the kernel never forwards them
//! off the fabric (before: punted `no_route`, and the kernel sent them out of the veth).
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

const ROUTER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x4e, 0x01];

/// `ipv4_frame` from `src` to `dst`, its header checksum made again.
fn frame(src: [u8; 4], dst: [u8; 4], seq: u32) -> Vec<u8> {
    let mut f = ipv4_frame(ROUTER_MAC, mac(9), 0, 0, seq, 128);
    f[26..30].copy_from_slice(&src);
    f[30..34].copy_from_slice(&dst);
    f[24..26].copy_from_slice(&[0, 0]);
    let mut sum: u32 = f[14..34].chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f
}

/// The management stand-in's transmitted packets, as the kernel counts them.
fn stand_in_tx(ns: &str) -> u64 {
    let o = sh(&format!("ip netns exec {ns} cat /sys/class/net/npdum0/statistics/tx_packets"));
    text(&o).trim().parse().unwrap_or_else(|_| panic!("tx_packets: {}", text(&o)))
}

#[test]
fn routes_through_non_ports_are_dropped_not_punted() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("non-port-route");
    let ns = Netns::add(&format!("pfcswnp{}", std::process::id() % 100_000));
    let o = sh(&format!(
        "ip -n {0} link add npdum0 type veth peer name npdum1 && \
         ip netns exec {0} sysctl -qw net.ipv6.conf.npdum0.disable_ipv6=1 net.ipv6.conf.npdum1.disable_ipv6=1 && \
         ip -n {0} link set npdum1 up && \
         ip -n {0} link set npdum0 up && ip -n {0} link set lo up && \
         ip -n {0} addr add 10.77.0.1/24 dev npdum0 && \
         ip -n {0} route add 10.78.0.0/16 dev npdum0 && \
         ip -n {0} route add default via 10.77.0.254 dev npdum0 && \
         ip -n {0} neigh add 10.77.0.254 lladdr 02:00:00:00:77:fe dev npdum0 && \
         ip -n {0} neigh add 10.77.0.5 lladdr 02:00:00:00:77:05 dev npdum0",
        ns.0
    ));
    assert!(o.status.success(), "{}", show(&o));
    let peer = [10, 9, 0, 1];
    let mut frames = Vec::new();
    for i in 0..30 {
        frames.push(frame(peer, [10, 77, 0, 5], i)); // the stand-in's connected subnet
        frames.push(frame(peer, [10, 78, 1, 1], i)); // a route through it
        frames.push(frame(peer, [198, 51, 100, 7], i)); // the default route, through it
    }
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let dir = d.join("").display().to_string();
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(
            Port::new("Ethernet0", &format!("net_pcap0,rx_pcap={dir}in0.pcap,tx_pcap={dir}out0.pcap"))
                .set("mac", "\"02:00:00:00:4e:01\""),
        )
        .port(Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={dir}in1.pcap,tx_pcap={dir}out1.pcap")))
        .toml(&format!("[control_plane]\nnetns = \"{}\"\n[interface]\nEthernet0 = [\"10.9.0.0/31\"]", ns.0))
        .one_worker()
        .write(&d.join("t.toml"));
    let tx_before = stand_in_tx(&ns.0);
    let j = run_for(&d, &cfg, "4");
    let e0 = port(&j, "Ethernet0");
    let punted: u64 = e0["punted"].as_object().unwrap().values().filter_map(|v| v.as_u64()).sum();
    assert_eq!(e0["drops"]["route_non_port"].as_u64(), Some(90), "drops: {}\npunted: {}", e0["drops"], e0["punted"]);
    assert_eq!(punted, 0, "punted: {}", e0["punted"]);
    assert_eq!(stand_in_tx(&ns.0), tx_before, "the kernel forwarded packets out of the management stand-in");
    assert_conserved(&j);
}
