//! SONiC's T0 shape on real EAL (docs/switching.md, "VLAN interfaces"): two kernel hosts in
//! Vlan1000 (untagged members Ethernet0 and Ethernet4), a third on a routed port
//! (Ethernet8) in another subnet, the switch in its own namespace with the kernel as its
//! control plane and a `Vlan1000` representor carrying the VLAN interface's address.
//!
//! * the VLAN hosts ping each other (bridged: TTL untouched);
//! * they ping the VLAN interface's address (punted up `Vlan1000`, answered by the kernel);
//! * they ping the routed host across the switch and back (TTL decremented once each way);
//! * `show mac` lists both hosts in Vlan1000.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::time::Duration;

#[test]
fn vlan_interface_routes_between_a_vlan_and_a_routed_port() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("vlanif");
    let p = format!("q{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    // Host 2 joins host 1's subnet (the VLAN's): 198.18.1.3/24 via the VLAN interface.
    for cmd in [
        format!("ip addr flush dev {p}v2b"),
        format!("ip addr add 198.18.1.3/24 dev {p}v2b"),
        "ip route replace default via 198.18.1.1".to_string(),
    ] {
        let o = hosts.exec(2, &cmd);
        assert!(o.status.success(), "{cmd}: {}", text(&o));
    }
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a")).speed("10G"))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G"))
        .port(Port::new("Ethernet8", &format!("net_af_packet2,iface={p}v3a")).speed("10G"))
        .toml(&format!(
            r#"[control_plane]
netns = "{p}sw"
[interface]
Ethernet8 = ["198.18.3.1/24"]
[vlan.Vlan1000]
[vlan_member]
"Vlan1000|Ethernet0" = {{ tagging_mode = "untagged" }}
"Vlan1000|Ethernet4" = {{ tagging_mode = "untagged" }}
[vlan_interface]
Vlan1000 = ["198.18.1.1/24"]
"#
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));

    // 1. Bridged in the VLAN: TTL untouched.
    let out = text(&hosts.exec(1, "ping -c 3 -i 0.2 -W 2 198.18.1.3"));
    assert!(out.contains(" 0% packet loss") && out.contains("ttl=64"), "h1 -> h2 (bridged): {out}");
    // 2. The VLAN interface's address: answered by the kernel on Vlan1000.
    for h in [1, 2] {
        let out = text(&hosts.exec(h, "ping -c 2 -i 0.2 -W 2 198.18.1.1"));
        assert!(out.contains(" 0% packet loss"), "h{h} -> Vlan1000: {out}");
    }
    // 3. Routed out of and into the VLAN: the reply crossed the switch once.
    for h in [1, 2] {
        let out = text(&hosts.exec(h, "ping -c 3 -i 0.2 -W 2 198.18.3.2"));
        assert!(out.contains(" 0% packet loss") && out.contains("ttl=63"), "h{h} -> h3 (routed): {out}");
    }
    let out = text(&hosts.exec(3, "ping -c 3 -i 0.2 -W 2 198.18.1.3"));
    assert!(out.contains(" 0% packet loss") && out.contains("ttl=63"), "h3 -> h2 (routed into the VLAN): {out}");

    // 4. show mac: both hosts in Vlan1000, on their ports.
    let mac_of = |h: u32| {
        let o = hosts.exec(h, &format!("cat /sys/class/net/{p}v{h}b/address"));
        text(&o).trim().to_ascii_lowercase()
    };
    let prefix = d.prefix();
    let o = run_switch(&["show", "--prefix", prefix.as_str(), "mac"]);
    assert!(o.status.success(), "show mac: {}", show(&o));
    let table = String::from_utf8_lossy(&o.stdout).to_ascii_lowercase();
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    for (h, port) in [(1, "ethernet0"), (2, "ethernet4")] {
        let m = mac_of(h);
        assert!(
            table.lines().any(|l| l.contains("1000") && l.contains(&m) && l.contains(port)),
            "host {h} ({m}) not in Vlan1000 on {port}: {table}"
        );
    }

    let log = sw.stop();
    drop(hosts);
    let j = read_json(&json);
    assert_conserved(&j);
    let e0 = port(&j, "Ethernet0");
    // h1 -> h3: the first echo may go through the kernel (neighbour_miss) while it resolves h3.
    assert!(e0["routed_packets"].as_u64().unwrap() >= 2, "{e0}");
    assert!(e0["punted"]["arp"].as_u64().unwrap() >= 1, "{}", e0["punted"]);
    assert!(port(&j, "Ethernet8")["routed_packets"].as_u64().unwrap() >= 3);
    assert!(log.contains("router interface Vlan1000: representor Vlan1000 (kernel netdev Vlan1000)"), "{log}");
}
