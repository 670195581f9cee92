//! A routed pfcswitch between kernel hosts in different subnets (docs/routing.md): three
//! hosts on af_packet veths (`scripts/hosts.sh` routed mode), the switch in its own network
//! namespace with a router interface per port, the kernel as its control plane.
//!
//! * ping both ways (IPv4, IPv6), the hop limit seen decremented by one;
//! * `ping -t 1` gets ICMP time exceeded from the switch's address, an unrouted
//!   destination ICMP unreachable (both answered by the kernel from punted packets);
//! * `ip route add` in the switch's namespace takes effect in the dataplane within a bound
//!   (measured from the routed counter of a 500 pps ping stream), `ip route del` withdraws
//!   it (the stream is punted `no_route` again);
//! * a two-path multipath route spreads 64 UDP flows over both ports, each flow on one only;
//! * `show ip route` lists the ECMP members, `show arp` the neighbours.
//!
//! Routed lossless traffic (PFC, ECN, punt flood) is in tests/routed_lossless.rs.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::time::{Duration, Instant};

use pfcswitch::dpdk::telemetry::{socket_path, Client};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn routes_between_subnets_with_icmp_route_changes_and_ecmp() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("routed");
    let p = format!("r{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    let cfg = three_host_routed_switch(&d, &p, "");
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    let sw_ns = format!("{p}sw");
    let ip_sw = |cmd: &str| {
        let o = sh(&format!("ip -n {sw_ns} {cmd}"));
        assert!(o.status.success(), "ip {cmd}: {}", text(&o));
    };

    // 1. Both ways, both families; the replies crossed the switch once: TTL 64 - 1.
    let ping = hosts.exec(1, "ping -c 3 -i 0.2 -W 2 198.18.2.2");
    let out = text(&ping);
    assert!(out.contains(" 0% packet loss") && out.contains("ttl=63"), "h1 -> h2: {out}");
    let out = text(&hosts.exec(2, "ping -c 3 -i 0.2 -W 2 198.18.1.2"));
    assert!(out.contains(" 0% packet loss") && out.contains("ttl=63"), "h2 -> h1: {out}");
    let out = text(&hosts.exec(1, "ping -6 -c 3 -i 0.2 -W 2 fd00:2::2"));
    assert!(out.contains(" 0% packet loss") && out.contains("ttl=63"), "h1 -> h2 IPv6: {out}");
    // Host 3's neighbour entry too (the ECMP part must not start on an unresolved member).
    let out = text(&hosts.exec(1, "ping -c 2 -i 0.2 -W 2 198.18.3.2"));
    assert!(out.contains("ttl=63"), "h1 -> h3: {out}");

    // 2. ICMP from the kernel: time exceeded, unreachable, from the switch's address.
    let out = text(&hosts.exec(1, "ping -c 1 -t 1 -W 2 198.18.2.2"));
    assert!(out.contains("From 198.18.1.1") && out.contains("Time to live exceeded"), "ping -t 1: {out}");
    let out = text(&hosts.exec(1, "ping -c 1 -W 2 203.0.113.9"));
    assert!(out.contains("From 198.18.1.1") && out.contains("Unreachable"), "unrouted: {out}");

    // 3. ip route add / del, timed at the dataplane: a 500 pps ping stream to an address
    //    behind host 2 is punted (no_route) until the route is in the switch's table, routed
    //    after, punted again once it is deleted.
    assert!(hosts.exec(2, "ip addr add 10.50.0.1/32 dev lo").status.success());
    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let mut stream = hosts.spawn(1, "ping -i 0.002 -c 4000 -W 1 10.50.0.1 >/dev/null 2>&1");
    let c0 = counters(&mut tel, "Ethernet0");
    let none = until(Duration::from_secs(3), || {
        n(&counters(&mut tel, "Ethernet0"), "punted_no_route") > n(&c0, "punted_no_route") + 5
    });
    assert!(none.is_some(), "the stream was not punted as no_route before the route exists");
    // Timed from before `ip` starts: its own run, the kernel, the control thread's sync
    // and the stream's next packet (2 ms apart) are all in the figure.
    let base = n(&counters(&mut tel, "Ethernet0"), "routed_packets");
    let t_add = Instant::now();
    ip_sw("route add 10.50.0.0/16 via 198.18.2.2");
    until(Duration::from_secs(5), || n(&counters(&mut tel, "Ethernet0"), "routed_packets") > base)
        .expect("ip route add: not routed within 5 s");
    let add = t_add.elapsed();
    let routed_after = n(&counters(&mut tel, "Ethernet0"), "routed_packets");
    let punted = n(&counters(&mut tel, "Ethernet0"), "punted_no_route");
    let t_del = Instant::now();
    ip_sw("route del 10.50.0.0/16");
    until(Duration::from_secs(5), || n(&counters(&mut tel, "Ethernet0"), "punted_no_route") > punted)
        .expect("ip route del: not withdrawn within 5 s");
    let del = t_del.elapsed();
    let _ = stream.kill();
    let _ = stream.wait();
    eprintln!(
        "ip route add -> routed in the dataplane: {:.2} ms; ip route del -> punted again: {:.2} ms (including ip itself; 500 pps stream: +2 ms)",
        add.as_secs_f64() * 1e3,
        del.as_secs_f64() * 1e3
    );
    assert!(routed_after > base, "nothing routed after ip route add");

    // 4. ECMP: 64 flows over a two-path route, each flow on one path.
    for h in [2, 3] {
        assert!(hosts.exec(h, "ip addr add 10.60.0.1/32 dev lo").status.success());
    }
    ip_sw("route add 10.60.0.0/16 nexthop via 198.18.2.2 dev Ethernet4 nexthop via 198.18.3.2 dev Ethernet8");
    let installed = wait_route_members(&mut tel, "10.60.0.0/16", 2, Duration::from_secs(5));
    assert!(installed, "the multipath route is not in the dataplane with both members resolved");
    let miss0 = n(&counters(&mut tel, "Ethernet0"), "punted_neighbour_miss");
    let script = format!("{ROOT}/scripts/host_traffic.py");
    let rx: Vec<_> = [2, 3].iter().map(|&h| hosts.spawn(h, &format!("python3 {script} udp-sports 5000 3"))).collect();
    for h in [2, 3] {
        hosts.wait_udp_bound(h, 5000);
    }
    let sent = hosts.exec(1, &format!("python3 {script} udp-flows 10.60.0.1 5000 64 5"));
    assert!(sent.status.success(), "udp-flows: {}", text(&sent));
    let got: Vec<Value> = rx
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("udp-sports: {e}: {}", text(&o)))
        })
        .collect();
    let flows = |v: &Value| -> std::collections::BTreeMap<u16, u64> {
        v["sports"].as_object().unwrap().iter().map(|(k, c)| (k.parse().unwrap(), c.as_u64().unwrap())).collect()
    };
    let (a, b) = (flows(&got[0]), flows(&got[1]));
    eprintln!("ECMP: {} flows on Ethernet4, {} on Ethernet8", a.len(), b.len());
    assert!(a.keys().all(|k| !b.contains_key(k)), "a flow on both paths: {a:?} {b:?}");
    assert_eq!(a.len() + b.len(), 64, "flows seen: {a:?} {b:?}");
    assert!(!a.is_empty() && !b.is_empty(), "all flows on one path: {a:?} {b:?}");
    assert!(a.values().chain(b.values()).all(|&c| c == 5), "a flow lost datagrams: {a:?} {b:?}");
    assert_eq!(n(&counters(&mut tel, "Ethernet0"), "punted_neighbour_miss"), miss0, "flows were punted");

    // 5. show: the ECMP members, the neighbours.
    let prefix = d.prefix();
    let show = |what: &[&str]| {
        let mut args = vec!["show", "--prefix", prefix.as_str()];
        args.extend_from_slice(what);
        let o = run_switch(&args);
        assert!(o.status.success(), "show {what:?}: {}", show(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let routes = show(&["ip", "route"]);
    assert!(routes.contains("K>* 10.60.0.0/16"), "{routes}");
    assert!(routes.contains("via 198.18.2.2, Ethernet4") && routes.contains("via 198.18.3.2, Ethernet8"), "{routes}");
    assert!(routes.contains("C>* 198.18.1.0/24") && routes.contains("is directly connected, Ethernet0"), "{routes}");
    let arp = show(&["arp"]);
    assert!(arp.contains("198.18.3.2") && arp.contains("Ethernet8"), "{arp}");
    let v6 = show(&["ipv6", "route"]);
    assert!(v6.contains("C>* fd00:2::/64"), "{v6}");
    eprintln!("{routes}{arp}");

    let log = sw.stop();
    drop(hosts);
    let j = read_json(&json);
    assert_conserved(&j);
    let e0 = port(&j, "Ethernet0");
    assert!(e0["routed_packets"].as_u64().unwrap() >= 64 * 5, "{e0}");
    for why in ["arp", "ttl_expired", "no_route"] {
        assert!(e0["punted"][why].as_u64().unwrap() >= 1, "punted {why}: {}", e0["punted"]);
    }
    assert_eq!(j["routing"]["synced"], true, "{}", j["routing"]);
    assert!(log.contains("routing: kernel tables loaded"), "{log}");
}
